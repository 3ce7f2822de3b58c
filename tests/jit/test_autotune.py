"""jit/autotune.py: sweeps pick the config the simulator ranks first (checked against
simulating every config directly), drop configs over the spec with their reason, never
touch the caller's arrays, reject wrong results, and keep their results on disk."""
import io
import json
import os
import shutil
import warnings

import numpy as np
import pytest

import npujit.language as nl
from npujit import Config, LaunchError, autotune, cdiv, npu_kernel
from npujit.jit import autotune as autotune_mod
from npujit.jit.tuning import AutotuneWarning
from npujit.kernels.elementwise import add_kernel
from npujit.target import TINY

N = 4096


@npu_kernel(backend="reference", spec="TINY")
def inc_kernel(x_ptr, n, BLOCK: nl.constexpr):
    offs = nl.program_id(0) * BLOCK + nl.arange(0, BLOCK)
    m = offs < n
    nl.store(x_ptr + offs, nl.load(x_ptr + offs, mask=m) + 1.0, mask=m)


@npu_kernel(backend="reference")
def rowsum_kernel(x_ptr, out_ptr, K, BLOCK_K: nl.constexpr):
    # The loop drops the tail of a row when BLOCK_K does not divide K: a config bug that
    # only check= can see.
    row = nl.program_id(0)
    acc = nl.zeros((BLOCK_K,), nl.float32)
    for k in nl.range(0, K // BLOCK_K * BLOCK_K, BLOCK_K):
        acc += nl.load(x_ptr + row * K + k + nl.arange(0, BLOCK_K))
    nl.store(out_ptr + row + nl.arange(0, 1), nl.sum(acc, axis=0) + nl.zeros((1,), nl.float32))


def grid_1d(meta):
    return (cdiv(meta["n"], meta["BLOCK"]),)


# BLOCK=1024 is the fastest on TINY; 16 is so slow that its roofline bound alone loses to
# 1024's cycles; 4096 f32 needs 2 x 16 KB of UB, which holds 16 KB.
INC_CONFIGS = [Config({"BLOCK": 1024}), Config({"BLOCK": 16}), Config({"BLOCK": 4096}),
               Config({"BLOCK": 256})]


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    """Every test has an empty cache dir and measures in-process unless it says."""
    monkeypatch.setenv("NPUJIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("NPUJIT_AUTOTUNE_WORKERS", "0")
    monkeypatch.delenv("NPUJIT_DISABLE_CACHE", raising=False)


def _rows(tuned):
    return {r["config"]: r for r in tuned.tuning_table()}


def _direct_cycles(kernel, x, config):
    """The oracle: simulate one config directly, on a copy."""
    return kernel.simulate(x.copy(), N, grid=grid_1d({"n": N, **config.kwargs}),
                           numerics=False, **config.kwargs)


def test_sweep_drops_prunes_and_picks_the_simulators_best_three_times():
    x0 = np.arange(N, dtype=np.float32)
    before = {c.constexprs["BLOCK"] for c in inc_kernel.cache.values()}
    winners = []
    for _ in range(3):
        tuned = autotune(configs=INC_CONFIGS, key=["n"])(inc_kernel)
        x = x0.copy()
        tuned[grid_1d](x, N)
        np.testing.assert_array_equal(x, x0 + 1)         # tuning on copies, one real launch
        winners.append((tuned.best_config, {c: r.get("value") for c, r in _rows(tuned).items()}))
        assert {r["source"] for r in tuned.tuning_table()} == {"run"}
        shutil.rmtree(os.environ["NPUJIT_CACHE_DIR"])     # cold again: measured every run
    assert winners[0] == winners[1] == winners[2]
    # the candidates compiled in kernels of their own: the caller's keeps the winner only
    assert {c.constexprs["BLOCK"] for c in inc_kernel.cache.values()} - before <= {1024}
    rows = _rows(tuned)
    big = rows["BLOCK=4096"]
    assert big["status"] == "too-big"
    cap = TINY.capacity["UB"]
    assert f"> {cap} B" in big["reason"] and "UB" in big["reason"] and "stage" in big["reason"]
    assert "16384 B x 1 stage" in big["reason"]                 # 4096 x 4 B, one slot
    # The oracle: every fitting config simulated directly.
    cycles = {c.text: _direct_cycles(inc_kernel, x0, c) for c in INC_CONFIGS
              if c.kwargs["BLOCK"] != 4096}
    best = min(cycles, key=lambda c: cycles[c].cycles)
    assert tuned.best_config.text == best == "BLOCK=1024"
    assert rows[best]["value"] == cycles[best].cycles and rows[best]["best"]
    pruned = rows["BLOCK=16"]
    assert pruned["status"] == "pruned"
    assert cycles["BLOCK=16"].cycles >= pruned["bound"] > cycles[best].cycles
    assert rows["BLOCK=256"]["value"] == cycles["BLOCK=256"].cycles


def test_in_place_kernel_is_not_corrupted_and_restore_reset_names_are_checked():
    x0 = np.linspace(-1, 1, N, dtype=np.float32)
    x = x0.copy()
    tuned = autotune(configs=[Config({"BLOCK": 256}), Config({"BLOCK": 512})], key=["n"],
                     reset_to_zero=[], restore_value=["x_ptr"], objective="wall", rep=2,
                     warmup=1)(inc_kernel)
    tuned[grid_1d](x, N)
    np.testing.assert_array_equal(x, x0 + 1)
    rows = tuned.tuning_table()
    assert [r["status"] for r in rows] == ["ok", "ok"]
    assert all(r["unit"] == "s" and r["value"] > 0 and "n=2" in r["spread"] for r in rows)
    assert tuned.best_config.text == min(rows, key=lambda r: r["value"])["config"]
    with pytest.raises(TypeError, match="reset_to_zero= names 'y'"):
        autotune(configs=INC_CONFIGS, reset_to_zero=["y"])(inc_kernel)


def test_check_rejects_the_config_that_computes_a_wrong_result():
    x = np.random.default_rng(0).random((4, 96)).astype(np.float32)
    out = np.zeros(4, np.float32)
    configs = [Config({"BLOCK_K": 64}), Config({"BLOCK_K": 32}), Config({"BLOCK_K": 16})]
    tuned = autotune(configs=configs, key=["K"],
                     check=lambda x, out, K: x.sum(axis=1))(rowsum_kernel)
    tuned[(4,)](x, out, 96)
    rows = _rows(tuned)
    bad = rows["BLOCK_K=64"]
    assert bad["status"] == "rejected"
    # 32 of 96 columns dropped: every row is off by the sum of its tail.
    worst = np.abs(x[:, 64:].sum(axis=1)).max()
    assert bad["reason"].startswith("out_ptr: 4 of 4 elements differ")
    assert f"|diff| {worst:.3g}" in bad["reason"]
    assert tuned.best_config.text in ("BLOCK_K=32", "BLOCK_K=16")
    np.testing.assert_allclose(out, x.sum(axis=1), rtol=1e-5)


def test_results_persist_and_a_new_config_is_the_only_one_measured(monkeypatch, tmp_path):
    x0 = np.arange(N, dtype=np.float32)
    first = autotune(configs=INC_CONFIGS[:2], key=["n"])(inc_kernel)
    first[grid_1d](x0.copy(), N)
    values = {c: r.get("value") for c, r in _rows(first).items()}

    measured = []
    real = autotune_mod.run_trial
    monkeypatch.setattr(autotune_mod, "run_trial",
                        lambda t: measured.append(t.config.text) or real(t))
    grown = autotune(configs=INC_CONFIGS[:2] + [Config({"BLOCK": 512})], key=["n"])(inc_kernel)
    x = x0.copy()
    grown[grid_1d](x, N)
    np.testing.assert_array_equal(x, x0 + 1)
    assert measured == ["BLOCK=512"]
    rows = _rows(grown)
    assert [rows[c]["source"] for c in ("BLOCK=1024", "BLOCK=16", "BLOCK=512")] == \
        ["disk", "disk", "run"]
    assert {c: rows[c].get("value") for c in values} == values

    # A stored prune holds only against a better config of the sweep: alone, it is measured.
    alone = autotune(configs=[Config({"BLOCK": 16})], key=["n"])(inc_kernel)
    alone.tune(x0.copy(), N, grid=grid_1d)
    row = alone.tuning_table()[0]
    assert (row["status"], row["source"], row["reason"]) == ("ok", "run", None)
    assert row["value"] >= rows["BLOCK=16"]["bound"] > values["BLOCK=1024"]
    measured.clear()

    # A new key value (n) or a new compiler measures again.
    measured.clear()
    grown[grid_1d](np.zeros(2048, np.float32), 2048)
    assert sorted(measured) == ["BLOCK=1024", "BLOCK=16", "BLOCK=512"]

    # The stored table, as text and CSV.
    table = grown.tuning_table(stored=True)
    assert len(table) == 6 and "BLOCK=512" in str(table)
    csv_text = table.to_csv(str(tmp_path / "t.csv"))
    assert csv_text.splitlines()[0].startswith("key,config,status,objective,value")
    assert len(csv_text.splitlines()) == 7
    assert (tmp_path / "t.csv").read_text() == csv_text

    measured.clear()
    monkeypatch.setattr(autotune_mod, "compiler_hash", lambda: "another-compiler")
    autotune(configs=INC_CONFIGS[:2], key=["n"])(inc_kernel).tune(x0.copy(), N, grid=grid_1d)
    assert measured == ["BLOCK=1024", "BLOCK=16"]


def test_export_then_import_on_another_machine_measures_nothing(monkeypatch, tmp_path):
    x0 = np.arange(N, dtype=np.float32)
    tuned = autotune(configs=INC_CONFIGS, key=["n"])(inc_kernel)
    tuned[grid_1d](x0.copy(), N)
    path = str(tmp_path / "inc.json")
    assert tuned.export_tuning(path) == 4

    monkeypatch.setenv("NPUJIT_CACHE_DIR", str(tmp_path / "other-machine"))
    monkeypatch.setattr(autotune_mod, "run_trial", lambda t: pytest.fail("measured"))
    other = autotune(configs=INC_CONFIGS, key=["n"])(inc_kernel)
    assert other.import_tuning(path) == 4
    assert other.tune(x0.copy(), N, grid=grid_1d) == tuned.best_config
    assert {r["source"] for r in other.tuning_table()} == {"import"}

    # Rows of another compiler are skipped unless strict=False.
    data = json.load(open(path))
    for r in data["rows"]:
        r["compiler_hash"] = "0" * 16
    json.dump(data, open(path, "w"))
    monkeypatch.setenv("NPUJIT_CACHE_DIR", str(tmp_path / "third-machine"))
    with pytest.warns(AutotuneWarning, match="4 rows of another compiler version"):
        assert other.import_tuning(path) == 0
    assert other.import_tuning(path, strict=False) == 4
    with pytest.raises(ValueError, match="not of 'rowsum_kernel'"):
        autotune(configs=[Config({"BLOCK_K": 16})])(rowsum_kernel).import_tuning(path)


def test_sweep_on_a_process_pool_matches_the_in_process_sweep(monkeypatch, tmp_path):
    configs = [Config({"BLOCK": 512}), Config({"BLOCK": 2048})]
    x, y = np.ones(N, np.float32), np.full(N, 2.0, np.float32)

    def sweep():
        tuned = autotune(configs=configs, key=["n"])(add_kernel)
        out = np.zeros(N, np.float32)
        tuned[grid_1d](x, y, out, N)
        np.testing.assert_array_equal(out, 3.0)
        return tuned.best_config, [r["value"] for r in tuned.tuning_table()]

    here = sweep()
    monkeypatch.setenv("NPUJIT_CACHE_DIR", str(tmp_path / "pool-cache"))
    monkeypatch.setenv("NPUJIT_AUTOTUNE_WORKERS", "2")
    submitted = []
    real = autotune_mod.default_pool
    monkeypatch.setattr(autotune_mod, "default_pool",
                        lambda n: submitted.append(n) or real(n))
    assert sweep() == here
    assert submitted == [2]


def test_a_kernel_no_worker_can_import_runs_in_process_with_a_note(monkeypatch):
    monkeypatch.setenv("NPUJIT_AUTOTUNE_WORKERS", "2")

    @npu_kernel(backend="reference", spec="TINY")
    def local_inc(x_ptr, n, BLOCK: nl.constexpr):
        offs = nl.program_id(0) * BLOCK + nl.arange(0, BLOCK)
        nl.store(x_ptr + offs, nl.load(x_ptr + offs, mask=offs < n) + 1.0, mask=offs < n)

    monkeypatch.setattr(autotune_mod, "default_pool", lambda n: pytest.fail("pool used"))
    tuned = autotune(configs=[Config({"BLOCK": 512}), Config({"BLOCK": 1024})])(local_inc)
    x = np.zeros(N, np.float32)
    with pytest.warns(AutotuneWarning, match="defined inside a function"):
        tuned[grid_1d](x, N)
    np.testing.assert_array_equal(x, 1.0)


def test_a_config_the_kernel_refuses_fails_alone_and_is_not_stored():
    @npu_kernel(backend="reference", spec="TINY")
    def guarded(x_ptr, n, BLOCK: nl.constexpr):
        nl.static_assert(BLOCK <= 512, "BLOCK must be <= 512")
        offs = nl.program_id(0) * BLOCK + nl.arange(0, BLOCK)
        nl.store(x_ptr + offs, nl.load(x_ptr + offs, mask=offs < n) + 1.0, mask=offs < n)

    tuned = autotune(configs=[Config({"BLOCK": 1024}), Config({"BLOCK": 512})])(guarded)
    x = np.zeros(N, np.float32)
    tuned[grid_1d](x, N)
    np.testing.assert_array_equal(x, 1.0)
    row = _rows(tuned)["BLOCK=1024"]
    assert row["status"] == "failed"
    assert row["reason"].startswith("static_assert failed: BLOCK must be <= 512 (")
    assert [r["config"] for r in tuned.tuning_table(stored=True)] == ["BLOCK=512"]


def test_a_broken_executor_leaves_its_configs_to_this_process():
    from concurrent.futures import BrokenExecutor, Executor

    class Broken(Executor):
        def submit(self, fn, *args, **kwargs):
            raise BrokenExecutor("a worker died")

    tuned = autotune(configs=INC_CONFIGS, key=["n"], executor=Broken())(inc_kernel)
    x = np.zeros(N, np.float32)
    with pytest.warns(AutotuneWarning, match="the executor broke .a worker died.; the 4 "
                                             "configs left run in this process"):
        tuned[grid_1d](x, N)
    np.testing.assert_array_equal(x, 1.0)
    assert tuned.best_config.text == "BLOCK=1024"


def test_sweep_on_dask_local_cluster():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        tuned = autotune(configs=INC_CONFIGS, key=["n"],
                         executor=client.get_executor())(inc_kernel)
        x = np.zeros(N, np.float32)
        tuned[grid_1d](x, N)
    np.testing.assert_array_equal(x, 1.0)
    rows = _rows(tuned)
    assert tuned.best_config.text == "BLOCK=1024"
    assert rows["BLOCK=4096"]["status"] == "too-big"
    assert rows["BLOCK=1024"]["value"] == _direct_cycles(inc_kernel, x, INC_CONFIGS[0]).cycles


def test_config_num_stages_is_the_default_stages_of_loops():
    @npu_kernel(backend="reference")
    def copy_loop(x_ptr, out_ptr, n, BLOCK: nl.constexpr):
        for i in nl.range(0, n, BLOCK):
            offs = i + nl.arange(0, BLOCK)
            nl.store(out_ptr + offs, nl.load(x_ptr + offs))

    c = Config({"BLOCK": 64}, num_stages=3, num_warps=8)       # num_warps: ignored
    assert c.options() == {"num_stages": 3} and c.all_kwargs()["num_warps"] == 8
    x, out = np.zeros(256, np.float32), np.zeros(256, np.float32)
    staged = copy_loop.with_options(**c.options()).ir(x, out, 256, **c.kwargs)
    assert "num_stages = 3" in staged
    assert "num_stages" not in copy_loop.ir(x, out, 256, BLOCK=64)
    with pytest.raises(TypeError, match="num_stages must be a positive int"):
        Config({"BLOCK": 64}, num_stages=0)


def test_bad_use_is_a_clear_error():
    with pytest.raises(TypeError, match="put @autotune"):
        autotune(configs=INC_CONFIGS)(lambda x: x)
    with pytest.raises(TypeError, match="key= names 'm', not a parameter"):
        autotune(configs=INC_CONFIGS, key=["m"])(inc_kernel)
    with pytest.raises(TypeError, match="BLOCKK is not a parameter"):
        autotune(configs=[Config({"BLOCKK": 4})])(inc_kernel)
    with pytest.raises(ValueError, match="objective must be one of"):
        autotune(configs=INC_CONFIGS, objective="fast")(inc_kernel)
    tuned = autotune(configs=INC_CONFIGS)(inc_kernel)
    with pytest.raises(LaunchError, match="BLOCK from the call and from Config"):
        tuned[grid_1d](np.zeros(8, np.float32), 8, BLOCK=8)
    only_big = autotune(configs=[Config({"BLOCK": 4096})])(inc_kernel)
    with pytest.raises(autotune_mod.AutotuneError, match="too-big"):
        only_big[grid_1d](np.zeros(N, np.float32), N)


def test_progress_bar_only_on_a_terminal_and_off_by_knob(monkeypatch):
    class Terminal(io.StringIO):
        def isatty(self):
            return True
    assert autotune_mod.progress_bar(3, "autotune k", io.StringIO()) is None
    term = Terminal()
    bar = autotune_mod.progress_bar(3, "autotune k", term)
    bar.update(3)
    bar.close()
    assert "autotune k:" in term.getvalue() and "/3" in term.getvalue()
    monkeypatch.setenv("NPUJIT_AUTOTUNE_PROGRESS", "0")
    assert autotune_mod.progress_bar(3, "autotune k", Terminal()) is None


def test_unwritable_cache_keeps_results_in_memory_with_one_warning(monkeypatch, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("NPUJIT_CACHE_DIR", str(blocker))
    tuned = autotune(configs=INC_CONFIGS[:2], key=["n"])(inc_kernel)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        tuned[grid_1d](np.zeros(N, np.float32), N)
    notes = [w for w in seen if issubclass(w.category, AutotuneWarning)]
    assert len(notes) == 1 and "kept in memory" in str(notes[0].message)
    assert tuned.best_config.text == "BLOCK=1024"
