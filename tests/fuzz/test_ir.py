"""IR fuzzing on generated kernels: for the IR a random kernel traces to (loops carrying
tiles, masked loads, reductions, scans, sort, topk, dot, casts; tests/fuzz/gen.py), the
printer/parser round trip gives back the same text, the verifier passes, and each named pass
(fold, cse, dce, fuse-elementwise) applied alone keeps a verified, round-trippable IR whose
reference-interpreter result is bit-for-bit the unoptimised one.  The whole pipeline's
result (the reference tier as launched) must be bit-for-bit the same too.

tests/ir/test_ir_random.py does the same on straight-line IR built op by op with the
Builder; this file reaches what only the language front end writes.

Budget: ``NPUJIT_FUZZ_IR_EXAMPLES`` batches (default 40, 222 sub-kernels,
derandomized; no numba, so a sub-kernel costs about 60 ms: trace, schedule, five
reference runs); nightly e.g. ``NPUJIT_FUZZ_IR_EXAMPLES=400``.  ``NPUJIT_FUZZ_SEED=<int>``
draws another reproducible series, as in test_kernels.py.
"""
from __future__ import annotations

import os

import numpy as np
from hypothesis import HealthCheck, Phase, given, seed, settings

from npujit.backends.reference import ReferenceBackend
from npujit.ir import parse_function, print_function, verify
from npujit.ir.passes import CSE, DCE, Fold, FuseElementwise
from npujit import knobs

from .gen import render, subkernel_lists
from .tiers import GRID, fresh, load_kernel, make_args, run

EXAMPLES = knobs.env_int("NPUJIT_FUZZ_IR_EXAMPLES", 40)
PASSES = (Fold, CSE, DCE, FuseElementwise)
SEED = os.environ.get("NPUJIT_FUZZ_SEED")
_decorate = (lambda f: seed(int(SEED))(f)) if SEED is not None else (lambda f: f)


def run_ir(fn, args: list) -> list:
    """``args`` after running the IR function ``fn`` on the reference interpreter."""
    args = fresh(args)
    with np.errstate(all="ignore"):
        ReferenceBackend().compile(fn, {})(GRID + (1, 1), args)
    return args


def same_bits(a, b) -> bool:
    if not isinstance(a, np.ndarray):
        return a == b
    if a.dtype.kind in "iub":
        return np.array_equal(a, b)
    nan = np.isnan(a.astype(np.float32)) & np.isnan(b.astype(np.float32))
    u = {8: np.uint64, 4: np.uint32, 2: np.uint16}[a.itemsize]
    return bool(np.all(nan | (a.view(u) == b.view(u))))


def differing(want: list, got: list) -> list:
    return [i for i, (w, g) in enumerate(zip(want, got)) if not same_bits(w, g)]


def assert_round_trips(text: str, what: str) -> None:
    again = print_function(parse_function(text), locs=True)
    assert again == text, f"{what}: print(parse(text)) differs from text\n{text}\n---\n{again}"


@_decorate
@settings(max_examples=EXAMPLES, deadline=None, derandomize=SEED is None, database=None,
          phases=[Phase.explicit, Phase.generate, Phase.shrink],
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(subkernel_lists(12))
def test_passes_keep_generated_kernels_verified_and_bit_identical(subs):
    source = render(subs, "fuzz_ir")
    kernel = load_kernel(source, "fuzz_ir")
    args, _ = make_args(subs)
    traced = kernel.with_options(backend="reference").inspect(*args)["trace"]
    context = f"\n--- kernel source ---\n{source}\n--- traced IR ---\n{traced}"
    fn = parse_function(traced)
    verify(fn)
    assert_round_trips(traced, "traced IR" + context)
    want = run_ir(fn, args)
    for make in PASSES:
        p = make()
        fn = parse_function(traced)
        p.run(fn)
        text = print_function(fn, locs=True)
        try:
            verify(fn)
        except Exception as e:
            raise AssertionError(f"after {p.name}: {e}\n{text}{context}") from e
        assert_round_trips(text, f"after {p.name}{context}")
        bad = differing(want, run_ir(fn, args))
        assert not bad, f"{p.name} changed arguments {bad}\n--- after {p.name} ---\n{text}{context}"
    bad = differing(want, run(kernel, "reference", args))
    assert not bad, f"the whole pipeline changed arguments {bad}{context}"
