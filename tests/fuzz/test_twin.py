"""The Ascend C CPU twin as a fuzz tier: generated sub-kernels that the emitter can lower
(backends/ascendc/lowering.py) are emitted, built with g++ against the twin and compared
with the reference interpreter under the same rules as the other tiers.

A g++ build costs about a second, so lowerable sub-kernels run ``NPUJIT_FUZZ_TWIN_BATCH``
(default 10) to a kernel.  Generated sub-kernels are drawn until
``NPUJIT_FUZZ_TWIN_KERNELS`` (default 100) of them lower, at most
``NPUJIT_FUZZ_TWIN_DRAWS`` (default 1000) draws; about one in five lowers today (2-D
tiles, scans, sorts, top-k, activations and 64-bit vector arithmetic do not yet), so
about 500 draws are made; drawing stops at the last one needed.  The draws come from a
fixed seed, so a warm disk cache serves the builds.  Nightly: raise the counts and change
``NPUJIT_FUZZ_SEED``.
"""
from __future__ import annotations

import tempfile

from hypothesis import HealthCheck, Phase, given, seed, settings

from npujit import knobs

from .gen import render, subkernels
from .test_kernels import check_batch
from .tiers import load_kernel, make_args

KERNELS = knobs.env_int("NPUJIT_FUZZ_TWIN_KERNELS", 100)
DRAWS = knobs.env_int("NPUJIT_FUZZ_TWIN_DRAWS", 1000)
BATCH = knobs.env_int("NPUJIT_FUZZ_TWIN_BATCH", 10)
SEED = knobs.env_int("NPUJIT_FUZZ_SEED", 0)


def lowers(sub) -> bool:
    """Whether the emitter lowers ``sub`` (emission only: no g++ build)."""
    kernel = load_kernel(render([sub], "twin_one"), "twin_one")
    args, _ = make_args([sub])
    try:
        with tempfile.TemporaryDirectory() as d:
            kernel.emit("ascendc", d, *args)
    except NotImplementedError:
        return False
    return True


class _Enough(Exception):
    """Raised inside the hypothesis loop once enough sub-kernels lower: drawing the rest
    of the ``draws`` examples would only cost time (about 10 ms each)."""


def lowerable_subkernels(seed_value: int, draws: int, want: int) -> list:
    """The first ``want`` sub-kernels the emitter lowers, among at most ``draws``
    generated ones."""
    found = []

    @seed(seed_value)
    @settings(max_examples=draws, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck), print_blob=False)
    @given(subkernels())
    def collect(sub):
        if len(found) < want and lowers(sub):
            found.append(sub)
        if len(found) >= want:
            raise _Enough
    try:
        collect()
    except _Enough:
        pass
    return found


def test_twin_tier_agrees_with_the_reference():
    subs = lowerable_subkernels(SEED + 2000, DRAWS, KERNELS)
    # a guard against a generator or emitter change that silently lowers too few
    assert len(subs) >= KERNELS, f"only {len(subs)} of {DRAWS} generated sub-kernels lower"
    for i in range(0, len(subs), BATCH):
        check_batch(subs[i:i + BATCH], ("reference", "ascendc-twin"))
