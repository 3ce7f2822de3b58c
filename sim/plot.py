"""PNG plots of a :class:`~npujit.sim.report.SimReport`: a pipe timeline and a roofline.

matplotlib is imported only when a plot is asked for, so the simulator works without it.

Example::

    >>> import os, tempfile, pytest
    >>> _ = pytest.importorskip("matplotlib")
    >>> from npujit.sim import simulate, TINY
    >>> from npujit.sim.patterns import vector_pipeline
    >>> r = simulate(vector_pipeline(8, 4096), TINY)
    >>> path = os.path.join(tempfile.mkdtemp(), "timeline.png")
    >>> r.plot_timeline(path)
    >>> os.path.getsize(path) > 0
    True
"""
from __future__ import annotations

from .engine import pipe_spans
from .trace import LANES

# One colour per pipe, stable across plots.
PIPE_COLOR = {"SCALAR": "#7f7f7f", "VECTOR": "#1f77b4", "CUBE": "#d62728", "MTE1": "#9467bd",
              "MTE2": "#2ca02c", "MTE3": "#ff7f0e", "FIXP": "#8c564b"}


def _pyplot():
    try:
        import matplotlib
    except ImportError as e:
        raise ImportError("plotting needs matplotlib: pip install matplotlib") from e
    matplotlib.use("Agg")   # files only; never needs a display
    import matplotlib.pyplot as plt
    return plt


def plot_timeline(report, path, *, max_cores: int = 8, window: tuple | None = None) -> None:
    """One row per (core, pipe) with a bar per instruction, for the first ``max_cores``
    cores that ran something; ``window=(first, last)`` zooms to those cycles.

    Example::

        >>> import os, tempfile, pytest
        >>> _ = pytest.importorskip("matplotlib")
        >>> from npujit.sim import simulate, TINY
        >>> from npujit.sim.patterns import vector_pipeline
        >>> path = os.path.join(tempfile.mkdtemp(), "t.png")
        >>> plot_timeline(simulate(vector_pipeline(4, 4096), TINY), path, window=(0, 500))
        >>> os.path.exists(path)
        True
    """
    plt = _pyplot()
    tl = report.timeline
    used = []
    for run in tl.runs:
        if run.core not in used:
            used.append(run.core)
    used = used[:max_cores]
    rows = [(c, p) for c in used for p in LANES
            if any(ps.name == p for run in tl.runs if run.core == c for ps in run.pipes)]
    lo, hi = window if window else (0, tl.cycles)
    fig, ax = plt.subplots(figsize=(12, 0.35 * len(rows) + 1.5))
    for y, (core, pipe) in enumerate(rows):
        bars = []
        for run in tl.runs:
            if run.core != core:
                continue
            for ps in run.pipes:
                if ps.name != pipe:
                    continue
                bars.extend((s, e - s) for s, e in pipe_spans(ps) if e > s and e >= lo and s <= hi)
        ax.broken_barh(bars, (y - 0.4, 0.8), color=PIPE_COLOR[pipe], linewidth=0)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([f"{c} {p}" for c, p in rows], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlim(lo, hi)
    ax.set_xlabel(f"cycle ({report.spec.clock_hz / 1e9:.2f} GHz)")
    ax.set_title(f"{report.launch} on {report.spec.name}: {report.cycles:,} cycles")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_roofline(report, path) -> None:
    """Log-log roofline: HBM bandwidth slope, Cube and Vector peaks, and the launch's points
    (Cube FLOP/s and Vector element-ops/s against operations per HBM byte).

    Example::

        >>> import os, tempfile, pytest
        >>> _ = pytest.importorskip("matplotlib")
        >>> from npujit.sim import simulate, TINY
        >>> from npujit.sim.patterns import cube_pipeline
        >>> path = os.path.join(tempfile.mkdtemp(), "r.png")
        >>> plot_roofline(simulate(cube_pipeline(4, 64, 64, 64), TINY), path)
        >>> os.path.exists(path)
        True
    """
    plt = _pyplot()
    spec = report.spec
    bw = spec.hbm_bytes_per_s
    cube_peak = spec.peak_cube_flops
    vec_units = spec.aiv_cores if spec.arch == "separated" else spec.aic_cores
    vec_peak = vec_units * spec.vector_bytes_per_cycle / 2 * spec.clock_hz   # f16 elements/s
    fig, ax = plt.subplots(figsize=(7, 5))
    xs = [2.0 ** k for k in range(-4, 13)]
    for peak, name, color in ((cube_peak, "Cube f16 peak", "#d62728"),
                              (vec_peak, "Vector f16 peak", "#1f77b4")):
        ax.plot(xs, [min(peak, bw * x) for x in xs], color=color, label=name)
    t = report.time_s
    if report.hbm_bytes and t:
        if report.cube_flops:
            ax.plot(report.cube_flops / report.hbm_bytes, report.cube_flops / t, "o",
                    color="#d62728", label="this launch (Cube)")
        if report.vector_elems:
            ax.plot(report.vector_elems / report.hbm_bytes, report.vector_elems / t, "s",
                    color="#1f77b4", label="this launch (Vector)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("operations per HBM byte")
    ax.set_ylabel("operations per second")
    ax.set_title(f"{report.launch} on {spec.name}: {100 * report.roofline_fraction:.0f}% of "
                 f"its bound ({report.bound.kind})")
    ax.legend(fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
