"""Arrays whose layout does not fit what the kernel does with them: misaligned data,
read-only outputs, strided views addressed as if contiguous.  Each is a LaunchError naming
the argument (and the kernel's line); a stride-aware kernel takes strided views."""
from __future__ import annotations

import numpy as np
import pytest

import npujit.language as nl
from npujit import LaunchError, npu_kernel

BACKENDS = ["reference", "llvm", "numba"]


@npu_kernel
def copy(x_ptr, out_ptr, n, BLOCK: nl.constexpr):
    offs = nl.arange(0, BLOCK)
    nl.store(out_ptr + offs, nl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


@npu_kernel
def copy_rows(x_ptr, out_ptr, stride_r, stride_c, R: nl.constexpr, C: nl.constexpr):
    r = nl.arange(0, R)[:, None]
    c = nl.arange(0, C)[None, :]
    nl.store(out_ptr + r * C + c, nl.load(x_ptr + r * stride_r + c * stride_c))


@npu_kernel
def copy_block(x_ptr, out_ptr, R: nl.constexpr, C: nl.constexpr):
    src = nl.make_block_ptr(x_ptr, shape=(R, C), strides=(C, 1), offsets=(0, 0),
                            block_shape=(R, C))
    nl.store(out_ptr + nl.arange(0, R)[:, None] * C + nl.arange(0, C)[None, :], nl.load(src))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("block", [False, True], ids=["pointer", "block-pointer"])
def test_misaligned_array(backend, block):
    buf = np.zeros(4 * 16 + 1, np.uint8)
    x = np.frombuffer(buf.data, np.float32, count=16, offset=1)
    assert not x.flags.aligned
    with pytest.raises(LaunchError, match="argument 'x_ptr': its data is not aligned"):
        if block:
            copy_block.with_options(backend=backend)[(1,)](x.reshape(4, 4),
                                                           np.zeros(16, np.float32), R=4, C=4)
        else:
            copy.with_options(backend=backend)[(1,)](x, np.zeros(16, np.float32), 16,
                                                     BLOCK=16)


@pytest.mark.parametrize("backend", BACKENDS)
def test_read_only_output(backend):
    x = np.arange(16, dtype=np.float32)
    out = np.zeros(16, np.float32)
    out.flags.writeable = False
    k = copy.with_options(backend=backend)
    with pytest.raises(LaunchError, match=r"argument 'out_ptr' is read-only, but kernel "
                                          r"'copy' stores to it at .*test_array_layout.py:18"):
        k[(1,)](x, out, 16, BLOCK=16)
    x.flags.writeable = False            # a read-only input is fine, on both paths
    for _ in range(2):
        out2 = np.zeros(16, np.float32)
        k[(1,)](x, out2, 16, BLOCK=16)
        np.testing.assert_array_equal(out2, x)
    with pytest.raises(LaunchError, match="'out_ptr' is read-only"):   # warm path too
        k[(1,)](x, out, 16, BLOCK=16)


@pytest.mark.parametrize("backend", BACKENDS)
def test_strided_view_addressed_as_contiguous(backend):
    x = np.arange(32, dtype=np.float32)[::2]
    with pytest.raises(LaunchError, match=r"argument 'x_ptr' is a non-contiguous view, .*"
                                          r"test_array_layout.py:18 .*np.ascontiguousarray"):
        copy.with_options(backend=backend)[(1,)](x, np.zeros(16, np.float32), 16, BLOCK=16)


@pytest.mark.parametrize("backend", BACKENDS)
def test_strided_view_with_its_strides_is_read_right(backend):
    base = np.arange(64, dtype=np.float32).reshape(8, 8)
    x = base[::2, 1::2]                              # 4x4, strides (16, 2) elements
    out = np.zeros((4, 4), np.float32)
    s = x.strides[0] // x.itemsize, x.strides[1] // x.itemsize
    copy_rows.with_options(backend=backend)[(1,)](x, out, s[0], s[1], R=4, C=4)
    np.testing.assert_array_equal(out, x)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_column_major_array_is_its_storage_on_both_launch_paths(backend):
    # No gaps, so (as in Triton) its pointer addresses the storage in memory order: the
    # kernel's linear writes land in it, never in a temporary copy, cold or warm.
    x = np.arange(16, dtype=np.float32)
    k = copy.with_options(backend=backend)
    for _ in range(2):
        out = np.zeros((4, 4), np.float32, order="F")
        k[(1,)](x, out, 16, BLOCK=16)
        np.testing.assert_array_equal(out.ravel(order="F"), x)
    gapped = np.zeros((4, 8), np.float32, order="F")[:, ::2]     # F-ordered, with gaps
    with pytest.raises(LaunchError, match=r"argument 'out_ptr' is a non-contiguous view"):
        k[(1,)](x, gapped, 16, BLOCK=16)
