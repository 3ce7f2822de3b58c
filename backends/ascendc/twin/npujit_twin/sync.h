// Hardware event flags between pipes.  On the device a WaitFlag with no SetFlag hangs the
// core and a SetFlag nobody waits for corrupts the next kernel; the twin makes both an
// error that names the event and its id.
#pragma once

#include <map>
#include <utility>

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
  static std::map<std::pair<int, int32_t>, int> pending;
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

}  // namespace AscendC
