"""``tl.make_tensor_descriptor``: block loads and stores at offsets, with the padding for
elements outside the logical shape and nothing written outside it, against numpy on the
reference tier, numba and the scheduled simulation; bad descriptors are refused by name."""
from __future__ import annotations

import numpy as np
import pytest

import npujit.triton as triton
import npujit.triton.language as tl
from npujit.errors import CompilationError


@triton.jit
def _transpose_twice(in_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr,
                     PAD: tl.constexpr):
    src = tl.make_tensor_descriptor(in_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN],
                                    padding_option=PAD)
    dst = tl.make_tensor_descriptor(out_ptr, [N, M], [M, 1], [BN, BM])
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    tile = src.load([pid_m * BM, pid_n * BN])
    tl.store_tensor_descriptor(dst, [pid_n * BN, pid_m * BM], tl.trans(tile) * 2)


def _run(kern, x, pad="zero", BM=8, BN=16):
    M, N = x.shape
    y = np.full((N, M), -1, np.float32)
    grid = (triton.cdiv(M, BM), triton.cdiv(N, BN))
    kern[grid](x, y, M, N, BM=BM, BN=BN, PAD=pad)
    return y


def test_ragged_blocks_write_only_inside_the_shape(backend):
    x = np.arange(13 * 21, dtype=np.float32).reshape(13, 21)   # neither a multiple of a block
    y = _run(_transpose_twice.with_options(backend=backend), x)
    np.testing.assert_array_equal(y, 2 * x.T)


@triton.jit
def _padded_sum(in_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr, PAD: tl.constexpr):
    src = tl.make_tensor_descriptor(in_ptr, [M, N], [N, 1], [BM, BN], padding_option=PAD)
    tile = tl.load_tensor_descriptor(src, [0, 0])
    out = tl.make_tensor_descriptor(out_ptr, [BM], [1], [BM])
    out.store([0], tl.sum(tile, axis=1))


@pytest.mark.parametrize("pad", ["zero", "nan"])
def test_padding_option_fills_what_lies_outside(backend, pad):
    x = np.ones((3, 5), np.float32)
    out = np.zeros(4, np.float32)
    _padded_sum.with_options(backend=backend)[(1,)](x, out, 3, 5, BM=4, BN=8, PAD=pad)
    fill = 0.0 if pad == "zero" else np.nan
    want = np.where(np.arange(4) < 3, 5 + 3 * fill, 8 * fill)   # row sums of the padded tile
    np.testing.assert_array_equal(out, want.astype(np.float32))


def test_a_descriptor_block_simulates_as_one_copy_and_matches_numpy():
    x = np.arange(16 * 32, dtype=np.float32).reshape(16, 32)
    y = np.full((32, 16), -1, np.float32)
    kern = _transpose_twice.with_options(backend="reference")
    report = kern.simulate(x, y, 16, 32, grid=(2, 2), BM=8, BN=16, PAD="zero")
    np.testing.assert_array_equal(y, 2 * x.T)
    assert report.cycles > 0


@triton.jit
def _bad_stride(in_ptr, N):
    d = tl.make_tensor_descriptor(in_ptr, [N, N], [1, N], [4, 4])
    d.store([0, 0], d.load([0, 0]))


@triton.jit
def _bad_block(in_ptr, N):
    d = tl.make_tensor_descriptor(in_ptr, [N, N], [N, 1], [4, N])
    d.store([0, 0], d.load([0, 0]))


@triton.jit
def _bad_offsets(in_ptr, N):
    d = tl.make_tensor_descriptor(in_ptr, [N, N], [N, 1], [4, 4])
    d.store([0, 0], d.load([0]))


@triton.jit
def _atomic_on_descriptor(in_ptr, N):
    d = tl.make_tensor_descriptor(in_ptr, [N, N], [N, 1], [4, 4])
    d.atomic_add([0, 0], d.load([0, 0]))


@pytest.mark.parametrize("kern, message", [
    (_bad_stride, "the last stride must be the constant 1"),
    (_bad_block, "block_shape entries must be positive constant ints"),
    (_bad_offsets, r"give one offset per axis as a list"),
    (_atomic_on_descriptor, r"tensor descriptor \.atomic_add is not supported"),
])
def test_bad_descriptors_are_refused_with_the_reason(kern, message):
    with pytest.raises(CompilationError, match=message):
        kern.with_options(backend="reference")[(1,)](np.zeros((8, 8), np.float32), 8)


@triton.jit
def _narrow_block(x_ptr):
    desc = tl.make_tensor_descriptor(x_ptr, [64, 64], [64, 1], [4, 2])
    desc.load([0, 0])


def test_a_block_row_under_16_bytes_is_refused_with_triton_s_words():
    x = np.zeros((64, 64), np.int32)
    with pytest.raises(CompilationError) as e:
        _narrow_block.with_options(backend="reference")[(1,)](x)
    assert isinstance(e.value.__cause__, ValueError)
    assert ("Descriptor block shape must have at least 16 bytes in the last dimension: "
            "block_shape [4, 2] of nl.int32 has 8 B rows") in str(e.value.__cause__)
