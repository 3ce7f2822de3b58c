"""Differential fuzzing of generated kernels across the execution tiers.

Each hypothesis example is a list of random sub-kernels (tests/fuzz/gen.py) compiled as
one ``@npu_kernel``; it runs on the reference interpreter (the oracle), the numba backend
and the scheduled path through the simulator (``kernel.simulate``), and every output of
every sub-kernel must agree with the reference: bit for bit for ints, bools and exact float
ops, within a few ulp for transcendentals, and within a bound scaled by the terms for
float sums and dots (their order is unspecified, docs/semantics.md).  A failure shrinks to
one sub-kernel and prints its kernel source and IR.

Budget (the numba compile is the whole cost: 0.2-0.8 s per sub-kernel cold on the 2-core
CI machine, and batching does not amortise it -- numba's compile time grows with the
function, slightly faster than linearly):

* ``test_all_tiers_agree``: ``NPUJIT_FUZZ_SHARDS`` shards (default 6; pytest-xdist runs
  them on both cores) of ``NPUJIT_FUZZ_EXAMPLES`` examples (default 3), each at most
  ``NPUJIT_FUZZ_BATCH`` sub-kernels (default 8), each on ``NPUJIT_FUZZ_INPUTS`` input sets
  (default 3; a new input set costs no compile), on the reference, scheduled and numba
  tiers: about 80 sub-kernels.  A batch is one numba function, and numba's compile time
  grows faster than the function: batches of 12 drew a ~1,600-line function in two shards
  that took ~56 s of CPU alone, so 3 batches of 8 replace 2 of 12 (the same number of
  sub-kernels; this file 172 -> 93 s of wall time with an empty cache on two cores);
* ``test_reference_and_scheduled_tiers_agree``: ``NPUJIT_FUZZ_CHEAP_EXAMPLES`` examples
  per shard (default 55, two shards): about 400 more sub-kernels on the two tiers that
  need no numba compile (the scheduled path runs the scheduled IR through the simulator);
* ``test_schedules_are_right_under_the_full_debug_options``:
  ``NPUJIT_FUZZ_CHECKED_EXAMPLES`` examples (default 60) on the reference and the
  *checked* tier: the scheduled path under ``tiers.FULL_DEBUG`` (every tile in its
  scheduled buffer, NaN-poisoned, copies landing at their wait; races and flag problems
  fail the tier);
* tests/fuzz/test_ir.py takes ~220 more through the IR passes.

Each shard draws from its own fixed seed (``NPUJIT_FUZZ_SEED`` + shard; default 0), so a
CI run checks the same kernels every time and a warm disk cache serves them.  Nightly:
``NPUJIT_FUZZ_EXAMPLES=60`` (about 1000 sub-kernels on every tier, ~15 min cold) and
another ``NPUJIT_FUZZ_SEED`` for a different (still reproducible) series.
"""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, Phase, given, seed, settings

from npujit import knobs

from .gen import render, subkernel_lists
from .tiers import TIERS, compare_tiers, load_kernel, make_args, run

EXAMPLES = knobs.env_int("NPUJIT_FUZZ_EXAMPLES", 3)
CHEAP_EXAMPLES = knobs.env_int("NPUJIT_FUZZ_CHEAP_EXAMPLES", 55)
CHECKED_EXAMPLES = knobs.env_int("NPUJIT_FUZZ_CHECKED_EXAMPLES", 60)
SHARDS = knobs.env_int("NPUJIT_FUZZ_SHARDS", 6)
BATCH = knobs.env_int("NPUJIT_FUZZ_BATCH", 8)
INPUTS = knobs.env_int("NPUJIT_FUZZ_INPUTS", 3)
SEED = knobs.env_int("NPUJIT_FUZZ_SEED", 0)


def run_shard(seed_value: int, examples: int, tiers: tuple, shrink: bool = True) -> None:
    """One reproducible hypothesis series of batches, each checked on ``tiers``."""
    phases = [Phase.explicit, Phase.generate] + ([Phase.shrink] if shrink else [])

    @seed(seed_value)
    @settings(max_examples=examples, deadline=None, derandomize=False, database=None,
              print_blob=True, phases=phases,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(subkernel_lists(BATCH))
    def batches(subs):
        check_batch(subs, tiers)
    batches()


def report(subs, kernel, args, what: str) -> str:
    """The failing batch as kernel source and reference IR, for the assertion message."""
    try:
        ir = kernel.with_options(backend="reference").ir(*args)
    except Exception as e:       # the IR itself may be what fails
        ir = f"<no IR: {type(e).__name__}: {e}>"
    return f"{what}\n--- kernel source ---\n{render(subs, kernel.name)}\n--- IR ---\n{ir}"


def check_batch(subs, tiers=TIERS) -> None:
    """Run ``subs`` as one kernel on ``tiers`` (the reference first) and assert they agree."""
    source = render(subs, "fuzz_kernel")
    kernel = load_kernel(source, "fuzz_kernel")
    for draw in range(INPUTS):
        args, outs = make_args(subs, draw)
        results = {}
        for tier in tiers:
            try:
                results[tier] = run(kernel, tier, args, subs, outs)
            except Exception as e:
                raise AssertionError(report(subs, kernel, args, f"{tier} raised "
                                            f"{type(e).__name__}: {e}")) from e
        problems = compare_tiers(subs, args, outs, results)
        if problems:
            lines = [f"input set {draw}, sub-kernel {s} output {k} on {tier}: {msg}"
                     for s, tier, k, msg in problems]
            raise AssertionError(report(subs, kernel, args, "\n".join(lines)))


@pytest.mark.parametrize("shard", range(SHARDS))
def test_all_tiers_agree(shard):
    run_shard(SEED + shard, EXAMPLES, TIERS)


@pytest.mark.parametrize("shard", range(2))
def test_reference_and_scheduled_tiers_agree(shard):
    run_shard(SEED + 1000 + shard, CHEAP_EXAMPLES, ("reference", "simulated"))


def test_schedules_are_right_under_the_full_debug_options():
    """The scheduled tier with NaN-poisoned buffers, copies landing at their wait, the
    race detector and the flag check (tiers.FULL_DEBUG): a schedule bug is a wrong
    number or a reported race, on the 910B-like and 910-like parts."""
    # No shrinking: a batch's failure already names its sub-kernel, and shrinking through
    # the debug-mode simulations takes minutes.
    run_shard(SEED + 2000, CHECKED_EXAMPLES, ("reference", "checked"), shrink=False)
