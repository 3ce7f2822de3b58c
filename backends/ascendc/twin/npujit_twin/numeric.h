// Half-precision storage types with the reference interpreter's rounding: a value is
// computed in f32 and rounded to nearest, ties to even, whenever it is stored
// (backends/reference/numerics.py, docs/semantics.md).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace npujit_twin {

inline uint32_t float_bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  return x;
}

inline float bits_float(uint32_t x) {
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

inline uint16_t float_to_half_bits(float f) {
  const uint32_t x = float_bits(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return sign | 0x7e00u;            // NaN stays a (quiet) NaN
  if (ax >= 0x477ff000u) return sign | 0x7c00u;           // >= 65520 rounds to infinity
  if (ax < 0x38800000u) {                                 // below 2^-14: a subnormal half
    // |f| * 2^24 is exact in f32; rounding it to an integer is the subnormal's rounding.
    const float scaled = bits_float(ax) * 16777216.0f;
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(std::nearbyint(scaled)));
  }
  uint32_t h = ((((ax >> 23) - 127u + 15u) << 10) | ((ax & 0x7fffffu) >> 13));
  const uint32_t rest = ax & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // a carry into the exponent is right
  return static_cast<uint16_t>(sign | h);
}

inline float half_bits_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1fu;
  const uint32_t m = h & 0x3ffu;
  if (e == 0) {
    const float v = std::ldexp(static_cast<float>(m), -24);
    return sign ? -v : v;
  }
  if (e == 31) return bits_float(sign | 0x7f800000u | (m << 13));
  return bits_float(sign | ((e - 15u + 127u) << 23) | (m << 13));
}

inline uint16_t float_to_bf16_bits(float f) {
  const uint32_t x = float_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

// The storage types: arithmetic on them goes through float, so `half c = a + b;` computes
// in f32 and rounds once, as the reference does.
struct half {
  uint16_t bits = 0;
  half() = default;
  half(float f) : bits(float_to_half_bits(f)) {}  // NOLINT: implicit, like the device type
  operator float() const { return half_bits_to_float(bits); }
};

struct bfloat16_t {
  uint16_t bits = 0;
  bfloat16_t() = default;
  bfloat16_t(float f) : bits(float_to_bf16_bits(f)) {}  // NOLINT
  operator float() const { return bits_float(static_cast<uint32_t>(bits) << 16); }
};

// The type a vector op computes in: f32 for the float types, the type itself for ints.
template <typename T> struct Wide { using type = T; };
template <> struct Wide<half> { using type = float; };
template <> struct Wide<bfloat16_t> { using type = float; };

template <typename T> inline typename Wide<T>::type widen(T v) {
  return static_cast<typename Wide<T>::type>(v);
}

}  // namespace npujit_twin
