// Hardware event flags between pipes.  On the device a WaitFlag with no SetFlag hangs the
// core and a SetFlag nobody waits for corrupts the next kernel; the twin makes both an
// error that names the event and its id.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "state.h"

// Pipes, global as in CANN's headers (``AscendC::PipeBarrier<PIPE_ALL>()``).
enum pipe_t { PIPE_S, PIPE_V, PIPE_M, PIPE_MTE1, PIPE_MTE2, PIPE_MTE3, PIPE_FIX, PIPE_ALL };

namespace AscendC {

enum class HardEvent {
  MTE2_V, V_MTE2, V_MTE3, MTE3_V, MTE2_MTE3, MTE3_MTE2, V_S, S_V, MTE2_S, S_MTE2, MTE3_S, S_MTE3,
  MTE2_MTE1, MTE1_MTE2, MTE1_M, M_MTE1, M_FIX, FIX_M, FIX_MTE2, MTE2_FIX, M_MTE2, MTE2_M
};

inline const char* event_name(HardEvent e) {
  static const char* names[] = {
      "MTE2_V", "V_MTE2", "V_MTE3", "MTE3_V", "MTE2_MTE3", "MTE3_MTE2", "V_S", "S_V",
      "MTE2_S", "S_MTE2", "MTE3_S", "S_MTE3", "MTE2_MTE1", "MTE1_MTE2", "MTE1_M", "M_MTE1",
      "M_FIX", "FIX_M", "FIX_MTE2", "MTE2_FIX", "M_MTE2", "MTE2_M"};
  return names[static_cast<int>(e)];
}

// Event ids per event kind (QUE_MAX_EVENT on the 2201 architecture).
constexpr int32_t kEventIds = 8;

}  // namespace AscendC

namespace npujit_twin {

inline std::map<std::pair<int, int32_t>, int>& flags() {
  thread_local std::map<std::pair<int, int32_t>, int> pending;
  return pending;
}

inline std::string flag_text(AscendC::HardEvent e, int32_t id, const char* call) {
  return std::string(call) + "<HardEvent::" + AscendC::event_name(e) + ">(" + std::to_string(id) + ")";
}

inline void check_event_id(AscendC::HardEvent e, int32_t id, const char* call) {
  if (id < 0 || id >= AscendC::kEventIds) {
    twin_fail(flag_text(e, id, call) + ": event ids run from 0 to " + std::to_string(AscendC::kEventIds - 1));
  }
}

// Called by the launcher when a block ends: every set flag must have been waited.
inline void check_flags_drained() {
  for (const auto& [key, count] : flags()) {
    if (count > 0) {
      twin_fail(flag_text(static_cast<AscendC::HardEvent>(key.first), key.second, "SetFlag") +
                " was never waited (no matching WaitFlag before the kernel ended)");
    }
  }
}

// Cross-core flags of the block being run: a count of sets per id, shared by its AIC and
// AIV threads.  A wait blocks until a set arrives; it fails (as the device would hang)
// when the other core has ended, or is itself waiting, with no set to come.
struct CrossFlags {
  std::mutex lock;
  std::condition_variable changed;
  std::map<int, int> count;
  int ended = 0;            // halves of the block that returned or failed
  std::vector<int> waiting; // the ids the halves in CrossCoreWaitFlag wait for
  int halves = 1;
};

inline CrossFlags& cross_flags() {
  static CrossFlags f;
  return f;
}

constexpr const char* kNoSet = " with no CrossCoreSetFlag by the other core";

inline void start_cross_flags(int halves) {
  CrossFlags& f = cross_flags();
  std::lock_guard<std::mutex> hold(f.lock);
  f.count.clear();
  f.ended = 0;
  f.waiting.clear();
  f.halves = halves;
}

// A half of the block ended (returned or failed): wake a waiting other half.
inline void end_half() {
  CrossFlags& f = cross_flags();
  {
    std::lock_guard<std::mutex> hold(f.lock);
    ++f.ended;
  }
  f.changed.notify_all();
}

inline void check_cross_flags_drained() {
  for (const auto& kv : cross_flags().count) {
    if (kv.second != 0) {
      twin_fail("CrossCoreSetFlag(" + std::to_string(kv.first) + ") never waited by the other core");
    }
  }
}

}  // namespace npujit_twin

namespace AscendC {

template <HardEvent E> inline void SetFlag(int32_t id) {
  npujit_twin::check_event_id(E, id, "SetFlag");
  int& count = npujit_twin::flags()[{static_cast<int>(E), id}];
  if (count > 0) {
    npujit_twin::twin_fail(npujit_twin::flag_text(E, id, "SetFlag") +
                           " while the previous set of this event is still not waited");
  }
  ++count;
}

template <HardEvent E> inline void WaitFlag(int32_t id) {
  npujit_twin::check_event_id(E, id, "WaitFlag");
  int& count = npujit_twin::flags()[{static_cast<int>(E), id}];
  if (count == 0) {
    npujit_twin::twin_fail(npujit_twin::flag_text(E, id, "WaitFlag") +
                           " with no matching SetFlag (on the device the pipe would hang)");
  }
  --count;
}

template <pipe_t P> inline void PipeBarrier() {}

// Cross-core flags between a block's AIC and AIV (mode 2): a counter per id (0..10, at
// most 15 sets outstanding); a wait blocks until the other core sets the id.
template <uint8_t MODE, pipe_t P> inline void CrossCoreSetFlag(uint16_t id) {
  static_assert(MODE == 2, "the emitter synchronises a block's AIC and AIV (mode 2)");
  if (id > 10) npujit_twin::twin_fail("CrossCoreSetFlag(" + std::to_string(id) + "): flag ids run from 0 to 10");
  npujit_twin::CrossFlags& f = npujit_twin::cross_flags();
  {
    std::lock_guard<std::mutex> hold(f.lock);
    int& count = f.count[id];
    if (count >= 15) npujit_twin::twin_fail("CrossCoreSetFlag(" + std::to_string(id) + "): 15 sets outstanding");
    ++count;
  }
  f.changed.notify_all();
}

inline void CrossCoreWaitFlag(uint16_t id) {
  npujit_twin::CrossFlags& f = npujit_twin::cross_flags();
  std::unique_lock<std::mutex> hold(f.lock);
  f.waiting.push_back(id);
  auto leave = [&f, id] { f.waiting.erase(std::find(f.waiting.begin(), f.waiting.end(), static_cast<int>(id))); };
  for (;;) {
    int& count = f.count[id];
    if (count > 0) {
      --count;
      leave();
      return;
    }
    // the other half has ended, or waits for a flag nobody set either: no set will come
    int blocked = 0;
    for (int w : f.waiting) blocked += f.count[w] == 0;
    if (f.ended + blocked >= f.halves) {
      leave();
      f.changed.notify_all();
      npujit_twin::twin_fail("CrossCoreWaitFlag(" + std::to_string(id) + ")" + npujit_twin::kNoSet +
                             " (on the device it would hang)");
    }
    f.changed.wait(hold);
  }
}

}  // namespace AscendC
