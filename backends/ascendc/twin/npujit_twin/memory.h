// Tensors and on-chip buffers: GlobalTensor (GM), LocalTensor (UB/L1/L0), TPipe carving
// the memories of the target, TQue with its slot rotation, TBuf for scratch.
#pragma once

#include <array>
#include <deque>
#include <memory>

#include "numeric.h"
#include "state.h"

#define __global__
#define __aicore__
#define __gm__
using GM_ADDR = uint8_t*;
// The device compiler's built-in half types are global names.
using half = npujit_twin::half;
using bfloat16_t = npujit_twin::bfloat16_t;

namespace AscendC {

enum class TPosition { GM, A1, A2, B1, B2, C1, C2, CO1, CO2, VECIN, VECOUT, VECCALC };

inline const char* position_name(TPosition p) {
  static const char* names[] = {"GM", "A1", "A2", "B1", "B2", "C1", "C2",
                                "CO1", "CO2", "VECIN", "VECOUT", "VECCALC"};
  return names[static_cast<int>(p)];
}

// The physical memory behind a logical position (reference: docs/ascendc.md, "Positions").
enum class Memory { UB, L1, L0A, L0B, L0C };

inline Memory memory_of(TPosition p) {
  switch (p) {
    case TPosition::A1: case TPosition::B1: case TPosition::C1: return Memory::L1;
    case TPosition::A2: return Memory::L0A;
    case TPosition::B2: return Memory::L0B;
    case TPosition::CO1: return Memory::L0C;
    case TPosition::VECIN: case TPosition::VECOUT: case TPosition::VECCALC: return Memory::UB;
    default: npujit_twin::twin_fail(std::string("no on-chip buffer at position ") + position_name(p));
  }
}

inline const char* memory_name(Memory m) {
  static const char* names[] = {"UB", "L1", "L0A", "L0B", "L0C"};
  return names[static_cast<int>(m)];
}

template <typename T> class GlobalTensor {
 public:
  void SetGlobalBuffer(__gm__ T* data, uint64_t size = 0) {
    data_ = data;
    size_ = size;
  }
  GlobalTensor operator[](uint64_t offset) const {
    GlobalTensor g;
    g.data_ = data_ + offset;
    g.size_ = size_ > offset ? size_ - offset : 0;
    return g;
  }
  T GetValue(uint64_t i) const {
    npujit_twin::check_gm(data_ + i, sizeof(T), "GlobalTensor::GetValue");
    return data_[i];
  }
  void SetValue(uint64_t i, T v) const {
    npujit_twin::check_gm(data_ + i, sizeof(T), "GlobalTensor::SetValue");
    data_[i] = v;
  }
  T* GetPhyAddr() const { return data_; }

 private:
  T* data_ = nullptr;
  uint64_t size_ = 0;
};

template <typename T> class LocalTensor {
 public:
  LocalTensor() = default;
  LocalTensor(T* data, uint32_t size, TPosition pos, uint32_t byte_offset)
      : data_(data), size_(size), pos_(pos), byte_offset_(byte_offset) {}
  LocalTensor operator[](uint32_t offset) const {
    if (offset > size_) npujit_twin::twin_fail("LocalTensor offset past the end of its buffer");
    return LocalTensor(data_ + offset, size_ - offset, pos_,
                       byte_offset_ + offset * static_cast<uint32_t>(sizeof(T)));
  }
  T GetValue(uint32_t i) const { return at(i); }
  void SetValue(uint32_t i, T v) { at(i) = v; }
  uint32_t GetSize() const { return size_; }
  TPosition GetPosition() const { return pos_; }
  // The tensor's byte address inside its memory (alignment checks use it).
  uint32_t ByteOffset() const { return byte_offset_; }
  T& at(uint32_t i) const {
    if (data_ == nullptr) npujit_twin::twin_fail("use of a LocalTensor that was never allocated");
    if (i >= size_) {
      std::ostringstream s;
      s << "element " << i << " of a " << size_ << "-element " << position_name(pos_)
        << " tensor is out of its buffer";
      npujit_twin::twin_fail(s.str());
    }
    return data_[i];
  }
  template <typename U> LocalTensor<U> ReinterpretCast() const {
    return LocalTensor<U>(reinterpret_cast<U*>(data_),
                          size_ * static_cast<uint32_t>(sizeof(T)) / sizeof(U), pos_, byte_offset_);
  }

 private:
  T* data_ = nullptr;
  uint32_t size_ = 0;
  TPosition pos_ = TPosition::VECCALC;
  uint32_t byte_offset_ = 0;
};

// One queue or scratch buffer carved out of a memory by TPipe::InitBuffer.
struct BufferSlots {
  TPosition pos = TPosition::VECCALC;
  uint8_t* base = nullptr;
  uint32_t byte_offset = 0;
  uint32_t num = 0;
  uint32_t slot_bytes = 0;
};

class TPipe;

template <TPosition POS, int32_t DEPTH = 1> class TQue {
 public:
  ~TQue() {
    for (uint32_t i = 0; i < state_.size(); ++i) {
      if (state_[i] != Free) {
        npujit_twin::defer_error(std::string("missing FreeTensor: a tensor of a TQue<") +
                                 position_name(POS) + ", " + std::to_string(DEPTH) +
                                 "> is still in use when the kernel ends");
        return;
      }
    }
  }
  template <typename T> LocalTensor<T> AllocTensor() {
    check_init();
    const uint32_t slot = next_alloc_ % slots_.num;
    if (state_[slot] != Free) {
      npujit_twin::twin_fail(std::string("AllocTensor on a full TQue<") + position_name(POS) +
                             ", " + std::to_string(DEPTH) + ">: all " + std::to_string(slots_.num) +
                             " slots are in use (a FreeTensor is missing)");
    }
    ++next_alloc_;
    state_[slot] = Allocated;
    return tensor<T>(slot);
  }
  template <typename T> void EnQue(const LocalTensor<T>& t) {
    const uint32_t slot = slot_of(t, "EnQue");
    if (state_[slot] != Allocated) npujit_twin::twin_fail("EnQue of a tensor that was not allocated from this TQue");
    state_[slot] = Queued;
    fifo_.push_back(slot);
  }
  template <typename T> LocalTensor<T> DeQue() {
    if (fifo_.empty()) {
      npujit_twin::twin_fail(std::string("DeQue on an empty TQue<") + position_name(POS) + ", " +
                             std::to_string(DEPTH) + "> (no EnQue before it)");
    }
    const uint32_t slot = fifo_.front();
    fifo_.pop_front();
    state_[slot] = InUse;
    return tensor<T>(slot);
  }
  template <typename T> void FreeTensor(const LocalTensor<T>& t) {
    const uint32_t slot = slot_of(t, "FreeTensor");
    if (state_[slot] == Free || state_[slot] == Queued) {
      npujit_twin::twin_fail("FreeTensor of a tensor that is not held (freed twice, or still queued)");
    }
    state_[slot] = Free;
  }

 private:
  friend class TPipe;
  enum SlotState { Free, Allocated, Queued, InUse };
  void check_init() const {
    if (slots_.num == 0) npujit_twin::twin_fail("a TQue used before TPipe::InitBuffer");
  }
  template <typename T> LocalTensor<T> tensor(uint32_t slot) const {
    return LocalTensor<T>(reinterpret_cast<T*>(slots_.base + slot * slots_.slot_bytes),
                          slots_.slot_bytes / sizeof(T), POS, slots_.byte_offset + slot * slots_.slot_bytes);
  }
  template <typename T> uint32_t slot_of(const LocalTensor<T>& t, const char* what) const {
    check_init();
    const uint32_t rel = t.ByteOffset() - slots_.byte_offset;
    if (t.ByteOffset() < slots_.byte_offset || rel % slots_.slot_bytes != 0 || rel / slots_.slot_bytes >= slots_.num) {
      npujit_twin::twin_fail(std::string(what) + " of a tensor that does not belong to this TQue");
    }
    return rel / slots_.slot_bytes;
  }
  BufferSlots slots_;
  std::vector<SlotState> state_;
  std::deque<uint32_t> fifo_;
  uint32_t next_alloc_ = 0;
};

template <TPosition POS> class TBuf {
 public:
  template <typename T> LocalTensor<T> Get() const {
    if (slots_.num == 0) npujit_twin::twin_fail("a TBuf used before TPipe::InitBuffer");
    return LocalTensor<T>(reinterpret_cast<T*>(slots_.base), slots_.slot_bytes / sizeof(T), POS,
                          slots_.byte_offset);
  }
  template <typename T> LocalTensor<T> Get(uint32_t count) const {
    LocalTensor<T> t = Get<T>();
    if (count > t.GetSize()) npujit_twin::twin_fail("TBuf::Get asks for more elements than the buffer holds");
    return LocalTensor<T>(&t.at(0), count, POS, slots_.byte_offset);
  }

 private:
  friend class TPipe;
  BufferSlots slots_;
};

// Owns the on-chip memories of one core; InitBuffer carves them up, and going past a
// memory's capacity is an error that names the memory, the request and the budget.
class TPipe {
 public:
  TPipe() {
    const npujit_twin::Target& t = npujit_twin::target();
    const uint32_t sizes[] = {t.ub, t.l1, t.l0a, t.l0b, t.l0c};
    for (int m = 0; m < 5; ++m) memory_[m].assign(sizes[m], 0xA5);   // poison, not zeros
  }
  template <TPosition POS, int32_t DEPTH>
  void InitBuffer(TQue<POS, DEPTH>& que, uint8_t num, uint32_t len) {
    if (num == 0 || num > DEPTH) {
      npujit_twin::twin_fail("TPipe::InitBuffer: a TQue of depth " + std::to_string(DEPTH) +
                             " cannot have " + std::to_string(num) + " buffers");
    }
    que.slots_ = carve(POS, num, len);
    que.state_.assign(num, TQue<POS, DEPTH>::Free);
  }
  template <TPosition POS> void InitBuffer(TBuf<POS>& buf, uint32_t len) {
    buf.slots_ = carve(POS, 1, len);
  }
  void Destroy() {}

 private:
  BufferSlots carve(TPosition pos, uint32_t num, uint32_t len) {
    const Memory m = memory_of(pos);
    const uint32_t align = (m == Memory::L0A || m == Memory::L0B) ? 512 : (m == Memory::L0C ? 1024 : 32);
    const uint32_t slot = (len + align - 1) / align * align;
    std::vector<uint8_t>& mem = memory_[static_cast<int>(m)];
    uint32_t& used = used_[static_cast<int>(m)];
    if (len == 0 || static_cast<uint64_t>(used) + static_cast<uint64_t>(slot) * num > mem.size()) {
      std::ostringstream s;
      s << memory_name(m) << " over budget: InitBuffer of " << num << " x " << len << " B at "
        << position_name(pos) << " needs " << static_cast<uint64_t>(slot) * num << " B, but only "
        << (mem.size() - used) << " of " << mem.size() << " B are left";
      npujit_twin::twin_fail(s.str());
    }
    BufferSlots b{pos, mem.data() + used, used, num, slot};
    used += slot * num;
    return b;
  }
  std::array<std::vector<uint8_t>, 5> memory_;
  std::array<uint32_t, 5> used_{};
};

inline int64_t GetBlockIdx() { return npujit_twin::block().idx; }
inline int64_t GetBlockNum() { return npujit_twin::block().num; }

}  // namespace AscendC
