"""The fp8 dtypes (nl.float8e4nv = OCP E4M3FN, nl.float8e5 = OCP E5M2; docs/semantics.md,
"fp8").  The op-by-op numbers are in the conformance table (tests/conformance/table.py,
``_FP8_CASES``); here: the bit-level codec of the numba backend against ml_dtypes, the
overflow and NaN rules on both CPU tiers, launch arguments, promotion, and what the NPU
presets and the Ascend C emitter do with fp8 tiles.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import npujit
import npujit.language as nl
from npujit import CompilationError, LaunchError, npu_kernel
from npujit.ir import types as T

E4, E5 = ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2
F32 = np.float32


@pytest.mark.parametrize("fp8", [E4, E5], ids=["e4m3", "e5m2"])
def test_fp8_codec_matches_ml_dtypes_bit_for_bit(fp8):
    """Every fp8 value, the f32 midpoints between neighbours (the ties) and their f32
    neighbours, values past the largest finite one, and 64K random f32 bit patterns."""
    from numba import njit

    from npujit.backends.numba import halfprec as hp

    name = "e4m3" if fp8 is E4 else "e5m2"
    encode, rounder = getattr(hp, f"f32_to_{name}_bits"), getattr(hp, f"round_{name}")
    decode = getattr(hp, f"{name}_bits_to_f32")

    @njit(cache=True)
    def apply(xs, bits, rounded, codes, decoded):
        for i in range(xs.shape[0]):
            bits[i] = encode(xs[i])
            rounded[i] = rounder(xs[i])
        for i in range(codes.shape[0]):
            decoded[i] = decode(codes[i])
    codes = np.arange(256, dtype=np.uint8)
    values = codes.view(fp8).astype(F32)
    finite = np.sort(np.unique(values[np.isfinite(values)]))
    mids = ((finite[:-1].astype(np.float64) + finite[1:]) / 2).astype(F32)
    top = float(ml_dtypes.finfo(fp8).max)
    rng = np.random.default_rng(5)
    xs = np.concatenate([values, mids, np.nextafter(mids, np.inf), np.nextafter(mids, -np.inf),
                         np.array([top * 1.0624, top * 1.0626, top * 1.2, 1e30, np.inf], F32),
                         -np.array([top * 1.0624, top * 1.0626, 1e30], F32),
                         rng.integers(0, 1 << 32, 1 << 16, dtype=np.uint64)
                         .astype(np.uint32).view(F32)])
    bits, rounded = np.empty(xs.size, np.uint8), np.empty(xs.size, F32)
    decoded = np.empty(256, F32)
    apply(xs, bits, rounded, codes, decoded)
    with np.errstate(all="ignore"):
        want = xs.astype(fp8)
    np.testing.assert_array_equal(bits, want.view(np.uint8))
    np.testing.assert_array_equal(rounded, want.astype(F32))
    np.testing.assert_array_equal(decoded, values)


@npu_kernel
def scale_and_round(x_ptr, s, y4_ptr, y5_ptr, sum_ptr, N: nl.constexpr):
    offs = nl.arange(0, N)
    x = nl.load(x_ptr + offs)                      # f32
    nl.store(y4_ptr + offs, (x * s).to(nl.float8e4nv))
    y5 = (x * s).to(nl.float8e5)
    nl.store(y5_ptr + offs, y5 + y5)               # fp8 arithmetic: f32 add, one rounding
    nl.store(sum_ptr, nl.sum(y5, axis=0))          # an fp8 sum rounds once to fp8


@pytest.mark.parametrize("backend", ["reference", "numba"])
def test_overflow_nan_and_rounding_follow_ml_dtypes(backend):
    """Beyond the largest finite value E4M3FN gives NaN and E5M2 inf (ml_dtypes' and
    torch's rule); NaN stays NaN; ties round to even."""
    x = np.array([1.0, -1.0, 0.0, -0.0, 1.0625, 1.1875, 232.0, 240.0, 1e6, -1e6,
                  np.inf, np.nan, 3.0e-3, -7e-6, 20000.0, 40000.0], F32)
    y4, y5 = np.zeros(16, E4), np.zeros(16, E5)
    s = np.zeros(1, E5)
    k = scale_and_round.with_options(backend=backend)
    k[(1,)](x, 2.0, y4, y5, s, N=16)
    with np.errstate(all="ignore"):
        xs = x * F32(2.0)
        want4 = xs.astype(E4)
        h5 = xs.astype(E5)
        want5 = (h5.astype(F32) + h5.astype(F32)).astype(E5)
        want_sum = h5.astype(F32).astype(np.float64).sum().astype(F32).astype(E5)
    np.testing.assert_array_equal(y4.view(np.uint8), want4.view(np.uint8))
    np.testing.assert_array_equal(y5.view(np.uint8), want5.view(np.uint8))
    assert np.isnan(want4.astype(F32)[8]) and np.isinf(want5.astype(F32)[8])   # the rules
    np.testing.assert_array_equal(s.astype(F32), [want_sum.astype(F32)])


@npu_kernel
def fp8_matmul(a_ptr, b_ptr, c_ptr, M: nl.constexpr, N: nl.constexpr, K: nl.constexpr):
    m, n, k = nl.arange(0, M), nl.arange(0, N), nl.arange(0, K)
    a = nl.load(a_ptr + m[:, None] * K + k[None, :])
    b = nl.load(b_ptr + k[:, None] * N + n[None, :])
    nl.store(c_ptr + m[:, None] * N + n[None, :], nl.dot(a, b))


@pytest.mark.parametrize("backend", ["reference", "numba"])
def test_fp8_dot_accumulates_in_f32(backend):
    rng = np.random.default_rng(2)
    a = rng.standard_normal((16, 32)).astype(F32).astype(E5)
    b = rng.standard_normal((32, 16)).astype(F32).astype(E4)   # mixed fp8s: promoted to f16
    c = np.zeros((16, 16), F32)
    fp8_matmul.with_options(backend=backend)[(1,)](a, b, c, M=16, N=16, K=32)
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c, want, rtol=1e-6, atol=1e-6)


def test_fp8_promotion_and_introspection_follow_triton():
    assert T.promote(T.float8e4nv, T.float8e4nv) == T.float8e4nv
    assert T.promote(T.float8e4nv, T.float8e5) == T.float16
    assert T.promote(T.float8e5, T.float16) == T.float16
    assert T.promote(T.float8e5, T.bfloat16) == T.float32
    assert T.promote(T.float8e4nv, T.int32) == T.float8e4nv
    assert (nl.float8e4nv.primitive_bitwidth, nl.float8e4nv.fp_mantissa_width,
            nl.float8e4nv.exponent_bias) == (8, 3, 7)
    assert (nl.float8e5.fp_mantissa_width, nl.float8e5.exponent_bias) == (2, 15)
    assert nl.float16.exponent_bias == 15 and nl.float32.exponent_bias == 127
    assert repr(nl.float8e5) == "nl.float8e5" and str(nl.float8e4nv) == "f8E4M3FN"


def test_triton_fp8_variants_npujit_lacks_say_which_it_has():
    with pytest.raises(AttributeError, match=r"float8e4b15.*float8e4nv \(OCP E4M3FN\) and "
                                             r"float8e5"):
        nl.float8e4b15


def test_reinterpret_views_bits_as_fp8_without_a_copy():
    bits = np.array([0x38, 0xB8, 0x7F, 0x00], np.uint8)      # 1, -1, NaN, 0 in E4M3FN
    f8 = npujit.reinterpret(bits, nl.float8e4nv)
    assert f8.dtype == E4 and np.shares_memory(f8, bits)
    np.testing.assert_array_equal(f8.astype(F32), [1.0, -1.0, np.nan, 0.0])
    out = np.zeros(4, np.uint8)
    scale_bits(bits, npujit.reinterpret(out, nl.float8e4nv), N=4)
    np.testing.assert_array_equal(out, (bits.view(E4).astype(F32) * 2).astype(E4).view(np.uint8))
    with pytest.raises(TypeError, match=r"nl.float8e4nv elements are 1 B but the array's "
                                        r"float32 elements are 4 B"):
        npujit.reinterpret(np.zeros(2, F32), nl.float8e4nv)


@npu_kernel(backend="numba")
def _scale(x_ptr, y_ptr, N: nl.constexpr):
    offs = nl.arange(0, N)
    nl.store(y_ptr + offs, nl.load(x_ptr + offs) * 2)


def scale_bits(bits, out, N):
    _scale[(1,)](npujit.reinterpret(bits, nl.float8e4nv), out, N=N)


def test_torch_fp8_tensors_are_kernel_arguments():
    torch = pytest.importorskip("torch")
    x = torch.tensor([1.5, -3.0, 448.0, 0.125]).to(torch.float8_e4m3fn)
    y = torch.zeros(4, dtype=torch.float8_e5m2)
    _cast_copy(x, y, N=4)
    assert torch.equal(y.float(), x.float().to(torch.float8_e5m2).float())


@npu_kernel(backend="reference")
def _cast_copy(x_ptr, y_ptr, N: nl.constexpr):
    offs = nl.arange(0, N)
    nl.store(y_ptr + offs, nl.load(x_ptr + offs).to(nl.float8e5))


def test_unsupported_fp8_arrays_are_refused_naming_the_dtypes_that_are():
    with pytest.raises(LaunchError, match=r"argument 'x_ptr': arrays of dtype "
                                          r"float8_e4m3b11fnuz are not supported.*float8e4nv"):
        _scale[(1,)](np.zeros(4, ml_dtypes.float8_e4m3b11fnuz), np.zeros(4, E4), N=4)


@npu_kernel(backend="reference")
def _fp8_atomic(x_ptr, v):
    nl.atomic_add(x_ptr, v)


def test_atomics_on_fp8_are_refused_as_in_triton():
    with pytest.raises(CompilationError, match=r"atomic_add on f8E5M2 arrays is not supported"
                                               r".*keep the sums in an f32 array"):
        _fp8_atomic[(1,)](np.zeros(1, E5), 1.0)


def test_the_cube_of_the_910b_preset_refuses_fp8_and_says_what_to_do():
    a = np.ones((16, 32), E4)
    b = np.ones((32, 16), E4)
    with pytest.raises(Exception, match=r"(?s)mmad 16x16x32 f8E4M3FN .*Cube has no rate for "
                                        r"dtype 'f8E4M3FN'.*a\.to\(nl\.float32\)"):
        fp8_matmul.with_options(backend="reference").simulate(
            a, b, np.zeros((16, 16), F32), M=16, N=16, K=32, grid=(1,), numerics=False)


def test_fp8_vector_ops_are_charged_as_bytes_and_the_emitter_refuses_them():
    cycles = {}
    for dt in (E4, E5, np.int8):
        x = np.ones(256, dt)
        rep = _scale.with_options(backend="reference").simulate(x, np.zeros_like(x), N=256,
                                                                 grid=(1,), numerics=False)
        cycles[np.dtype(dt).name] = rep.cycles
    assert cycles["float8_e4m3fn"] == cycles["float8_e5m2"] == cycles["int8"]
    with pytest.raises(NotImplementedError, match=r"cannot lower npu.load at test_fp8.py:\d+ .*"
                                                  r"nl.float8e4nv tiles are not emitted \(.*no fp8"):
        _scale.with_options(backend="ascendc-twin")[(1,)](np.ones(256, E4), np.zeros(256, E4),
                                                          N=256)
