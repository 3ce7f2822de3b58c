"""A launch's recorded programs placed at once (sim/stream_places.py) and the queue
compiler's short cut for programs placed from one shared stream (``placed_from``): the
oracles are numpy's exact row unique and the same launch compiled instruction by
instruction."""
import dataclasses

import numpy as np

from npujit.jit.simulate import lower
from npujit.kernels.matmul import matmul_kernel
from npujit.kernels.softmax import softmax_kernel
from npujit.sim import ASCEND_910B_LIKE, CoreProgram, Launch, simulate
from npujit.sim.l2 import ONCE
from npujit.sim.queues import Compiler
from npujit.sim.stream_places import unique_rows


def test_unique_rows_agrees_with_numpy():
    rng = np.random.default_rng(1)
    rows = rng.integers(-3, 3, (500, 3))
    first, inverse, counts = unique_rows(rows)
    want, want_inverse, want_counts = np.unique(rows, axis=0, return_inverse=True,
                                                return_counts=True)
    assert len(first) == len(want)
    assert (rows[first[inverse]] == rows).all()          # each row's number names it
    assert (first == np.array([np.flatnonzero((rows == r).all(1))[0]
                               for r in rows[first]])).all()   # the first occurrence
    assert sorted(counts.tolist()) == sorted(want_counts.tolist())
    assert len(set(zip(inverse.tolist(), want_inverse.ravel().tolist()))) == len(want)
    assert (counts[inverse] == want_counts[want_inverse.ravel()]).all()


def _recorded(kernel, grid, args, meta):
    k = kernel.with_options(spec=ASCEND_910B_LIKE, backend="numba")
    c = k.compile(*args, **meta)
    bound = k.signature.bind(args, meta)
    return lower(c.ir, k.signature.grid(grid, bound),
                 k.signature.runtime_args(c.sigs, c.runtime_index, bound),
                 spec=ASCEND_910B_LIKE, backend="numba", numerics=False)


def test_programs_placed_from_one_stream_compile_as_written_out():
    """Re-read A and B tiles (regions shared by several programs) and single-use output
    tiles: the launch the recorder makes (programs placed from a template) simulates
    exactly as the same instructions in programs without the hint."""
    m = 256
    a = np.ones((m, 128), np.float16)
    launch = _recorded(matmul_kernel, (m // 64, m // 64),
                       (a, a.T.copy(), np.empty((m, m), np.float32), m, m, 128, 128, 1, m,
                        1, m, 1),
                       {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "NUM_STAGES": 2})
    assert all(p.placed_from is not None for p in launch.programs)
    plain = {id(p): CoreProgram(p.core, list(p.instrs), p.name) for p in launch.programs}
    written = Launch([plain[id(p)] for p in launch.programs], groups=launch.groups)
    # a program copied with other instructions (here one more) is compiled as written
    first = launch.programs[0]
    longer = dataclasses.replace(first, instrs=first.instrs + [first.instrs[-1]])
    assert Compiler(ASCEND_910B_LIKE).compile(longer).instr_count == len(first.instrs) + 1
    for engine in ("python", "compiled"):
        a_, b_ = simulate(launch, ASCEND_910B_LIKE, engine=engine), \
            simulate(written, ASCEND_910B_LIKE, engine=engine)
        assert (a_.cycles, a_.programs) == (b_.cycles, b_.programs)
        assert (a_.hbm_read_bytes, a_.hbm_write_bytes, a_.l2_hit_bytes) == \
            (b_.hbm_read_bytes, b_.hbm_write_bytes, b_.l2_hit_bytes)


def test_rows_read_once_share_one_program():
    """Softmax rows are each read and written once: every program's regions are ONCE,
    so the whole grid is one CoreProgram."""
    x = np.random.default_rng(0).standard_normal((64, 256)).astype(np.float32)
    launch = _recorded(softmax_kernel, (64,), (x, np.empty_like(x), 256, 256, 256),
                       {"BLOCK": 256})
    assert len({id(p) for p in launch.programs}) == 1
    regions = {ins.gm_region for ins in launch.programs[0].instrs if ins.kind == "copy"}
    assert regions == {ONCE}
