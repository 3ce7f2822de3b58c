"""Where every constant of the NPU presets comes from, as data.

``npujit/target.py`` writes each preset constant with a comment naming its source; this
table says the same per field so code can use it: the simulator's sensitivity report
(``sim/sensitivity.py``) varies exactly the constants that are not official, and a test
checks that every field of every preset has an entry.  A source is a section of
docs/npu-facts.md with its tag -- ``[O]`` official, ``[D]`` derived, ``[U]`` uncertain
(a public figure we could not pin down) -- or ``"assumed"`` (we chose it).

Dict-valued fields get one entry per key (``"capacity.UB"``, ``"paths.GM_to_UB.latency"``).

Example::

    >>> from npujit.target import ASCEND_910B_LIKE
    >>> source_of(ASCEND_910B_LIKE, "hbm_bytes_per_s")
    '§A5/§A10 [U]'
    >>> "hbm_latency_cycles" in uncertain_fields(ASCEND_910B_LIKE)
    True
"""
from __future__ import annotations

import dataclasses

from npujit.target import PRESETS, NPUSpec

_VECTOR_OP_COST = {"vector_op_cost.elementwise": "§A5 [O], §A10 [U]",
                   **{f"vector_op_cost.{k}": "assumed"
                      for k in ("cast", "div", "transcendental", "reduce", "gather", "sort")}}
_COMMON = {
    "name": "npujit", "pipes": "§A2 [O]", "scopes": "§A2 [O]", "cube_fractal": "§A4 [O]",
    "cube_startup_cycles": "assumed", "vector_bytes_per_cycle": "§A5 [O]",
    "vector_startup_cycles": "assumed", "sync_cycles": "assumed", "event_ids": "§A6 [O]",
    **{f"alignment.{s}": "§A6 [O]" for s in ("UB", "L1", "L0A", "L0B", "L0C")},
    "alignment.GM": "§A6 [O] (512 B HBM burst)",
    **{f"capacity.{s}": "§A3 [O]" for s in ("UB", "L1", "L0A", "L0B", "L0C")},
    **_VECTOR_OP_COST,
}


def _paths(rates: dict, latency: str) -> dict:
    out = {}
    for path, rate in rates.items():
        out[f"paths.{path}.pipe"] = "§A1 [O]"
        out[f"paths.{path}.bytes_per_cycle"] = rate
        out[f"paths.{path}.latency"] = latency
    return out


SOURCES: dict[str, dict[str, str]] = {
    "ascend-910b-like": {
        **_COMMON,
        "arch": "§A2 [O]", "aic_cores": "§A4 [O]", "aiv_cores": "§A4 [O]",
        "clock_hz": "§A4 [O]",
        **{f"cube_rate.{d}": "§A5 [O]" for d in ("f16", "bf16", "i8", "f32")},
        **_paths({"GM_to_L1": "§A4 [U]", "GM_to_L0A": "§A4 [U]", "GM_to_L0B": "§A4 [U]",
                  "GM_to_UB": "§A4 [U]", "UB_to_GM": "§A4 [U]", "L1_to_L0A": "§A4/§A10 [U]",
                  "L1_to_L0B": "§A4/§A10 [U]", "L0C_to_GM": "§A4 [U]",
                  "L0C_to_L1": "§A10 [U]"}, "assumed"),
        "hbm_bytes_per_s": "§A5/§A10 [U]", "hbm_latency_cycles": "assumed",
        "l2_bytes": "§A4 [O]", "l2_bytes_per_s": "assumed", "l2_latency_cycles": "assumed",
        "handoff_slots": "§A2 [O] (at least 2 advised; the least chosen)",
        "overlap_fixpipe": "§A1 [O] (pipes are queues ordered by flags), the FIX_M wait",
    },
    "ascend-910-like": {
        **_COMMON,
        "arch": "§A2 [O]", "aic_cores": "§A4 [O]", "aiv_cores": "§A2 [O]",
        "clock_hz": "§A4 [O]",
        "cube_rate.f16": "§A5 [O]", "cube_rate.i8": "§A5 [O]", "cube_rate.f32": "assumed",
        **_paths({"GM_to_L1": "§A4 [U]", "GM_to_L0A": "§A4 [U]", "GM_to_L0B": "§A4 [U]",
                  "GM_to_UB": "§A4 [U]", "UB_to_GM": "§A4 [U]", "L1_to_L0A": "§A4 [U]",
                  "L1_to_L0B": "§A4 [U]", "L1_to_UB": "§A4 [U]", "UB_to_L1": "§A4 [U]",
                  "L0C_to_UB": "§A4 [U]"}, "assumed"),
        "hbm_bytes_per_s": "§A5 [U]", "hbm_latency_cycles": "assumed",
        "l2_bytes": "§A4 [O]", "l2_bytes_per_s": "assumed", "l2_latency_cycles": "assumed",
        "handoff_slots": "npujit",      # a coupled part hands nothing between cores
        "overlap_fixpipe": "npujit",    # no FixPipe on a coupled part
    },
}
SOURCES["ascend-910-like"].update({f"alignment.{s}": "§A6 [O] (2201 rules), assumed on 1001"
                                   for s in ("GM", "UB", "L1", "L0A", "L0B", "L0C")})


def constants(spec: NPUSpec) -> dict[str, object]:
    """Every constant of ``spec`` by its dotted name (``capacity.UB``, ``paths.GM_to_UB.latency``).

    Example::

        >>> from npujit.target import TINY
        >>> constants(TINY)["paths.GM_to_UB.bytes_per_cycle"]
        64
    """
    out = {}
    for f in dataclasses.fields(spec):
        v = getattr(spec, f.name)
        if f.name == "paths":
            for path, p in v.items():
                for pf in dataclasses.fields(p):
                    out[f"paths.{path}.{pf.name}"] = getattr(p, pf.name)
        elif f.name in ("capacity", "alignment", "cube_rate", "vector_op_cost"):
            for k, x in v.items():
                out[f"{f.name}.{k}"] = x
        else:
            out[f.name] = v
    return out


def sources(spec: NPUSpec) -> dict[str, str]:
    """The source of every constant of ``spec``, by dotted name: its preset's entry while
    the value is the preset's, else ``"user"`` (a spec of one's own, or a preset with that
    constant replaced)."""
    preset, table = PRESETS.get(spec.name), SOURCES.get(spec.name, {})
    mine = constants(spec)
    theirs = constants(preset) if preset is not None else {}
    return {n: table[n] if n in table and theirs.get(n) == v else "user"
            for n, v in mine.items()}


def source_of(spec: NPUSpec, name: str) -> str:
    """The source of constant ``name`` of ``spec`` (see :func:`sources`)."""
    return sources(spec).get(name, "user")


def uncertain_fields(spec: NPUSpec) -> dict[str, str]:
    """The constants of ``spec`` that are assumed, uncertain (``[U]``) or the user's, by
    dotted name, with their sources."""
    return {n: src for n, src in sources(spec).items() if n != "name"
            and any(w in src for w in ("assumed", "[U]", "user"))}
