"""Triton's dtypes beyond the NPU's own: unsigned ints (uint8..uint64) and float64.

The op-by-op numbers are in the conformance table (tests/conformance/table.py, ``WIDER``):
both CPU tiers against numpy.  Here: the promotion and literal rules, launch arguments,
the f64 -> half rounding of the numba backend, and what the NPU presets and the Ascend C
emitter do with these dtypes (docs/semantics.md, "Unsigned ints and f64").
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import npujit.language as nl
from npujit import CompilationError, LaunchError, npu_kernel
from npujit.ir import types as T
from npujit.jit.binder import arg_signature

REF = dict(backend="reference")


@pytest.mark.parametrize("a,b,want", [
    (T.uint32, T.int32, T.uint32), (T.int32, T.uint32, T.uint32),   # equal width: unsigned
    (T.uint8, T.int32, T.int32), (T.int64, T.uint32, T.int64),      # wider wins
    (T.uint64, T.int8, T.uint64), (T.uint16, T.int16, T.uint16),
    (T.float64, T.float32, T.float64), (T.int64, T.float64, T.float64),
    (T.uint64, T.float16, T.float16), (T.float16, T.bfloat16, T.float32)])
def test_promotion_follows_triton(a, b, want):
    assert T.promote(a, b) == want


def test_dtype_introspection_of_the_new_types():
    assert nl.uint8.is_int_unsigned() and not nl.uint8.is_int_signed()
    assert nl.int8.is_int_signed() and not nl.int8.is_int_unsigned()
    assert nl.uint32.primitive_bitwidth == 32 and nl.float64.fp_mantissa_width == 52
    assert repr(nl.uint16) == "nl.uint16" and str(nl.float64) == "f64"


@npu_kernel
def mixed(a_ptr, b_ptr, c_ptr, d_ptr, ab_ptr, cd_ptr, lit_ptr, N: nl.constexpr):
    r = nl.arange(0, N)
    a = nl.load(a_ptr + r)                    # uint32
    b = nl.load(b_ptr + r)                    # int32
    c = nl.load(c_ptr + r)                    # uint8
    d = nl.load(d_ptr + r)                    # int32
    nl.static_assert((a + b).dtype == nl.uint32)
    nl.static_assert((c + d).dtype == nl.int32)
    nl.static_assert((c + 1).dtype == nl.uint8)
    nl.static_assert(nl.sum(c, 0).dtype == nl.uint32)
    nl.store(ab_ptr + r, (a + b) // 3 >> 1)   # unsigned: wraps, divides and shifts unsigned
    nl.store(cd_ptr + r, c + d + nl.sum(c, 0))   # the ui8 sum widens to ui32: no wrap at 256
    nl.store(lit_ptr + r, c * 2 + 255)        # a literal takes the tile's dtype and wraps


def test_mixed_signedness_in_a_kernel():
    n = 8
    a = np.array([0, 1, 7, 2**31, 2**32 - 1, 5, 100, 3], np.uint32)
    b = np.array([-1, -2, 3, 5, 1, -100, 0, -4], np.int32)
    c = np.array([0, 1, 128, 255, 200, 7, 9, 254], np.uint8)
    d = np.array([-300, 2, 3, 4, -5, 6, 70000, 8], np.int32)
    ab, cd, lit = np.zeros(n, np.uint32), np.zeros(n, np.int32), np.zeros(n, np.uint8)
    mixed.with_options(**REF)[(1,)](a, b, c, d, ab, cd, lit, N=n)
    with np.errstate(over="ignore"):
        s = a + b.astype(np.uint32)                       # C: i32 converts to u32
        np.testing.assert_array_equal(ab, (s // np.uint32(3)) >> np.uint32(1))
        np.testing.assert_array_equal(cd, c.astype(np.int32) + d + int(c.astype(np.int64).sum()))
        np.testing.assert_array_equal(lit, (c * np.uint8(2) + np.uint8(255)).astype(np.uint8))


@npu_kernel
def shift_right(x_ptr, y_ptr, out_ptr, N: nl.constexpr):
    r = nl.arange(0, N)
    nl.store(out_ptr + r, nl.load(x_ptr + r) >> nl.load(y_ptr + r))


def test_right_shift_is_arithmetic_when_its_left_operand_is_signed():
    """int16 >> uint16 computes in uint16 (equal width: unsigned wins) but shifts the bits
    arithmetically, as Triton's ``>>`` picks the shift by the left operand's signedness."""
    x = np.array([-86, 5, -1, 300, -32768], np.int16)
    y = np.array([1, 2, 15, 3, 4], np.uint16)
    out = np.zeros(5, np.uint16)
    shift_right.with_options(**REF)[(1,)](x, y, out, N=5)
    np.testing.assert_array_equal(out.view(np.int16), x >> y.astype(np.int16))
    shift_right.with_options(**REF)[(1,)](x.view(np.uint16), y, out, N=5)   # logical
    np.testing.assert_array_equal(out, x.view(np.uint16) >> y)


@npu_kernel
def remainder(x_ptr, y_ptr, out_ptr):
    nl.store(out_ptr, nl.load(x_ptr) % nl.load(y_ptr))


def test_division_of_ints_of_different_signedness_is_refused():
    with pytest.raises(CompilationError, match=r"Cannot use /, //, or % with nl.int16 and "
                                               r"nl.uint16 because they have different signedness"):
        remainder.with_options(**REF)[(1,)](np.ones(1, np.int16), np.ones(1, np.uint16),
                                            np.ones(1, np.int16))


@npu_kernel
def add_literal(x_ptr, VALUE: nl.constexpr):
    nl.store(x_ptr, nl.load(x_ptr) + VALUE)


def test_a_literal_outside_an_unsigned_tile_is_a_clear_error():
    with pytest.raises(CompilationError, match=r"integer literal 300 is out of range for ui8 .*; cast the tensor first"):
        add_literal.with_options(**REF)[(1,)](np.zeros(1, np.uint8), VALUE=300)
    with pytest.raises(CompilationError, match="integer literal -1 is out of range for ui64"):
        add_literal.with_options(**REF)[(1,)](np.zeros(1, np.uint64), VALUE=-1)


@npu_kernel
def store_u64(out_ptr, n):
    nl.store(out_ptr, n.to(nl.uint64))


def test_ints_up_to_2_pow_64_are_ui64_arguments():
    assert arg_signature("n", 2**63) == ("S", "ui64")
    assert arg_signature("n", 2**64 - 1) == ("S", "ui64")
    assert arg_signature("n", 2**63 - 1) == ("S", "i64")
    with pytest.raises(LaunchError, match="argument 'n': integer 18446744073709551616 does not fit"):
        arg_signature("n", 2**64)
    k = store_u64.with_options(**REF)
    out = np.zeros(1, np.uint64)
    for value in (2**64 - 1, 5, 2**63 + 3, 2**40):     # twice each: cold, then the warm path
        for _ in range(2):
            out[0] = 0
            k[(1,)](out, value)
            assert int(out[0]) == value


def test_float64_arrays_are_accepted():
    x = np.linspace(-1.0, 1.0, 8)
    add_literal.with_options(**REF)[(1,)](x, VALUE=0.1)
    assert x[0] == -1.0 + 0.1          # in f64: an f32 step would give -0.8999999761581421


def test_numba_rounds_f64_to_half_once():
    """f64 -> f16/bf16 rounds once to nearest even, as numpy / ml_dtypes (the reference) do;
    through a nearest-even f32 it would round twice and err where the f32 lands on a tie."""
    from npujit.backends.numba import halfprec as hp
    from npujit.backends.numba import scalar_lib as sl
    tie16, tie_bf = 2.0 ** -11, 2.0 ** -8          # half an ulp at 1.0 of f16 / bf16
    xs = [1 + tie16 + 2.0 ** -40, 1 + tie16 - 2.0 ** -40, 1 + tie16, -(3 + 2 * tie16 + 2.0 ** -45),
          1 + tie_bf + 2.0 ** -40, 1 + tie_bf - 2.0 ** -40, 1 + 3 * tie_bf, 1e300, -1e-300,
          65519.99, 65520.0, 0.1, float("inf"), float("nan"), 3.0e38 * 2]
    for x in xs:
        odd = sl.f64_to_f32_odd(x)
        got16, got_bf = float(hp.round_f16(odd)), float(hp.round_bf16(odd))
        with np.errstate(over="ignore"):      # 1e300 is inf in both
            want16 = float(np.float16(x))
            want_bf = float(np.float64(x).astype(ml_dtypes.bfloat16))
        assert got16 == want16 or (np.isnan(got16) and np.isnan(want16)), x
        assert got_bf == want_bf or (np.isnan(got_bf) and np.isnan(want_bf)), x


@npu_kernel
def square_mm(a_ptr, c_ptr, M: nl.constexpr):
    r = nl.arange(0, M)
    a = nl.load(a_ptr + r[:, None] * M + r[None, :])
    nl.store(c_ptr + r[:, None] * M + r[None, :], nl.dot(a, a))


@npu_kernel
def vadd(a_ptr, c_ptr, M: nl.constexpr):
    r = nl.arange(0, M)
    nl.store(c_ptr + r, nl.load(a_ptr + r) + nl.load(a_ptr + r))


def test_f64_in_the_cube_of_the_910b_preset_is_refused_with_what_to_do():
    a = np.ones((16, 16))
    with pytest.raises(Exception, match=r"(?s)mmad 16x16x16 f64 @test_wider_dtypes.py:\d+.*"
                                        r"Cube has no rate for dtype 'f64'.*a\.to\(nl\.float32\)"):
        square_mm.with_options(**REF).simulate(a, np.zeros_like(a), M=16, grid=(1,),
                                               numerics=False)


def test_vector_ops_on_the_new_dtypes_are_charged_by_bytes():
    """No f64 or unsigned vector ALU on the presets: their vector instructions cost what
    an op on elements of their size costs (f64 as i64, ui32 as i32), a lower bound."""
    cycles = {}
    for dt in (np.float64, np.int64, np.uint32, np.int32):
        a = np.ones(256, dt)
        rep = vadd.with_options(**REF).simulate(a, np.zeros_like(a), M=256, grid=(1,),
                                                numerics=False)
        cycles[np.dtype(dt).name] = rep.cycles
    assert cycles["float64"] == cycles["int64"] > cycles["int32"] == cycles["uint32"]


@pytest.mark.parametrize("dt,name", [(np.float64, "float64"), (np.uint16, "uint16")])
def test_the_ascendc_emitter_refuses_f64_and_unsigned_tiles(dt, name):
    a = np.ones(256, dt)
    with pytest.raises(NotImplementedError,
                       match=rf"cannot lower npu.load at test_wider_dtypes.py:\d+ .*nl.{name} "
                             "tiles are not emitted"):
        vadd.with_options(backend="ascendc-twin")[(1,)](a, np.zeros_like(a), M=256)


@npu_kernel
def umulhi_kernel(a_ptr, b_ptr, out_ptr, N: nl.constexpr):
    r = nl.arange(0, N)
    nl.store(out_ptr + r, nl.umulhi(nl.load(a_ptr + r), nl.load(b_ptr + r)))


def test_umulhi_on_uint32():
    a = np.array([0, 1, 2**32 - 1, 123456789], np.uint32)
    b = np.array([5, 2**32 - 1, 2**32 - 1, 987654321], np.uint32)
    out = np.zeros(4, np.uint32)
    umulhi_kernel.with_options(**REF)[(1,)](a, b, out, N=4)
    want = (a.astype(object) * b.astype(object)) >> 32
    np.testing.assert_array_equal(out, want.astype(np.uint32))


@npu_kernel
def add_to_i32(out_ptr, VALUE: nl.constexpr):
    nl.store(out_ptr, nl.full((), 32, nl.int32) + VALUE)


def test_a_literal_next_to_an_i32_tile_takes_its_dtype_or_is_refused_as_in_triton():
    out = np.zeros(1, np.int32)
    add_to_i32.with_options(**REF)[(1,)](out, VALUE=2**31 - 33)
    assert out[0] == 2**31 - 1
    with pytest.raises(CompilationError, match=r"integer literal 2147483648 is out of range "
                                               r"for i32 .*x\.to\(nl\.int64\)"):
        add_to_i32.with_options(**REF)[(1,)](out, VALUE=2**31)


def test_an_int_beyond_64_bits_is_an_overflow_error_naming_the_argument():
    for v in (2**64, -2**63 - 1):
        with pytest.raises(OverflowError, match=rf"argument 'n': integer {v} does not fit in "
                                                r"64 bits") as e:
            store_u64.with_options(**REF)[(1,)](np.zeros(1, np.uint64), v)
        assert isinstance(e.value, LaunchError)
    out = np.zeros(1, np.uint64)
    store_u64.with_options(**REF)[(1,)](out, 2**64 - 1)     # the largest that fits
    assert out[0] == 2**64 - 1
