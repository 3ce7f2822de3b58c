"""``triton.testing`` on npujit: ``do_bench`` (CPU wall time of the kernel as it runs here,
not NPU time), ``do_bench_simulated`` (NPU time from the simulator), ``assert_close``, and
the tutorials' sweep table, ``perf_report`` / ``Benchmark``.

Example::

    import npujit.triton as triton
    ms = triton.testing.do_bench(lambda: add_kernel[grid](x, y, out, n, BLOCK=1024))
"""
from __future__ import annotations

import dataclasses
import os
import statistics
import time

from npujit.testing import assert_close

__all__ = ["do_bench", "do_bench_simulated", "assert_close", "Benchmark", "perf_report"]


def do_bench(fn, warmup: int = 25, rep: int = 100, grad_to_none=None, quantiles=None,
             return_mode: str = "mean"):
    """Milliseconds per call of ``fn`` on the CPU, as Triton's ``do_bench`` measures GPU time:
    ``warmup`` and ``rep`` are milliseconds of warm-up and of measuring (at least one call
    each); ``quantiles`` (e.g. ``[0.5, 0.2, 0.8]``) returns those quantiles instead;
    ``return_mode`` is "mean", "median", "min", "max" or "all".  This is the CPU backend's
    time, which says nothing of the NPU's: use ``do_bench_simulated`` for that.

    Example::

        >>> do_bench(lambda: sum(range(100)), warmup=1, rep=2) > 0
        True
    """
    if return_mode not in ("mean", "median", "min", "max", "all"):
        raise ValueError(f"do_bench: return_mode must be mean, median, min, max or all, "
                         f"got {return_mode!r}")
    fn()  # compile outside the measurement
    end = time.perf_counter() + warmup / 1e3
    while time.perf_counter() < end:
        fn()
    times = []
    end = time.perf_counter() + rep / 1e3
    while not times or time.perf_counter() < end:
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    if quantiles is not None:
        ordered = sorted(times)
        picked = [ordered[min(len(ordered) - 1, int(q * len(ordered)))] for q in quantiles]
        return picked[0] if len(picked) == 1 else picked
    if return_mode == "all":
        return times
    return {"mean": statistics.fmean, "median": statistics.median, "min": min,
            "max": max}[return_mode](times)


def do_bench_simulated(kernel, *args, grid, **kwargs) -> float:
    """Milliseconds the simulated NPU takes for one launch ``kernel[grid](*args, **kwargs)``
    (``kernel.simulate``: deterministic; the outputs are computed too).

    Example::

        ms = do_bench_simulated(add_kernel, x, y, out, n, grid=(4,), BLOCK=1024)
    """
    report = kernel.simulate(*args, grid=grid, **kwargs)
    return report.time_s * 1e3


@dataclasses.dataclass
class Benchmark:
    """One sweep of ``perf_report``, with Triton's fields: for every ``x`` in ``x_vals``
    (given to each of ``x_names``) and every ``line_vals`` value (given as ``line_arg``),
    the function's number is one cell; ``line_names`` head the columns, ``args`` are
    passed as they are; ``styles``, ``xlabel``, ``ylabel``, ``x_log``, ``y_log`` and
    ``plot_name`` shape the plot (matplotlib, when installed)."""

    x_names: list
    x_vals: list
    line_arg: str
    line_vals: list
    line_names: list
    plot_name: str = "benchmark"
    args: dict = dataclasses.field(default_factory=dict)
    xlabel: str = ""
    ylabel: str = ""
    x_log: bool = False
    y_log: bool = False
    styles: list | None = None
    color: object = None


class Mark:
    """A function under ``@perf_report``: ``run(...)`` sweeps its benchmarks."""

    def __init__(self, fn, benchmarks):
        self.fn = fn
        self.benchmarks = benchmarks

    def _table(self, bench: Benchmark, **kwargs) -> tuple[list, list]:
        """``(columns, rows)``: one row per x value; a function returning ``(y, y_min,
        y_max)`` adds ``name-min`` / ``name-max`` columns, as Triton's table does."""
        columns, rows = list(bench.x_names), []
        for k, x in enumerate(bench.x_vals):
            xs = x if isinstance(x, (list, tuple)) else [x] * len(bench.x_names)
            row, extra = list(xs), {}
            for value, name in zip(bench.line_vals, bench.line_names):
                got = self.fn(**dict(zip(bench.x_names, xs)), **{bench.line_arg: value},
                              **bench.args, **kwargs)
                if isinstance(got, (list, tuple)):
                    row.append(got[0])
                    extra[f"{name}-min"], extra[f"{name}-max"] = got[1], got[2]
                else:
                    row.append(got)
            rows.append(row + list(extra.values()))
            if k == 0:
                columns += list(bench.line_names) + list(extra)
        return columns, rows

    def run(self, show_plots: bool = False, print_data: bool = False, save_path: str = "",
            return_df: bool = False, **kwargs):
        """Sweep every benchmark: print each table (``print_data``), write
        ``<plot_name>.csv`` (and ``.png`` with matplotlib) under ``save_path``, show the
        plots (``show_plots``); with ``return_df``, the tables (pandas DataFrames when
        pandas is installed, else ``(columns, rows)``)."""
        benches = self.benchmarks if isinstance(self.benchmarks, list) else [self.benchmarks]
        tables = []
        for bench in benches:
            columns, rows = self._table(bench, **kwargs)
            tables.append((columns, rows))
            if print_data:
                print(f"{bench.plot_name}:")
                print(_text_table(columns, rows))
            if save_path:
                os.makedirs(save_path, exist_ok=True)
                with open(os.path.join(save_path, f"{bench.plot_name}.csv"), "w") as f:
                    f.write(",".join(map(str, columns)) + "\n")
                    f.writelines(",".join(map(str, r)) + "\n" for r in rows)
            if show_plots or save_path:
                _plot(bench, columns, rows, show_plots, save_path)
        if not return_df:
            return None
        try:
            import pandas
            frames = [pandas.DataFrame(rows, columns=columns) for columns, rows in tables]
        except ImportError:
            frames = tables
        return frames[0] if len(frames) == 1 else frames


def perf_report(benchmarks):
    """Triton's decorator for a benchmark sweep: ``f.run(print_data=True)`` prints one
    table per ``Benchmark`` (numbers are what ``f`` returns: on npujit, CPU times from
    ``do_bench`` or NPU times from ``do_bench_simulated``).

    Example::

        @perf_report(Benchmark(x_names=["n"], x_vals=[1024, 4096], line_arg="impl",
                               line_vals=["npujit", "numpy"], line_names=["npujit", "numpy"],
                               plot_name="add", ylabel="ms"))
        def bench(n, impl): ...
        bench.run(print_data=True)
    """
    return lambda fn: Mark(fn, benchmarks)


def _text_table(columns, rows) -> str:
    cells = [[str(c) for c in columns]] + [[f"{v:.6g}" if isinstance(v, float) else str(v)
                                            for v in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]
    return "\n".join("  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in cells)


def _plot(bench: Benchmark, columns, rows, show: bool, save_path: str) -> None:
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        return                          # the table and the CSV stand without a plot
    fig, ax = plt.subplots()
    xs = [r[0] for r in rows]
    first = len(bench.x_names)
    for k, name in enumerate(bench.line_names):
        style = bench.styles[k] if bench.styles else None
        ax.plot(xs, [r[first + k] for r in rows], label=name,
                color=style[0] if style else None, ls=style[1] if style else None)
    ax.legend()
    ax.set_xlabel(bench.xlabel or bench.x_names[0])
    ax.set_ylabel(bench.ylabel)
    if bench.x_log:
        ax.set_xscale("log")
    if bench.y_log:
        ax.set_yscale("log")
    if save_path:
        fig.savefig(os.path.join(save_path, f"{bench.plot_name}.png"))
    if show:
        plt.show()
    plt.close(fig)
