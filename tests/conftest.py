"""Shared test fixtures: the backends every execution-tier test runs on; the longest
tests run first."""
import pytest

# The tiers a kernel-level test runs on: the reference interpreter (what an op means) and
# the default CPU backend (what a user's launch runs on).  The numba backend is checked by
# its own tier: the op table (tests/backends/test_numba.py), the conformance table and the
# fuzzer on every tier (tests/conformance, tests/fuzz), its lowering tests
# (tests/backends/test_numba_*.py, test_row_gather.py, test_block_transposed.py, ...),
# the MoE layer on numba (tests/moe/test_layer.py) and the bad-input and debug-mode tables
# (tests/errors), which run every backend.  A numba compile costs seconds, an llvm one a
# tenth of that: running every kernel test on numba too was a third of the suite's time.
BACKENDS = ["reference", "llvm"]

# The tests that take 15-45 s each with an empty kernel cache on the 2-core CI machine,
# longest first (node id prefixes).  They run before everything else: pytest-xdist's
# worksteal hands each worker half of the collection in order and balances the run by
# stealing from the end of a worker's queue, so a long test collected near the end (the
# demo was 3,440th of 3,551) could keep one worker busy for its whole length after the
# other had run out of tests.  At the start, the short tests after them even the workers
# out.  None of them shares a module-scoped fixture or a per-process result with the
# tests it moves ahead of.
LONG_TESTS = (
    "tests/test_demo.py::test_demo_runs_and_every_kernel_matches_numpy",
    "tests/moe/test_layer.py::test_cpu_backends_fused_and_unfused",
    "tests/fuzz/test_kernels.py::test_all_tiers_agree",
    "tests/jit/test_autotune_bound.py::test_sweep_pruned_by_the_ir_bound",
    "tests/fuzz/test_ir.py::test_passes_keep_generated_kernels_verified",
    "tests/fuzz/test_twin.py::test_twin_tier_agrees_with_the_reference",
    "tests/moe/test_balance.py::test_statistics_match_the_reference",
    "tests/triton/test_gallery.py::test_softmax_on_strided_rows",
    "tests/conformance/test_twin_tier.py::test_twin_tier_conforms",
    "tests/fuzz/test_kernels.py::test_reference_and_scheduled_tiers_agree",
)


def pytest_collection_modifyitems(config, items):
    """Run the ``LONG_TESTS`` first, in that order; the rest keep theirs."""
    rank = {}
    for item in items:
        for i, prefix in enumerate(LONG_TESTS):
            if item.nodeid.startswith(prefix):
                rank[item.nodeid] = i
                break
    if rank:
        items.sort(key=lambda item: rank.get(item.nodeid, len(LONG_TESTS)))


@pytest.fixture(params=BACKENDS)
def backend(request):
    """Each backend name in turn; tests launch with kernel.with_options(backend=backend)."""
    return request.param
