"""``triton.testing`` on npujit: ``do_bench`` (CPU wall time of the kernel as it runs here,
not NPU time), ``do_bench_simulated`` (NPU time from the simulator) and ``assert_close``.

Example::

    import npujit.triton as triton
    ms = triton.testing.do_bench(lambda: add_kernel[grid](x, y, out, n, BLOCK=1024))
"""
from __future__ import annotations

import statistics
import time

from npujit.testing import assert_close

__all__ = ["do_bench", "do_bench_simulated", "assert_close"]


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
