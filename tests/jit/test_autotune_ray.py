"""A sweep on Ray (jit/ray_executor.py): the trials run as Ray tasks in worker processes and
give the same winner and cycles as simulating each config directly; skipped without ray."""
import warnings

import numpy as np
import pytest

from npujit import Config, autotune, cdiv
from npujit.kernels.elementwise import add_kernel

N = 4096


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("NPUJIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("NPUJIT_DISABLE_CACHE", raising=False)


def test_sweep_on_ray_matches_direct_simulation():
    ray = pytest.importorskip("ray")
    from npujit.jit.ray_executor import RayExecutor

    configs = [Config({"BLOCK": 512}), Config({"BLOCK": 2048}), Config({"BLOCK": 128})]
    x, y = np.arange(N, dtype=np.float32), np.full(N, 2.0, np.float32)

    def grid(meta):
        return (cdiv(meta["n"], meta["BLOCK"]),)

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            ex = RayExecutor()
            submitted = []
            submit = ex.submit
            ex.submit = lambda fn, *a, **k: submitted.append(fn) or submit(fn, *a, **k)
            tuned = autotune(configs=configs, key=["n"], executor=ex)(add_kernel)
            out = np.zeros(N, np.float32)
            tuned[grid](x, y, out, N)
    finally:
        ray.shutdown()
    # no fallback to this process (a broken executor or an unimportable kernel warns)
    assert not [w for w in caught if "autotune" in str(w.message)]
    assert len(submitted) == len(configs)            # every trial went to a Ray task
    np.testing.assert_array_equal(out, x + 2.0)
    rows = {r["config"]: r for r in tuned.tuning_table()}
    assert {r["source"] for r in rows.values()} == {"run"}
    direct = {c.text: add_kernel.simulate(x, y, np.zeros(N, np.float32), N,
                                          grid=grid({"n": N, **c.kwargs}), numerics=False,
                                          **c.kwargs).cycles for c in configs}
    best = min(direct, key=lambda t: (direct[t], [c.text for c in configs].index(t)))
    assert tuned.best_config.text == best
    for text, r in rows.items():
        if r["status"] == "ok":
            assert r["value"] == direct[text]
        else:                       # pruned: its bound already lost to the winner
            assert r["status"] == "pruned" and direct[text] >= r["bound"] > direct[best]
