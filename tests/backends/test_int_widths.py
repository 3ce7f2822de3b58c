"""Python int arguments are typed i32 when they fit in 32 bits and i64 otherwise (Triton's
rule), the width is part of the specialisation, and the warm launch path keys it: an int
that needs 64 bits never runs through a kernel compiled for i32."""
from __future__ import annotations

import numpy as np
import pytest

import npujit.language as nl
from npujit import npu_kernel
from npujit.jit.binder import arg_signature


@npu_kernel
def store_n(out_ptr, n):
    nl.store(out_ptr, n.to(nl.int64))


@pytest.mark.parametrize("value,width", [
    (0, "i32"), (2**31 - 1, "i32"), (-2**31, "i32"),
    (2**31, "i64"), (-2**31 - 1, "i64"), (2**63 - 1, "i64"), (np.int64(7), "i32")])
def test_int_arguments_are_i32_when_they_fit(value, width):
    assert arg_signature("n", value) == ("S", width)


@pytest.mark.parametrize("backend", ["reference", "llvm", "numba"])
def test_width_specialises_and_the_warm_path_keys_it(backend):
    k = store_n.with_options(backend=backend)
    out = np.zeros(1, np.int64)
    assert "%n: i32" in k.ir(out, 5) and "%n: i64" in k.ir(out, 2**40)
    before = k.compile_count
    for value in (5, 2**40, -7, -2**40 - 3, 2**31 - 1, 2**31):   # each twice: cold, warm
        for _ in range(2):
            out[0] = 0
            k[(1,)](out, value)
            assert out[0] == value
    assert k.compile_count == before          # two variants, compiled by k.ir above


@npu_kernel
def router_logits(x_ptr, w_ptr, logits_ptr, T, H, E: nl.constexpr, BLOCK_T: nl.constexpr,
                  BLOCK_H: nl.constexpr):
    # An MoE router written tutorial-style: pointer arithmetic on runtime ints T and H.
    rows = nl.program_id(0) * BLOCK_T + nl.arange(0, BLOCK_T)
    cols = nl.arange(0, BLOCK_H)
    experts = nl.arange(0, E)
    acc = nl.zeros((BLOCK_T, E), dtype=nl.float32)
    for h in nl.range(0, H, BLOCK_H):
        x = nl.load(x_ptr + rows[:, None] * H + (h + cols)[None, :], mask=rows[:, None] < T,
                    other=0.0)
        w = nl.load(w_ptr + (h + cols)[:, None] * E + experts[None, :])
        acc = nl.dot(x, w, acc)
    nl.store(logits_ptr + rows[:, None] * E + experts[None, :], acc, mask=rows[:, None] < T)


def _ub_buffers(table: str) -> list:
    """(shape, element bytes) of every UB buffer in a kernel's ``buffers`` artifact."""
    import re
    return [(m.group(1), int(m.group(2)))
            for m in re.finditer(r"^\s+UB\.\d+\s+(\S+) x (\d+) B", table, re.M)]


def test_router_offsets_are_4_bytes_per_lane_and_fit_ub_at_block_h_256():
    T, H, E = 128, 512, 16
    rng = np.random.default_rng(0)
    x = rng.random((T, H)).astype(np.float16)
    w = rng.random((H, E)).astype(np.float16)
    logits = np.zeros((T, E), np.float32)
    k = router_logits.with_options(backend="reference")
    # The 910B-like part's UB is 192 KB: with i64 offsets the 64x256 offset tile alone
    # took 128 KB and the schedule raised OutOfResources; as i32 it took 64 KB; now the
    # offsets are affine (rows * H + h + cols) and the load is a strided block copy
    # (ir/passes/affine_access.py): no offsets tile at all.
    table = k.inspect(x, w, logits, T, H, E=E, BLOCK_T=64, BLOCK_H=256)["buffers"]
    ub = _ub_buffers(table)
    assert ("64x256", 4) not in ub and ("64x256", 8) not in ub
    assert all(size != 8 for _, size in ub)     # no 8-byte (i64) tile anywhere
    k[(T // 64,)](x, w, logits, T, H, E=E, BLOCK_T=64, BLOCK_H=256)
    np.testing.assert_allclose(logits, x.astype(np.float32) @ w.astype(np.float32),
                               rtol=1e-3)
