"""The llvm backend as a fuzz tier: generated batches (tests/fuzz/gen.py) compiled by
backends/llvm/ and compared with the reference interpreter under the rules of the other
tiers (tiers.compare_tiers).

A batch compiles in a fraction of a second there (no numba), so this file runs
``NPUJIT_FUZZ_LLVM_SHARDS`` shards (default 2) of ``NPUJIT_FUZZ_LLVM_EXAMPLES`` batches
(default 12) of up to 8 sub-kernels each, from their own fixed seeds: about 190
sub-kernels, each on ``NPUJIT_FUZZ_INPUTS`` input sets.  Nightly: raise the counts and
change ``NPUJIT_FUZZ_SEED``.
"""
from __future__ import annotations

import pytest

from npujit import knobs

from .test_kernels import SEED, run_shard

SHARDS = knobs.env_int("NPUJIT_FUZZ_LLVM_SHARDS", 2)
EXAMPLES = knobs.env_int("NPUJIT_FUZZ_LLVM_EXAMPLES", 12)


@pytest.mark.parametrize("shard", range(SHARDS))
def test_llvm_tier_agrees_with_the_reference(shard):
    run_shard(SEED + 3000 + shard, EXAMPLES, ("reference", "llvm"))
