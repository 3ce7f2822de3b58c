// The Cube path: GM (ND) -> L1 (NZ) by DataCopy with Nd2NzParams, L1 -> L0A/L0B by
// LoadData (512 B fractals, optionally transposed), Mmad into L0C accumulating in f32,
// Fixpipe L0C (NZ) -> GM (ND) with an optional cast.  A fractal is 512 B: 16 rows of C0 =
// 32 B / sizeof(T) elements (16 x 16 for half and bfloat16, 16 x 8 for float).  A float B
// reaches L0B through LoadDataWithTranspose, which transposes 16 x 16 squares (two 16 x 8
// fractals side by side); LoadData's ifTranspose is for 2-byte types.
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

struct LoadData2dTransposeParams {
  uint16_t startIndex = 0;         // first source square (two fractals for 4-byte types)
  uint8_t repeatTimes = 0;         // squares moved
  uint16_t srcStride = 0;          // squares between two source squares
  uint16_t dstGap = 0;             // fractals between one square's first destination fractal and the next one's
  uint16_t dstFracGap = 0;         // fractals between the two halves of one square in the destination
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

constexpr uint32_t kFractal = 16;  // rows of a fractal (M0 = N0 = 16)

// C0: the elements of a fractal row (32 B), 16 for 2-byte types and 8 for 4-byte ones.
template <typename T> constexpr uint32_t c0_of() {
  static_assert(sizeof(T) == 2 || sizeof(T) == 4, "the twin's Cube path takes 2- and 4-byte types");
  return 32 / sizeof(T);
}

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
  check_memory(dst, Memory::L1, 32, "DataCopy (ND2NZ)");
  if (p.ndNum != 1) npujit_twin::twin_fail("DataCopy (ND2NZ): the twin copies one matrix (ndNum = 1)");
  const uint32_t c0 = c0_of<T>();
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
  constexpr uint32_t c0 = c0_of<T>();
  check_memory(src, Memory::L1, 32, "LoadData");
  const Memory m = memory_of(dst.GetPosition());
  if (m != Memory::L0A && m != Memory::L0B) npujit_twin::twin_fail("LoadData needs a destination in L0A or L0B");
  check_memory(dst, m, 512, "LoadData");
  if (p.ifTranspose && c0 != kFractal) {
    npujit_twin::twin_fail("LoadData: ifTranspose transposes 16 x 16 fractals of 2-byte types; "
                           "4-byte types transpose with LoadDataWithTranspose");
  }
  const uint32_t f = kFractal * c0;
  for (uint32_t i = 0; i < p.repeatTimes; ++i) {
    const uint32_t from = (p.startIndex + i * p.srcStride) * f;
    const uint32_t to = i * (1 + p.dstGap) * f;
    for (uint32_t r = 0; r < kFractal; ++r) {
      for (uint32_t c = 0; c < c0; ++c) {
        const uint32_t s = p.ifTranspose ? c * kFractal + r : r * c0 + c;
        dst.at(to + r * c0 + c) = src.at(from + s);
      }
    }
  }
}

// Each repeat takes a 16 x 16 square of the source, 16 / C0 fractals side by side (two 16 x 8
// fractals for 4-byte types, one 16 x 16 for 2-byte ones), transposes it and writes it back
// as 16 / C0 fractals, dstFracGap fractals apart; a repeat's first fractal lands dstGap
// fractals after the previous repeat's first one ends.
template <typename T>
inline void LoadDataWithTranspose(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LoadData2dTransposeParams& p) {
  constexpr uint32_t c0 = c0_of<T>();
  constexpr uint32_t halves = kFractal / c0;
  check_memory(src, Memory::L1, 32, "LoadDataWithTranspose");
  const Memory m = memory_of(dst.GetPosition());
  if (m != Memory::L0A && m != Memory::L0B) npujit_twin::twin_fail("LoadDataWithTranspose needs a destination in L0A or L0B");
  check_memory(dst, m, 512, "LoadDataWithTranspose");
  const uint32_t f = kFractal * c0;
  for (uint32_t i = 0; i < p.repeatTimes; ++i) {
    const uint32_t from = (p.startIndex + i * p.srcStride) * halves * f;
    const uint32_t first = i * (1 + p.dstGap) * f;
    // square element (r, c) is source fractal c / c0, row r, column c % c0
    for (uint32_t h = 0; h < halves; ++h) {
      const uint32_t to = first + h * (1 + p.dstFracGap) * f;
      for (uint32_t r = 0; r < kFractal; ++r) {
        for (uint32_t c = 0; c < c0; ++c) {
          const uint32_t col = r;                  // transposed: row r of the result is column r
          const uint32_t row = h * c0 + c;         // of the square, its element c of half h
          dst.at(to + r * c0 + c) = src.at(from + (col / c0) * f + row * c0 + col % c0);
        }
      }
    }
  }
}

// L0A holds A (m x k) as fractals of 16 rows x C0 columns, in row-major order of fractals,
// each row-major ("ZZ"); L0B holds B (k x n) as fractals ordered by k then n, each holding
// 16 columns of C0 elements of k, n-major ("ZN"); L0C holds C in NZ (16-column groups, each
// m rows of 16).  Products accumulate in f32 (f32 inputs as they are: the emitted code never
// turns on SetHF32Mode's rounding).
template <typename T>
inline void Mmad(const LocalTensor<float>& dst, const LocalTensor<T>& a, const LocalTensor<T>& b, const MmadParams& p) {
  constexpr uint32_t c0 = c0_of<T>();
  constexpr uint32_t f = kFractal * c0;
  check_memory(dst, Memory::L0C, 1024, "Mmad");
  check_memory(a, Memory::L0A, 512, "Mmad");
  check_memory(b, Memory::L0B, 512, "Mmad");
  const uint32_t m1 = (p.m + 15) / 16, k1 = (p.k + c0 - 1) / c0, n1 = (p.n + 15) / 16;
  for (uint32_t i = 0; i < p.m; ++i) {
    for (uint32_t j = 0; j < p.n; ++j) {
      float acc = p.cmatrixInitVal ? 0.0f : dst.at(((j / 16) * m1 * 16 + i) * 16 + j % 16);
      for (uint32_t kk = 0; kk < p.k; ++kk) {
        const float av = static_cast<float>(a.at(((i / 16) * k1 + kk / c0) * f + (i % 16) * c0 + kk % c0));
        const float bv = static_cast<float>(b.at(((kk / c0) * n1 + j / 16) * f + (j % 16) * c0 + kk % c0));
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
