// The Cube path: GM (ND) -> L1 (NZ) by DataCopy with Nd2NzParams, L1 -> L0A/L0B by
// LoadData (512 B fractals, optionally transposed), Mmad into L0C accumulating in f32,
// Fixpipe L0C (NZ) -> GM (ND) with an optional cast.  Only 2-byte inputs (half, bfloat16),
// whose fractals are 16 x 16.
#pragma once

#include "memory.h"

namespace AscendC {

struct Nd2NzParams {
  uint16_t ndNum = 1;
  uint16_t nValue = 0;             // rows copied
  uint16_t dValue = 0;             // elements per row copied
  uint16_t srcNdMatrixStride = 0;
  uint16_t srcDValue = 0;          // elements between two rows in GM
  uint16_t dstNzC0Stride = 0;      // rows between two C0-column groups in L1
  uint16_t dstNzNStride = 1;
  uint16_t dstNzMatrixStride = 0;
};

template <typename T> struct InitConstValueParams {
  uint16_t repeatTimes = 1;
  uint16_t blockNum = 0;           // 32 B blocks per repeat
  uint16_t dstGap = 0;
  T initValue = T();
};

struct LoadData2DParams {
  uint16_t startIndex = 0;         // first source fractal
  uint8_t repeatTimes = 1;         // fractals moved
  uint16_t srcStride = 1;          // fractals between two source fractals
  uint8_t sid = 0;
  uint16_t dstGap = 0;             // fractals skipped between two destination fractals
  bool ifTranspose = false;
  uint8_t addrMode = 0;
};

struct MmadParams {
  uint16_t m = 0, n = 0, k = 0;
  bool cmatrixInitVal = true;      // true: start from zero; false: accumulate into dst
  bool cmatrixSource = false;
  bool isBias = false;
};

enum class QuantMode_t { NoQuant, F322F16, F322BF16 };

struct FixpipeParamsV220 {
  uint16_t nSize = 0, mSize = 0;
  uint16_t srcStride = 0;          // rows between two 16-column groups in L0C
  uint32_t dstStride = 0;          // elements between two rows in GM
  QuantMode_t quantPre = QuantMode_t::NoQuant;
  bool reluEn = false;
};

struct FixpipeConfig {
  bool rowMajor;
};
constexpr FixpipeConfig CFG_ROW_MAJOR = {true};

constexpr uint32_t kFractal = 16;  // a 2-byte fractal is 16 x 16 elements (512 B)

template <typename T> inline void check_memory(const LocalTensor<T>& t, Memory want, uint32_t align, const char* op) {
  if (memory_of(t.GetPosition()) != want) {
    npujit_twin::twin_fail(std::string(op) + " needs an operand in " + memory_name(want) + ", got " +
                           position_name(t.GetPosition()));
  }
  if (t.ByteOffset() % align != 0) {
    npujit_twin::twin_fail(std::string(op) + ": " + memory_name(want) + " operand at byte " +
                           std::to_string(t.ByteOffset()) + " is not " + std::to_string(align) + " B aligned");
  }
}

template <typename T>
inline void InitConstValue(const LocalTensor<T>& dst, const InitConstValueParams<T>& p) {
  // A1/B1 (L1) or A2/B2 (L0A/L0B), as on the A2 parts.
  const Memory where = memory_of(dst.GetPosition());
  check_memory(dst, where == Memory::L0A || where == Memory::L0B ? where : Memory::L1, 32, "InitConstValue");
  const uint32_t per_repeat = p.blockNum * 32 / sizeof(T);
  uint32_t at = 0;
  for (uint32_t r = 0; r < p.repeatTimes; ++r) {
    for (uint32_t i = 0; i < per_repeat; ++i) dst.at(at + i) = p.initValue;
    at += per_repeat + p.dstGap * 32 / sizeof(T);
  }
}

template <typename T> inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const Nd2NzParams& p) {
  static_assert(sizeof(T) == 2, "the twin's Cube path takes 2-byte types");
  check_memory(dst, Memory::L1, 32, "DataCopy (ND2NZ)");
  if (p.ndNum != 1) npujit_twin::twin_fail("DataCopy (ND2NZ): the twin copies one matrix (ndNum = 1)");
  const uint32_t c0 = 32 / sizeof(T);
  for (uint32_t r = 0; r < p.nValue; ++r) {
    npujit_twin::check_gm(src.GetPhyAddr() + static_cast<uint64_t>(r) * p.srcDValue, p.dValue * sizeof(T),
                          "DataCopy (ND2NZ) GM->L1");
    for (uint32_t c = 0; c < p.dValue; ++c) {
      dst.at(((c / c0) * p.dstNzC0Stride + r * p.dstNzNStride) * c0 + c % c0) =
          src.GetPhyAddr()[static_cast<uint64_t>(r) * p.srcDValue + c];
    }
  }
}

template <typename T> inline void LoadData(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LoadData2DParams& p) {
  static_assert(sizeof(T) == 2, "the twin's Cube path takes 2-byte types");
  check_memory(src, Memory::L1, 32, "LoadData");
  const Memory m = memory_of(dst.GetPosition());
  if (m != Memory::L0A && m != Memory::L0B) npujit_twin::twin_fail("LoadData needs a destination in L0A or L0B");
  check_memory(dst, m, 512, "LoadData");
  const uint32_t f = kFractal * kFractal;
  for (uint32_t i = 0; i < p.repeatTimes; ++i) {
    const uint32_t from = (p.startIndex + i * p.srcStride) * f;
    const uint32_t to = i * (1 + p.dstGap) * f;
    for (uint32_t r = 0; r < kFractal; ++r) {
      for (uint32_t c = 0; c < kFractal; ++c) {
        const uint32_t s = p.ifTranspose ? c * kFractal + r : r * kFractal + c;
        dst.at(to + r * kFractal + c) = src.at(from + s);
      }
    }
  }
}

// L0A holds A (m x k) as row-major 16x16 fractals in row-major order ("ZZ"); L0B holds B
// (k x n) as fractals ordered by k then n, each stored n-major ("ZN"); L0C holds C in NZ
// (16-column groups, each m rows of 16).  Products accumulate in f32.
template <typename T>
inline void Mmad(const LocalTensor<float>& dst, const LocalTensor<T>& a, const LocalTensor<T>& b, const MmadParams& p) {
  check_memory(dst, Memory::L0C, 1024, "Mmad");
  check_memory(a, Memory::L0A, 512, "Mmad");
  check_memory(b, Memory::L0B, 512, "Mmad");
  const uint32_t m1 = (p.m + 15) / 16, k1 = (p.k + 15) / 16, n1 = (p.n + 15) / 16;
  for (uint32_t i = 0; i < p.m; ++i) {
    for (uint32_t j = 0; j < p.n; ++j) {
      float acc = p.cmatrixInitVal ? 0.0f : dst.at(((j / 16) * m1 * 16 + i) * 16 + j % 16);
      for (uint32_t kk = 0; kk < p.k; ++kk) {
        const float av = static_cast<float>(a.at(((i / 16) * k1 + kk / 16) * 256 + (i % 16) * 16 + kk % 16));
        const float bv = static_cast<float>(b.at(((kk / 16) * n1 + j / 16) * 256 + (j % 16) * 16 + kk % 16));
        acc += av * bv;
      }
      dst.at(((j / 16) * m1 * 16 + i) * 16 + j % 16) = acc;
    }
  }
}

template <typename D, typename S, const FixpipeConfig& CFG>
inline void Fixpipe(const GlobalTensor<D>& dst, const LocalTensor<S>& src, const FixpipeParamsV220& p) {
  static_assert(CFG.rowMajor, "the twin's Fixpipe writes row-major (ND) output");
  static_assert(std::is_same_v<S, float>, "Fixpipe reads f32 from L0C");
  check_memory(src, Memory::L0C, 64, "Fixpipe");
  const bool narrow = !std::is_same_v<D, float>;
  if (narrow != (p.quantPre != QuantMode_t::NoQuant)) {
    npujit_twin::twin_fail("Fixpipe: quantPre must be F322F16/F322BF16 exactly when the output is 16-bit");
  }
  for (uint32_t i = 0; i < p.mSize; ++i) {
    npujit_twin::check_gm(dst.GetPhyAddr() + static_cast<uint64_t>(i) * p.dstStride, p.nSize * sizeof(D), "Fixpipe L0C->GM");
    for (uint32_t j = 0; j < p.nSize; ++j) {
      const float v = src.at(((j / 16) * p.srcStride + i) * 16 + j % 16);
      dst.GetPhyAddr()[static_cast<uint64_t>(i) * p.dstStride + j] = D(p.reluEn && v < 0 ? 0.0f : v);
    }
  }
}

}  // namespace AscendC
