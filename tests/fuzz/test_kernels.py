"""Differential fuzzing of generated kernels across the execution tiers.

Each hypothesis example is a list of random sub-kernels (tests/fuzz/gen.py) compiled as
one ``@npu_kernel``; it runs on the reference interpreter (the oracle), the numba backend
and the scheduled path through the simulator (``kernel.simulate``), and every output of
every sub-kernel must agree with the reference: bit for bit for ints, bools and exact float
ops, within a few ulp for transcendentals, and within a bound scaled by the terms for
float sums and dots (their order is unspecified, docs/semantics.md).  A failure shrinks to
one sub-kernel and prints its kernel source and IR.

Budget.  ``NPUJIT_FUZZ_EXAMPLES`` examples (default 20; derandomized, so a CI run checks
the same kernels every time and a warm disk cache serves them), each at most
``NPUJIT_FUZZ_BATCH`` sub-kernels (default 12), each run on ``NPUJIT_FUZZ_INPUTS`` input
sets (default 3; a new input set costs no compile).  The numba compile is the whole cost:
0.2-0.8 s per sub-kernel cold on the 2-core CI machine, and batching does not amortise it
(numba's compile time grows with the function, slightly faster than linearly), so the
default run checks 75 sub-kernels x 3 input sets (measured: 76 s cold, seconds warm);
tests/fuzz/test_ir.py takes 222 more through the reference tier and the passes (11 s).
Nightly: ``NPUJIT_FUZZ_EXAMPLES=250`` (about 1000 sub-kernels, ~15 min cold), and
``NPUJIT_FUZZ_SEED=<int>`` for a different (still reproducible) series.
"""
from __future__ import annotations

import os

from hypothesis import HealthCheck, Phase, given, seed, settings

from npujit.jit import knobs

from .gen import render, subkernel_lists
from .tiers import TIERS, compare_tiers, load_kernel, make_args, run

EXAMPLES = knobs.env_int("NPUJIT_FUZZ_EXAMPLES", 20)
BATCH = knobs.env_int("NPUJIT_FUZZ_BATCH", 12)
INPUTS = knobs.env_int("NPUJIT_FUZZ_INPUTS", 3)
SEED = os.environ.get("NPUJIT_FUZZ_SEED")
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=SEED is None,
                    database=None, print_blob=True,
                    phases=[Phase.explicit, Phase.generate, Phase.shrink],
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def report(subs, kernel, args, what: str) -> str:
    """The failing batch as kernel source and reference IR, for the assertion message."""
    try:
        ir = kernel.with_options(backend="reference").ir(*args)
    except Exception as e:       # the IR itself may be what fails
        ir = f"<no IR: {type(e).__name__}: {e}>"
    return f"{what}\n--- kernel source ---\n{render(subs, kernel.name)}\n--- IR ---\n{ir}"


def check_batch(subs) -> None:
    """Run ``subs`` as one kernel on every tier and assert they agree."""
    source = render(subs, "fuzz_kernel")
    kernel = load_kernel(source, "fuzz_kernel")
    for draw in range(INPUTS):
        args, outs = make_args(subs, draw)
        results = {}
        for tier in TIERS:
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


_decorate = (lambda f: seed(int(SEED))(f)) if SEED is not None else (lambda f: f)


@_decorate
@SETTINGS
@given(subkernel_lists(BATCH))
def test_tiers_agree_on_generated_kernels(subs):
    check_batch(subs)

