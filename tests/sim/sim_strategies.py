"""Hypothesis strategies: random but well-formed launches (every wait follows its set in
issue order, which rules out deadlock; each flag is set at most once per program, which
keeps the streams valid on the engine's 1-bit flags: nothing here orders a wait before the
next set of its flag)."""
from hypothesis import strategies as st

from npujit.sim import (ASCEND_910_LIKE, ASCEND_910B_LIKE, TINY, CoreProgram, Launch, barrier,
                        copy, mmad, scalar, set_flag, vec, wait_flag)

SPECS = [TINY, TINY.replace(aic_cores=1, aiv_cores=1), TINY.replace(aiv_cores=6, sync_cycles=0),
         TINY.replace(hbm_bytes_per_s=40e9), ASCEND_910B_LIKE, ASCEND_910_LIKE]
VEC_OPS = ["add", "exp", "div", "sum", "cast", "gather", "sort"]


def usable_paths(spec, kind):
    phys = spec.core_kind_for(kind)
    pipes, scopes = spec.pipes[phys], spec.scopes[phys]
    out = []
    for name, p in sorted(spec.paths.items()):
        src, dst = name.split("_to_")
        if p.pipe in pipes and all(s == "GM" or s in scopes for s in (src, dst)):
            out.append((name, p.pipe))
    return out


@st.composite
def programs(draw, spec):
    kinds = ["AIC"] if spec.arch == "coupled" else ["AIC", "AIV"]
    kind = draw(st.sampled_from(kinds))
    if spec.arch == "coupled":
        kind = draw(st.sampled_from(["AIC", "AIV"]))
    pipes = spec.pipes[spec.core_kind_for(kind)]
    paths = usable_paths(spec, kind)
    out, outstanding, used = [], [], set()
    for _ in range(draw(st.integers(0, 30))):
        op = draw(st.integers(0, 6))
        if op == 0 and paths:
            path, pipe = draw(st.sampled_from(paths))
            out.append(copy(path, draw(st.integers(1, 65536)), pipe=pipe))
        elif op == 1 and "VECTOR" in pipes:
            out.append(vec(draw(st.sampled_from(VEC_OPS)), draw(st.integers(1, 20000)),
                           draw(st.sampled_from(["f16", "f32"]))))
        elif op == 2 and "CUBE" in pipes:
            out.append(mmad(*(draw(st.integers(1, 256)) for _ in range(3)),
                            draw(st.sampled_from(["f16", "i8", "f32"]))))
        elif op == 3:
            out.append(scalar(draw(st.integers(0, 200)), pipe=draw(st.sampled_from(pipes))))
        elif op == 4 and len(pipes) > 1:
            src, dst = draw(st.permutations(pipes))[:2]
            flag = (src, dst, draw(st.integers(0, spec.event_ids - 1)))
            if flag not in used:
                used.add(flag)
                out.append(set_flag(*flag))
                outstanding.append(flag)
        elif op == 5 and outstanding:
            out.append(wait_flag(*outstanding.pop(draw(st.integers(0, len(outstanding) - 1)))))
        elif op == 6:
            out.append(barrier(draw(st.sampled_from(("ALL",) + tuple(pipes)))))
    if draw(st.booleans()):
        out.extend(wait_flag(*f) for f in outstanding)
    return CoreProgram(kind, out)


@st.composite
def launches(draw):
    spec = draw(st.sampled_from(SPECS))
    progs = draw(st.lists(programs(spec), min_size=1, max_size=6))
    # Sometimes repeat one program object over the grid, as a scheduler would.
    if draw(st.booleans()):
        progs = progs + [progs[0]] * draw(st.integers(0, 4))
    return Launch(progs), spec
