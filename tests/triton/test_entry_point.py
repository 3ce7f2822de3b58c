"""``import npujit.triton as triton`` / ``npujit.triton.language as tl``: a Triton kernel file
runs after changing its two import lines (docs/coming-from-triton.md)."""
from __future__ import annotations

import numpy as np
import pytest

import npujit.language as nl
import npujit.triton as triton
import npujit.triton.language as tl


@triton.jit
def _scale(x, factor):
    return x * factor


@triton.jit(do_not_specialize=["n"])
def _axpy(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, _scale(x, alpha) + tl.math.exp(y * 0), mask=mask)


def test_jit_kernel_calls_a_jit_device_function_and_ignores_gpu_launch_options():
    n = 37
    x = np.linspace(-2, 2, n).astype(np.float32)
    y = np.linspace(0, 1, n).astype(np.float32)
    out = np.zeros_like(x)
    k = _axpy.with_options(backend="reference")
    k[(triton.cdiv(n, 16),)](x, y, out, n, 3.0, BLOCK=16, num_warps=4, num_ctas=1,
                              num_stages=3, maxnreg=128)
    np.testing.assert_allclose(out, 3.0 * x + 1.0, rtol=1e-6)
    assert triton.next_power_of_2(37) == 64 and tl.float32 is nl.float32


def test_device_function_outside_a_kernel_says_to_launch_with_a_grid():
    with pytest.raises(triton.TritonError, match="launched with a grid"):
        _scale(1.0, 2.0)


@triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
@triton.jit
def _copy_even(x_ptr, out_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN:                                   # a meta-parameter the heuristic computed
        tl.store(out_ptr + offs, tl.load(x_ptr + offs) + 1.0)
    else:
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 2.0, mask=offs < n)


def test_heuristics_compute_meta_parameters_from_the_arguments():
    k = triton.heuristics({})(_copy_even.kernel.with_options(backend="reference"))
    k = triton.heuristics(_copy_even.values)(k.kernel)
    for n, add in ((32, 1.0), (30, 2.0)):
        x = np.arange(n, dtype=np.float32)
        out = np.zeros(n, np.float32)
        k[(triton.cdiv(n, 16),)](x, out, n, BLOCK=16)
        np.testing.assert_array_equal(out, x + add)


@pytest.mark.parametrize("bad", [lambda: triton.Config({"B": 1}, pre_hook=print),
                                 lambda: triton.autotune([], key=[], do_bench=print),
                                 lambda: triton.heuristics({"B": 3})])
def test_tuning_names_refuse_what_they_cannot_do(bad):
    with pytest.raises((NotImplementedError, TypeError), match="pre_hook|do_bench|function"):
        bad()


def test_triton_autotune_picks_by_simulated_cycles(monkeypatch, tmp_path):
    monkeypatch.setenv("NPUJIT_AUTOTUNE_WORKERS", "0")       # in this process: no pool
    monkeypatch.setenv("NPUJIT_CACHE_DIR", str(tmp_path))
    pruned = []

    def early(configs, named_args):
        pruned.append(named_args["n"])
        return [c for c in configs if c.kwargs["BLOCK"] <= named_args["n"]]

    kernel = _axpy.with_options(backend="reference")
    tuned = triton.autotune([triton.Config({"BLOCK": 16}, num_warps=4),
                             triton.Config({"BLOCK": 64}, num_stages=2),
                             triton.Config({"BLOCK": 1024})], key=["n"],
                            prune_configs_by={"early_config_prune": early, "top_k": 2})(kernel)
    n = 64
    x, y = np.ones(n, np.float32), np.zeros(n, np.float32)
    out = np.zeros(n, np.float32)
    tuned[lambda m: (triton.cdiv(n, m["BLOCK"]),)](x, y, out, n, 2.0)
    np.testing.assert_allclose(out, 2.0 * x + 1.0)
    rows = {r["config"]: r for r in tuned.tuning_table()}
    assert pruned == [n] and rows["BLOCK=1024"]["status"] == "dropped"   # the early prune
    ran = {c: r["value"] for c, r in rows.items() if r["status"] == "ok"}
    assert sorted(ran) == ["BLOCK=16", "BLOCK=64, num_stages=2"]
    assert tuned.best_config.text == min(ran, key=ran.get)     # the fewest simulated cycles



def test_autotune_above_heuristics_computes_them_per_config_and_per_launch(monkeypatch,
                                                                          tmp_path):
    """Triton's usual stack, ``@autotune`` / ``@heuristics`` / ``@jit``: the heuristic
    reads the config's BLOCK, and is computed again at every launch (``key`` leaves out
    ``n``, so the second launch reuses the tuned config but not the first one's EVEN)."""
    monkeypatch.setenv("NPUJIT_AUTOTUNE_WORKERS", "0")
    monkeypatch.setenv("NPUJIT_CACHE_DIR", str(tmp_path))
    seen = []

    def even(args):
        seen.append((args["n"], args["BLOCK"]))
        return args["n"] % args["BLOCK"] == 0

    heur = triton.heuristics({"EVEN": even})(_copy_even.kernel.with_options(backend="reference"))
    tuned = triton.autotune([triton.Config({"BLOCK": 16}), triton.Config({"BLOCK": 32})],
                            key=[])(heur)
    for n, add in ((64, 1.0), (30, 2.0)):
        x = np.arange(n, dtype=np.float32)
        out = np.zeros(n, np.float32)
        tuned[lambda m: (triton.cdiv(n, m["BLOCK"]),)](x, out, n)
        np.testing.assert_array_equal(out, x + add)
    assert {(64, 16), (64, 32)} <= set(seen)             # the sweep: once per config
    assert seen[-1] == (30, tuned.best_config.kwargs["BLOCK"])   # the second launch's own
    assert tuned.simulate(np.zeros(30, np.float32), np.zeros(30, np.float32), 30,
                          grid=(2,)).cycles > 0

def test_do_bench_measures_cpu_milliseconds():
    calls = []
    ms = triton.testing.do_bench(lambda: calls.append(1), warmup=1, rep=3)
    assert ms >= 0 and len(calls) >= 3
    lo, mid = triton.testing.do_bench(lambda: None, warmup=0, rep=1, quantiles=[0.0, 0.5])
    assert 0 <= lo <= mid


def _positive(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.device_assert(tl.load(x_ptr + offs, mask=offs < n, other=0) >= 0, "negative input")


def test_jit_debug_true_runs_device_assert_as_triton_does(backend, monkeypatch):
    monkeypatch.delenv("NPUJIT_DEBUG", raising=False)
    x = np.array([1, 2, -3, 4], np.int32)
    triton.jit(_positive).with_options(backend=backend)[(1,)](x, 4, BLOCK=4)   # not checked
    checked = triton.jit(debug=True)(_positive).with_options(backend=backend)
    with pytest.raises(triton.TritonError, match=r"lane \(2,\): negative input"):
        checked[(1,)](x, 4, BLOCK=4)
    checked[(1,)](np.abs(x), 4, BLOCK=4)


def test_perf_report_sweeps_prints_and_saves_the_table(tmp_path, capsys):
    @triton.testing.perf_report([
        triton.testing.Benchmark(x_names=["n"], x_vals=[2, 3], line_arg="impl",
                                 line_vals=["a", "b"], line_names=["A", "B"],
                                 plot_name="plain", args={"scale": 10}),
        triton.testing.Benchmark(x_names=["n", "m"], x_vals=[4], line_arg="impl",
                                 line_vals=["a"], line_names=["A"], plot_name="ranged",
                                 args={"scale": 1})])
    def bench(n, impl, scale, m=None):
        value = n * scale + (impl == "b")
        return value if m is None else (value, value - 1, value + 1)

    tables = bench.run(print_data=True, save_path=str(tmp_path), return_df=True)
    out = capsys.readouterr().out
    assert "plain:" in out and "ranged:" in out
    plain, ranged = [t if isinstance(t, tuple) else (list(t.columns), t.values.tolist())
                     for t in tables]
    assert plain == (["n", "A", "B"], [[2, 20, 21], [3, 30, 31]])
    assert ranged == (["n", "m", "A", "A-min", "A-max"], [[4, 4, 4, 3, 5]])
    assert (tmp_path / "plain.csv").read_text().splitlines() == ["n,A,B", "2,20,21", "3,30,31"]
