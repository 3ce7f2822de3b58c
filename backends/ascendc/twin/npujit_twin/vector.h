// GM <-> UB copies and the vector unit's count-form instructions (all operands in UB).
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>

#include "memory.h"

namespace AscendC {

struct DataCopyExtParams {
  uint16_t blockCount = 1;
  uint32_t blockLen = 0;     // bytes per block
  uint32_t srcStride = 0;
  uint32_t dstStride = 0;
  uint32_t rsv = 0;
};

template <typename T> struct DataCopyPadExtParams {
  bool isPad = false;
  uint8_t leftPadding = 0;
  uint8_t rightPadding = 0;  // elements
  T paddingValue = T();
};

}  // namespace AscendC

namespace npujit_twin {

template <typename T> inline void check_ub(const AscendC::LocalTensor<T>& t, uint32_t count, const char* op) {
  if (AscendC::memory_of(t.GetPosition()) != AscendC::Memory::UB) {
    twin_fail(std::string(op) + " needs UB operands, got one at " + AscendC::position_name(t.GetPosition()));
  }
  if (t.ByteOffset() % 32 != 0) {
    twin_fail(std::string(op) + ": UB operand at byte " + std::to_string(t.ByteOffset()) + " is not 32 B aligned");
  }
  if (count > t.GetSize()) {
    twin_fail(std::string(op) + " of " + std::to_string(count) + " elements on a tensor of " +
              std::to_string(t.GetSize()));
  }
}

template <typename T> inline void check_granule(uint32_t count, const char* op) {
  if (count * sizeof(T) % 32 != 0) {
    twin_fail(std::string(op) + " moves " + std::to_string(count * sizeof(T)) +
              " B, not a multiple of 32 B (the device rounds it down); use DataCopyPad for a ragged length");
  }
}

}  // namespace npujit_twin

namespace AscendC {

// GM -> UB, whole 32-byte blocks only.
template <typename T> inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, uint32_t count) {
  npujit_twin::check_ub(dst, count, "DataCopy");
  npujit_twin::check_granule<T>(count, "DataCopy");
  npujit_twin::check_gm(src.GetPhyAddr(), count * sizeof(T), "DataCopy GM->UB");
  std::memcpy(&dst.at(0), src.GetPhyAddr(), count * sizeof(T));
}

// UB -> GM, whole 32-byte blocks only.
template <typename T> inline void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, uint32_t count) {
  npujit_twin::check_ub(src, count, "DataCopy");
  npujit_twin::check_granule<T>(count, "DataCopy");
  npujit_twin::check_gm(dst.GetPhyAddr(), count * sizeof(T), "DataCopy UB->GM");
  npujit_twin::write_gm(dst.GetPhyAddr(), &src.at(0), count, "DataCopy UB->GM");
}

// GM -> UB of any byte length: each block lands 32 B aligned in UB; the bytes between the
// block's end and the next 32 B boundary get paddingValue when isPad, else stay garbage
// (the twin writes 0xA5 there so a kernel that reads them is caught).
template <typename T>
inline void DataCopyPad(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyExtParams& p,
                        const DataCopyPadExtParams<T>& pad) {
  const uint32_t len = p.blockLen / sizeof(T);
  const uint32_t padded = (p.blockLen + 31) / 32 * 32 / sizeof(T);
  if (p.blockLen % sizeof(T) != 0) npujit_twin::twin_fail("DataCopyPad: blockLen is not a whole number of elements");
  if (pad.isPad && pad.rightPadding != padded - len) {
    npujit_twin::twin_fail("DataCopyPad: rightPadding " + std::to_string(pad.rightPadding) +
                           " does not fill the block to 32 B (" + std::to_string(padded - len) + " elements)");
  }
  npujit_twin::check_ub(dst, p.blockCount * (padded + p.dstStride * 32 / sizeof(T)), "DataCopyPad");
  const T* from = src.GetPhyAddr();
  uint32_t to = 0;
  for (uint32_t b = 0; b < p.blockCount; ++b) {
    npujit_twin::check_gm(from, p.blockLen, "DataCopyPad GM->UB");
    std::memcpy(&dst.at(to), from, p.blockLen);
    for (uint32_t i = len; i < padded; ++i) {
      if (pad.isPad) {
        dst.at(to + i) = pad.paddingValue;
      } else {
        std::memset(static_cast<void*>(&dst.at(to + i)), 0xA5, sizeof(T));
      }
    }
    from += len + p.srcStride / sizeof(T);
    to += padded + p.dstStride * 32 / sizeof(T);
  }
}

// UB -> GM of any byte length: exactly blockLen bytes per block reach GM.
template <typename T>
inline void DataCopyPad(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyExtParams& p) {
  const uint32_t len = p.blockLen / sizeof(T);
  const uint32_t padded = (p.blockLen + 31) / 32 * 32 / sizeof(T);
  npujit_twin::check_ub(src, p.blockCount * padded, "DataCopyPad");
  T* to = dst.GetPhyAddr();
  uint32_t from = 0;
  for (uint32_t b = 0; b < p.blockCount; ++b) {
    npujit_twin::check_gm(to, p.blockLen, "DataCopyPad UB->GM");
    npujit_twin::write_gm(to, &src.at(from), len, "DataCopyPad UB->GM");
    to += len + p.dstStride / sizeof(T);
    from += padded + p.srcStride * 32 / sizeof(T);
  }
}

// Atomic accumulation of UB -> GM copies (docs/ascendc.md): on for elements of T until
// SetAtomicNone.  The device adds f32, f16, bf16 and int32 elements.
template <typename T> inline void SetAtomicAdd() {
  npujit_twin::atomic().add = true;
  npujit_twin::atomic().element = sizeof(T);
}

inline void SetAtomicNone() { npujit_twin::atomic() = npujit_twin::Atomic(); }

namespace twin_detail {

template <typename T, typename F>
inline void unary(const LocalTensor<T>& dst, const LocalTensor<T>& src, uint32_t count, const char* name, F f) {
  npujit_twin::check_ub(dst, count, name);
  npujit_twin::check_ub(src, count, name);
  for (uint32_t i = 0; i < count; ++i) dst.at(i) = T(f(npujit_twin::widen(src.at(i))));
}

template <typename T, typename F>
inline void binary(const LocalTensor<T>& dst, const LocalTensor<T>& a, const LocalTensor<T>& b, uint32_t count,
                   const char* name, F f) {
  npujit_twin::check_ub(dst, count, name);
  npujit_twin::check_ub(a, count, name);
  npujit_twin::check_ub(b, count, name);
  for (uint32_t i = 0; i < count; ++i) dst.at(i) = T(f(npujit_twin::widen(a.at(i)), npujit_twin::widen(b.at(i))));
}

// npujit's maximum/minimum (Triton's, np.fmax/np.fmin): a NaN operand gives the other one.
template <typename T> inline T num_max(T a, T b) { return (b != b || a > b) ? a : b; }
template <typename T> inline T num_min(T a, T b) { return (b != b || a < b) ? a : b; }

}  // namespace twin_detail

#define NPUJIT_TWIN_BINARY(NAME, EXPR)                                                              \
  template <typename T>                                                                             \
  inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, \
                   uint32_t count) {                                                                \
    twin_detail::binary(dst, src0, src1, count, #NAME, [](auto a, auto b) { return EXPR; });        \
  }
NPUJIT_TWIN_BINARY(Add, a + b)
NPUJIT_TWIN_BINARY(Sub, a - b)
NPUJIT_TWIN_BINARY(Mul, a * b)
NPUJIT_TWIN_BINARY(Div, a / b)
NPUJIT_TWIN_BINARY(Max, twin_detail::num_max(a, b))
NPUJIT_TWIN_BINARY(Min, twin_detail::num_min(a, b))
#undef NPUJIT_TWIN_BINARY

#define NPUJIT_TWIN_SCALAR(NAME, EXPR)                                                              \
  template <typename T>                                                                             \
  inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, T scalar, uint32_t count) { \
    const auto s = npujit_twin::widen(scalar);                                                      \
    twin_detail::unary(dst, src, count, #NAME, [s](auto a) { return EXPR; });                       \
  }
NPUJIT_TWIN_SCALAR(Adds, a + s)
NPUJIT_TWIN_SCALAR(Muls, a * s)
NPUJIT_TWIN_SCALAR(Maxs, twin_detail::num_max(a, s))
NPUJIT_TWIN_SCALAR(Mins, twin_detail::num_min(a, s))
#undef NPUJIT_TWIN_SCALAR

#define NPUJIT_TWIN_UNARY(NAME, EXPR)                                                               \
  template <typename T> inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, uint32_t count) { \
    twin_detail::unary(dst, src, count, #NAME, [](auto a) { return EXPR; });                        \
  }
NPUJIT_TWIN_UNARY(Exp, std::exp(a))
NPUJIT_TWIN_UNARY(Ln, std::log(a))
NPUJIT_TWIN_UNARY(Abs, std::abs(a))   // abs(-0.0) is +0.0
NPUJIT_TWIN_UNARY(Sqrt, std::sqrt(a))
NPUJIT_TWIN_UNARY(Rsqrt, 1.0f / std::sqrt(a))
NPUJIT_TWIN_UNARY(Reciprocal, 1.0f / a)
NPUJIT_TWIN_UNARY(Relu, a > 0 ? a : decltype(a)(0))
// From the high-level math library (CANN's lib/math: it computes them from basic
// instructions, taking a temporary buffer of its own when none is passed); here in f32,
// rounded once to T, as the reference interpreter computes tanh and erf.
NPUJIT_TWIN_UNARY(Tanh, std::tanh(a))
NPUJIT_TWIN_UNARY(Erf, std::erf(a))
#undef NPUJIT_TWIN_UNARY

template <typename T> inline void Duplicate(const LocalTensor<T>& dst, T scalar, uint32_t count) {
  npujit_twin::check_ub(dst, count, "Duplicate");
  for (uint32_t i = 0; i < count; ++i) dst.at(i) = scalar;
}

template <typename T> inline void ArithProgression(const LocalTensor<T>& dst, T first, T diff, uint32_t count) {
  npujit_twin::check_ub(dst, count, "ArithProgression");
  for (uint32_t i = 0; i < count; ++i) dst.at(i) = T(first + diff * static_cast<T>(i));
}

enum class RoundMode { CAST_NONE, CAST_RINT, CAST_FLOOR, CAST_CEIL, CAST_ROUND, CAST_TRUNC, CAST_ODD };

// Float -> int rounds per `mode`, then saturates as every tier defines it (docs/semantics.md:
// NaN is 0, values past the type's range clamp to it); float -> narrower float rounds to
// nearest even (CAST_RINT) through the storage type; widening (CAST_NONE) is exact.
template <typename D, typename S>
inline void Cast(const LocalTensor<D>& dst, const LocalTensor<S>& src, RoundMode mode, uint32_t count) {
  npujit_twin::check_ub(dst, count, "Cast");
  npujit_twin::check_ub(src, count, "Cast");
  for (uint32_t i = 0; i < count; ++i) {
    const auto v = npujit_twin::widen(src.at(i));
    if constexpr (std::is_integral_v<D> && !std::is_integral_v<decltype(v)>) {
      double r = v;
      switch (mode) {
        case RoundMode::CAST_RINT: r = std::nearbyint(r); break;
        case RoundMode::CAST_FLOOR: r = std::floor(r); break;
        case RoundMode::CAST_CEIL: r = std::ceil(r); break;
        case RoundMode::CAST_ROUND: r = std::round(r); break;
        case RoundMode::CAST_TRUNC: r = std::trunc(r); break;
        default: npujit_twin::twin_fail("Cast float -> int needs a RoundMode other than CAST_NONE/CAST_ODD");
      }
      const double lo = static_cast<double>(std::numeric_limits<D>::min());
      const double hi = static_cast<double>(std::numeric_limits<D>::max());
      dst.at(i) = std::isnan(r) ? D(0) : r <= lo ? std::numeric_limits<D>::min()
                : r >= hi ? std::numeric_limits<D>::max() : static_cast<D>(r);
    } else {
      dst.at(i) = D(static_cast<typename npujit_twin::Wide<D>::type>(v));
    }
  }
}

// Whole-tensor reductions: dst[0] gets the result; tmp is the work buffer the API wants.
template <typename T>
inline void ReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& tmp, uint32_t count) {
  npujit_twin::check_ub(dst, 1, "ReduceSum");
  npujit_twin::check_ub(src, count, "ReduceSum");
  npujit_twin::check_ub(tmp, 1, "ReduceSum");
  typename npujit_twin::Wide<T>::type acc = 0;
  for (uint32_t i = 0; i < count; ++i) acc += npujit_twin::widen(src.at(i));
  dst.at(0) = T(acc);
}

template <typename T, typename F>
inline void reduce_extreme(const LocalTensor<T>& dst, const LocalTensor<T>& src, uint32_t count, const char* name, F better) {
  npujit_twin::check_ub(dst, 1, name);
  npujit_twin::check_ub(src, count, name);
  if (count == 0) npujit_twin::twin_fail(std::string(name) + " of zero elements");
  T best = src.at(0);
  for (uint32_t i = 1; i < count; ++i) {
    if (better(npujit_twin::widen(src.at(i)), npujit_twin::widen(best))) best = src.at(i);
  }
  dst.at(0) = best;
}

template <typename T>
inline void ReduceMax(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& tmp, uint32_t count,
                      bool calIndex = false) {
  npujit_twin::check_ub(tmp, 1, "ReduceMax");
  if (calIndex) npujit_twin::twin_fail("ReduceMax: calIndex is not in the twin");
  // NaN is skipped (npujit's max, Triton's); a lane of NaNs gives NaN
  reduce_extreme(dst, src, count, "ReduceMax", [](auto a, auto b) { return a > b || (b != b && a == a); });
}

template <typename T>
inline void ReduceMin(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& tmp, uint32_t count,
                      bool calIndex = false) {
  npujit_twin::check_ub(tmp, 1, "ReduceMin");
  if (calIndex) npujit_twin::twin_fail("ReduceMin: calIndex is not in the twin");
  reduce_extreme(dst, src, count, "ReduceMin", [](auto a, auto b) { return a < b || (b != b && a == a); });
}

enum class CMPMODE { LT, GT, EQ, LE, GE, NE };

inline bool compare(CMPMODE m, double a, double b) {
  switch (m) {
    case CMPMODE::LT: return a < b;
    case CMPMODE::GT: return a > b;
    case CMPMODE::EQ: return a == b;
    case CMPMODE::LE: return a <= b;
    case CMPMODE::GE: return a >= b;
    default: return a != b;
  }
}

// Compare results are bit masks: bit i of byte i / 8 is lane i.
template <typename T>
inline void Compares(const LocalTensor<uint8_t>& dst, const LocalTensor<T>& src, T scalar, CMPMODE mode, uint32_t count) {
  npujit_twin::check_ub(dst, (count + 7) / 8, "Compares");
  npujit_twin::check_ub(src, count, "Compares");
  for (uint32_t i = 0; i < count; ++i) {
    const bool bit = compare(mode, static_cast<double>(npujit_twin::widen(src.at(i))),
                             static_cast<double>(npujit_twin::widen(scalar)));
    uint8_t& byte = dst.at(i / 8);
    byte = static_cast<uint8_t>(bit ? (byte | (1u << (i % 8))) : (byte & ~(1u << (i % 8))));
  }
}

template <typename T>
inline void Compare(const LocalTensor<uint8_t>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,
                    CMPMODE mode, uint32_t count) {
  npujit_twin::check_ub(dst, (count + 7) / 8, "Compare");
  npujit_twin::check_ub(src0, count, "Compare");
  npujit_twin::check_ub(src1, count, "Compare");
  for (uint32_t i = 0; i < count; ++i) {
    const bool bit = compare(mode, static_cast<double>(npujit_twin::widen(src0.at(i))),
                             static_cast<double>(npujit_twin::widen(src1.at(i))));
    uint8_t& byte = dst.at(i / 8);
    byte = static_cast<uint8_t>(bit ? (byte | (1u << (i % 8))) : (byte & ~(1u << (i % 8))));
  }
}

enum class SELMODE { VSEL_CMPMASK_SPR, VSEL_TENSOR_SCALAR_MODE, VSEL_TENSOR_TENSOR_MODE };

template <typename T>
inline void Select(const LocalTensor<T>& dst, const LocalTensor<uint8_t>& mask, const LocalTensor<T>& src0,
                   const LocalTensor<T>& src1, SELMODE mode, uint32_t count) {
  if (mode != SELMODE::VSEL_TENSOR_TENSOR_MODE) npujit_twin::twin_fail("Select of two tensors needs VSEL_TENSOR_TENSOR_MODE");
  npujit_twin::check_ub(dst, count, "Select");
  npujit_twin::check_ub(mask, (count + 7) / 8, "Select");
  for (uint32_t i = 0; i < count; ++i) dst.at(i) = ((mask.at(i / 8) >> (i % 8)) & 1u) ? src0.at(i) : src1.at(i);
}

template <typename T>
inline void Select(const LocalTensor<T>& dst, const LocalTensor<uint8_t>& mask, const LocalTensor<T>& src0, T src1,
                   SELMODE mode, uint32_t count) {
  if (mode != SELMODE::VSEL_TENSOR_SCALAR_MODE) npujit_twin::twin_fail("Select with a scalar needs VSEL_TENSOR_SCALAR_MODE");
  npujit_twin::check_ub(dst, count, "Select");
  npujit_twin::check_ub(mask, (count + 7) / 8, "Select");
  for (uint32_t i = 0; i < count; ++i) dst.at(i) = ((mask.at(i / 8) >> (i % 8)) & 1u) ? src0.at(i) : src1;
}

}  // namespace AscendC
