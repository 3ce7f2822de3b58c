"""The dispatch kernels (histogram, offsets, slot scatter, permute) against the numpy
reference: vLLM's worked example, capacity drops, skewed / uniform / empty-expert
routings, one token."""
from __future__ import annotations

import numpy as np
import pytest

from npujit.kernels.moe import reference as ref
from npujit.kernels.moe.dispatch import align, max_rows, permute


def check_aligned(a, ids, E, block_m, capacity=None):
    sorted_ids, expert_ids, total = ref.align_block_size(ids, E, block_m, capacity)
    S = ids.size
    assert a.total == total
    np.testing.assert_array_equal(a.sorted_ids[:total], sorted_ids)
    assert (a.sorted_ids[total:] == S).all() and a.sorted_ids.size == max_rows(S, E, block_m)
    np.testing.assert_array_equal(a.expert_ids[:expert_ids.size], expert_ids)
    assert (a.expert_ids[expert_ids.size:] == -1).all()
    np.testing.assert_array_equal(a.counts, np.bincount(ids.ravel(), minlength=E))
    keep = ref.kept(ids, capacity).ravel()
    np.testing.assert_array_equal(a.row_idx < 0, ~keep)
    np.testing.assert_array_equal(a.sorted_ids[a.row_idx[keep]], np.flatnonzero(keep))


def test_vllm_example():
    """(On llvm and numba in test_layer.test_cpu_backends_fused_and_unfused.)"""
    ids = np.array([[2, 3, 4], [1, 2, 4], [1, 3, 4], [1, 2, 3]], np.int32)
    a = align(ids, 5, block_m=4, backend="reference", block_s=8)      # 2 slot blocks
    check_aligned(a, ids, 5, 4)


ROUTINGS = {
    "uniform": lambda rng: rng.integers(0, 8, (45, 2)),
    # 80 % of the token-choices to expert 3, the rest spread
    "skewed": lambda rng: np.where(rng.random((45, 2)) < 0.8, 3, rng.integers(0, 8, (45, 2))),
    "empty_experts": lambda rng: rng.choice([1, 6], (45, 2)),
    "one_token": lambda rng: np.array([[7, 2]]),
}


@pytest.mark.parametrize("name", list(ROUTINGS))
def test_routings(name):
    ids = ROUTINGS[name](np.random.default_rng(4)).astype(np.int32)
    check_aligned(align(ids, 8, block_m=16, backend="reference", block_s=32), ids, 8, 16)


@pytest.mark.parametrize("capacity", [1, 5, 12])
def test_capacity_drops_follow_the_rule(capacity):
    ids = ROUTINGS["skewed"](np.random.default_rng(7)).astype(np.int32)
    a = align(ids, 8, block_m=8, capacity=capacity, backend="reference", block_s=32)
    check_aligned(a, ids, 8, 8, capacity)
    np.testing.assert_array_equal(a.dropped, ref.load_stats(ids, 8, capacity=capacity)["dropped"])


def test_permute_matches_the_explicit_form():
    backend = "reference"           # the CPU backends run it in test_layer's unfused layer
    rng = np.random.default_rng(9)
    ids = rng.integers(0, 6, (37, 2)).astype(np.int32)
    x = rng.standard_normal((37, 24)).astype(np.float32)
    a = align(ids, 6, block_m=8, capacity=10, backend=backend, block_s=32)
    expanded = permute(x, a, backend=backend)
    want, _, counts = ref.permute(x, ids, 6, capacity=10)
    real = a.sorted_ids < ids.size
    np.testing.assert_array_equal(expanded[real], want)
    assert not expanded[~real].any()                         # pad rows are zeros
    np.testing.assert_array_equal(np.minimum(a.counts, 10), counts)
