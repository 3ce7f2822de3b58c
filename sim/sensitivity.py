"""How much a simulated result depends on the constants nobody has measured.

Most of a preset is sourced (``npujit/provenance.py``), but the HBM and L2 bandwidths, the
latencies, the copy-port rates and the start-up costs are public-but-uncertain figures or
our own choices.  :func:`sensitivity` runs the same launch again with each such group of
constants divided and multiplied by ``factor`` and reports the cycles, so a conclusion
("double buffering wins 2x", "this kernel is HBM-bound") can be checked against the
constants it rests on.  The launch (the per-core instruction streams) does not change:
only the timing is recomputed, with the debug checks off.

Example::

    >>> from npujit.sim import simulate, ASCEND_910B_LIKE
    >>> from npujit.sim.patterns import vector_pipeline
    >>> table = sensitivity(vector_pipeline(8, 32768), ASCEND_910B_LIKE)
    >>> row = table.row("HBM bandwidth")
    >>> row.divided >= row.base >= row.multiplied     # less bandwidth, more cycles
    True
"""
from __future__ import annotations

from dataclasses import dataclass

from npujit.provenance import uncertain_fields
from npujit.target import NPUSpec

from .isa import CoreProgram, Launch
from .simulate import simulate


def _gm(path: str) -> bool:
    return path.startswith("GM_") or path.endswith("_GM")


# Group name -> predicate over a constant's dotted name (npujit/provenance.py constants()).
GROUPS = {
    "HBM bandwidth": lambda n: n == "hbm_bytes_per_s",
    "HBM latency": lambda n: n == "hbm_latency_cycles",
    "L2 bandwidth": lambda n: n == "l2_bytes_per_s",
    "L2 latency": lambda n: n == "l2_latency_cycles",
    "GM port rates": lambda n: n.startswith("paths.") and n.endswith(".bytes_per_cycle")
    and _gm(n.split(".")[1]),
    "on-chip port rates": lambda n: n.startswith("paths.") and n.endswith(".bytes_per_cycle")
    and not _gm(n.split(".")[1]),
    "copy issue latency": lambda n: n.startswith("paths.") and n.endswith(".latency"),
    "Cube start-up": lambda n: n == "cube_startup_cycles",
    "Vector start-up": lambda n: n == "vector_startup_cycles",
    "Vector op costs": lambda n: n.startswith("vector_op_cost."),
}


@dataclass(frozen=True)
class Row:
    """One group of constants: the cycles with them divided by / at / multiplied by ``factor``."""

    group: str
    constants: tuple
    sources: tuple
    divided: int
    base: int
    multiplied: int

    def spread(self) -> float:
        """The largest relative change of the cycles, e.g. 0.31 for +31 %."""
        return max(abs(self.divided - self.base), abs(self.multiplied - self.base)) / max(self.base, 1)


@dataclass(frozen=True)
class Sensitivity:
    """The rows of :func:`sensitivity`, most influential first; ``str()`` is a table."""

    spec: str
    factor: float
    base: int
    rows: tuple

    def row(self, group: str) -> Row:
        for r in self.rows:
            if r.group == group:
                return r
        raise KeyError(f"no group {group!r}; groups: {[r.group for r in self.rows]}")

    def __str__(self) -> str:
        f = self.factor
        head = (f"sensitivity of {self.base:,} cycles on {self.spec} to its uncertain "
                f"constants (each group / {f:g} and x {f:g})")
        lines = [head, f"  {'constants':<20} {'/' + format(f, 'g'):>12} {'x' + format(f, 'g'):>12}"
                       f"  {'change':>7}  source"]
        for r in self.rows:
            src = ", ".join(sorted(set(r.sources)))
            lines.append(f"  {r.group:<20} {r.divided:>12,} {r.multiplied:>12,}  {r.spread():>6.0%}  {src}")
        return "\n".join(lines)


def _scaled(spec: NPUSpec, names: list[str], k: float) -> NPUSpec:
    """``spec`` with the constants ``names`` multiplied by ``k`` (ints stay ints; a
    positive one stays >= 1)."""
    def scale(v):
        return max(min(v, 1), round(v * k)) if isinstance(v, int) else v * k

    top, paths, maps = {}, {}, {}
    for n in names:
        parts = n.split(".")
        if parts[0] == "paths":
            paths.setdefault(parts[1], {})[parts[2]] = scale(getattr(spec.paths[parts[1]], parts[2]))
        elif len(parts) == 2:
            maps.setdefault(parts[0], dict(getattr(spec, parts[0])))[parts[1]] = scale(
                getattr(spec, parts[0])[parts[1]])
        else:
            top[n] = scale(getattr(spec, n))
    out = spec.replace(**top, **maps) if (top or maps) else spec
    for path, changes in paths.items():
        out = out.with_path(path, **changes)
    return out


def sensitivity(launch, spec: NPUSpec, factor: float = 2.0,
                groups: list[str] | None = None) -> Sensitivity:
    """Cycles of ``launch`` on ``spec`` with each group of its uncertain constants (the
    ones ``npujit.provenance`` marks assumed or ``[U]``) divided and multiplied by
    ``factor``.  ``groups`` picks some of :data:`GROUPS`; a group with no uncertain
    constant on this spec is left out."""
    if not factor > 1:
        raise ValueError(f"factor must be > 1, got {factor!r}")
    if isinstance(launch, CoreProgram):
        launch = Launch([launch])
    unknown = sorted(set(groups or ()) - set(GROUPS))
    if unknown:
        raise ValueError(f"unknown sensitivity groups {unknown}; choose from {list(GROUPS)}")
    uncertain = uncertain_fields(spec)

    def cycles(s):
        return simulate(launch, s, trace=False).cycles

    base = cycles(spec)
    rows = []
    for g in groups or GROUPS:
        names = [n for n in uncertain if GROUPS[g](n)]
        if not names:
            continue
        rows.append(Row(g, tuple(names), tuple(uncertain[n] for n in names),
                        cycles(_scaled(spec, names, 1 / factor)), base,
                        cycles(_scaled(spec, names, factor))))
    rows.sort(key=lambda r: -r.spread())
    return Sensitivity(spec.name, factor, base, tuple(rows))
