// The CPU twin's device state: errors, the target's memory sizes, the current block, and
// the hardware event flags.  Everything an emitted kernel does wrong ends in twin_fail(),
// which throws npujit_twin::DeviceError; the launcher (launch.h) turns it into a message
// the Python runner reads back, so a broken kernel never aborts the process.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace npujit_twin {

struct DeviceError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] inline void twin_fail(const std::string& message) { throw DeviceError(message); }

// Per-core state is thread_local: a mixed kernel's AIC and AIV halves run on two threads
// (launch.h).
// An error found where throwing is not allowed (a destructor): kept until the block ends.
inline std::string& deferred_error() {
  thread_local std::string message;
  return message;
}

inline void defer_error(const std::string& message) {
  if (deferred_error().empty()) deferred_error() = message;
}

// On-chip capacities in bytes, set by the launcher from the NPU preset the kernel was
// scheduled for (the defaults are the 910B-like preset's).
struct Target {
  uint32_t ub = 196608, l1 = 524288, l0a = 65536, l0b = 65536, l0c = 131072;
};

inline Target& target() {
  static Target t;
  return t;
}

// GM ranges the launcher registered (one per array argument): DataCopy checks against them.
struct GmRange {
  const uint8_t* base;
  size_t bytes;
  std::string name;
};

inline std::vector<GmRange>& gm_ranges() {
  static std::vector<GmRange> ranges;
  return ranges;
}

inline void check_gm(const void* p, size_t bytes, const char* what) {
  auto* q = static_cast<const uint8_t*>(p);
  for (const GmRange& r : gm_ranges()) {
    if (q >= r.base && q + bytes <= r.base + r.bytes) return;
  }
  std::ostringstream s;
  s << what << " touches " << bytes << " B of GM outside every array argument";
  for (const GmRange& r : gm_ranges()) {
    if (q >= r.base && q < r.base + r.bytes) {
      s << " (starts at element byte " << (q - r.base) << " of '" << r.name << "', which has "
        << r.bytes << " B)";
    }
  }
  twin_fail(s.str());
}

// SetAtomicAdd<T>() ... SetAtomicNone(): while on, a UB -> GM copy adds its elements into
// GM (as T) instead of overwriting them; the element size it was set for is kept so a copy
// of another type is an error, as the device would add garbage.
struct Atomic {
  bool add = false;
  size_t element = 0;
};

inline Atomic& atomic() {
  thread_local Atomic a;
  return a;
}

// A UB -> GM copy of ``count`` elements: written, or added under SetAtomicAdd.
template <typename T> inline void write_gm(T* to, const T* from, uint32_t count, const char* what) {
  if (!atomic().add) {
    std::memcpy(static_cast<void*>(to), static_cast<const void*>(from), count * sizeof(T));
    return;
  }
  if (atomic().element != sizeof(T)) {
    twin_fail(std::string(what) + ": SetAtomicAdd was set for " + std::to_string(atomic().element) +
              "-byte elements, the copy moves " + std::to_string(sizeof(T)) + "-byte ones");
  }
  for (uint32_t i = 0; i < count; ++i) to[i] = T(to[i] + from[i]);
}

struct Block {
  int64_t idx = 0;
  int64_t num = 1;
};

inline Block& block() {
  thread_local Block b;
  return b;
}

// Which core of a separated part runs the block now: a mixed (AIC + AIV) kernel's block
// runs as its AIC and as its AIV at the same time (two threads), each with fresh on-chip
// memory.
enum class CoreType { AIC, AIV };

inline CoreType& core_type() {
  thread_local CoreType c = CoreType::AIV;
  return c;
}

}  // namespace npujit_twin

#define ASCEND_IS_AIC (npujit_twin::core_type() == npujit_twin::CoreType::AIC)
#define ASCEND_IS_AIV (npujit_twin::core_type() == npujit_twin::CoreType::AIV)

// The kernel type a mixed kernel declares (one AIC and one AIV per block); the twin runs
// every block's AIC and AIV side by side (launch.h), so the declaration itself does nothing.
enum KernelType { KERNEL_TYPE_AIV_ONLY, KERNEL_TYPE_AIC_ONLY, KERNEL_TYPE_MIX_AIC_1_1, KERNEL_TYPE_MIX_AIC_1_2 };
#define KERNEL_TASK_TYPE_DEFAULT(type) static_cast<void>(type)
