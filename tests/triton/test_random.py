"""``tl.rand`` and its family (npujit/language/random.py) against a numpy Philox-4x32-10
written from the paper's definition; low-memory dropout as Triton's tutorial writes it."""
from __future__ import annotations

import numpy as np
import pytest

import npujit.triton as triton
import npujit.triton.language as tl
from npujit.errors import CompilationError

M32 = 0xFFFFFFFF


def philox_numpy(seed: int, offsets: np.ndarray, rounds: int = 10):
    """Philox-4x32: counter (offset low, offset high, 0, 0), key (seed low, seed high)."""
    off = offsets.astype(np.int64)
    c = [(off & M32).astype(np.uint64), ((off >> 32) & M32).astype(np.uint64),
         np.zeros(off.shape, np.uint64), np.zeros(off.shape, np.uint64)]
    k0, k1 = np.uint64(seed & M32), np.uint64((seed >> 32) & M32)
    a, b = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
    for _ in range(rounds):
        pa, pb = a * c[0], b * c[2]                  # 64-bit products of 32-bit factors
        c = [(pb >> np.uint64(32)) ^ c[1] ^ k0, pb & np.uint64(M32),
             (pa >> np.uint64(32)) ^ c[3] ^ k1, pa & np.uint64(M32)]
        k0 = (k0 + np.uint64(0x9E3779B9)) & np.uint64(M32)
        k1 = (k1 + np.uint64(0xBB67AE85)) & np.uint64(M32)
    return [v.astype(np.uint32) for v in c]


def uniform_numpy(u: np.ndarray) -> np.ndarray:
    x = u.view(np.int32)
    x = np.where(x < 0, ~x, x)
    return x.astype(np.float32) * np.float32(4.6566127342e-10)


@triton.jit
def _streams(seed, base, ints_ptr, four_ptr, uni_ptr, nrm_ptr, N: tl.constexpr):
    i = tl.arange(0, N)
    offs = base + i
    tl.store(ints_ptr + i, tl.randint(seed, offs))
    a, b, c, d = tl.randint4x(seed, offs)
    tl.store(four_ptr + i * 4, a)
    tl.store(four_ptr + i * 4 + 1, b)
    tl.store(four_ptr + i * 4 + 2, c)
    tl.store(four_ptr + i * 4 + 3, d)
    tl.store(uni_ptr + i, tl.rand(seed, offs))
    tl.store(nrm_ptr + i, tl.randn(seed, offs))


@pytest.mark.parametrize("seed,base", [(123, 0), (-5, 1000), (2**40 + 7, 3), (7, 2**33 + 5)],
                         ids=["small", "negative-seed", "64-bit-seed", "64-bit-offset"])
def test_streams_are_philox_4x32_10(backend, seed, base):
    n = 64
    ints, four = np.zeros(n, np.uint32), np.zeros((n, 4), np.uint32)
    uni, nrm = np.zeros(n, np.float32), np.zeros(n, np.float32)
    _streams.with_options(backend=backend)[(1,)](seed, base, ints, four, uni, nrm, N=n)
    want = philox_numpy(seed, base + np.arange(n))
    np.testing.assert_array_equal(ints, want[0])
    np.testing.assert_array_equal(four, np.stack(want, 1))
    np.testing.assert_array_equal(uni, uniform_numpy(want[0]))
    assert 0.0 <= uni.min() and uni.max() < 1.0
    u1 = np.maximum(np.float32(1e-7), uniform_numpy(want[0])).astype(np.float64)
    u2 = uniform_numpy(want[1]).astype(np.float64)
    np.testing.assert_allclose(nrm, np.sqrt(-2 * np.log(u1)) * np.cos(2 * np.pi * u2),
                               rtol=1e-5, atol=1e-5)


@triton.jit
def _dropout(x_ptr, out_ptr, n, p, seed, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    keep = tl.rand(seed, offs) > p
    tl.store(out_ptr + offs, tl.where(keep, x / (1 - p), 0.0), mask=mask)


def test_low_memory_dropout_regenerates_its_mask_from_the_seed():
    n, p = 5000, 0.3
    x = np.random.default_rng(0).uniform(1, 2, n).astype(np.float32)
    outs = []
    for seed in (42, 42, 43):
        out = np.zeros(n, np.float32)
        _dropout[(triton.cdiv(n, 1024),)](x, out, n, p, seed, BLOCK=1024)
        outs.append(out)
    np.testing.assert_array_equal(outs[0], outs[1])                 # same seed, same mask
    assert (outs[0] != outs[2]).any()
    keep = uniform_numpy(philox_numpy(42, np.arange(n))[0]) > np.float32(p)
    np.testing.assert_allclose(outs[0], np.where(keep, x / np.float32(1 - p), 0), rtol=1e-6)
    assert abs(keep.mean() - (1 - p)) < 0.03


@triton.jit
def _float_offsets(out_ptr, N: tl.constexpr):
    tl.store(out_ptr + tl.arange(0, N), tl.rand(1, tl.arange(0, N) * 0.5))


def test_float_offsets_are_refused_naming_the_argument():
    with pytest.raises(CompilationError, match="the offset must be an integer"):
        _float_offsets[(1,)](np.zeros(8, np.float32), N=8)
