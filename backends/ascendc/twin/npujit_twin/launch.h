// Running an emitted kernel on the CPU: one call per block, in block order, each block
// with fresh on-chip memory; the first error stops the launch and is copied to `error`.
// A mixed kernel's block runs its AIC half and its AIV half side by side on two threads,
// as a block's two cores do, so hand-offs either way inside a loop meet (sync.h).
#pragma once

#include <cstdio>
#include <functional>
#include <thread>

#include "state.h"
#include "sync.h"

namespace npujit_twin {

// One half of a block on the calling thread; returns its error message ("" if none).
inline std::string run_half(const Block& b, CoreType core, const std::function<void()>& kernel) {
  std::string message;
  block() = b;
  core_type() = core;
  flags().clear();
  deferred_error().clear();
  atomic() = Atomic();
  try {
    kernel();
    if (!deferred_error().empty()) twin_fail(deferred_error());
    check_flags_drained();
  } catch (const DeviceError& e) {
    message = e.what();
  } catch (const std::exception& e) {
    message = std::string("C++ exception: ") + e.what();
  } catch (...) {
    message = "an unknown C++ exception";
  }
  end_half();
  return message;
}

inline int run_blocks(int64_t block_dim, const std::function<void()>& kernel, char* error, size_t error_len,
                      bool mixed = false) {
  std::string message;
  for (int64_t b = 0; b < block_dim && message.empty(); ++b) {
    const Block here{b, block_dim};
    start_cross_flags(mixed ? 2 : 1);
    if (mixed) {
      std::string aic;
      std::thread cube([&] { aic = run_half(here, CoreType::AIC, kernel); });
      std::string aiv = run_half(here, CoreType::AIV, kernel);
      cube.join();
      // a wait left without a set is often the other half's failure seen from here:
      // report the other message first
      const bool aic_first = !aic.empty() && (aiv.empty() || aiv.find(kNoSet) != std::string::npos ||
                                              aic.find(kNoSet) == std::string::npos);
      message = aic_first ? "AIC: " + aic : (!aiv.empty() ? "AIV: " + aiv : "");
    } else {
      message = run_half(here, CoreType::AIV, kernel);
    }
    if (message.empty()) {
      try {
        check_cross_flags_drained();
      } catch (const DeviceError& e) {
        message = e.what();
      }
    }
    if (!message.empty()) message = "block " + std::to_string(b) + ": " + message;
  }
  gm_ranges().clear();
  if (message.empty()) return 0;
  std::snprintf(error, error_len, "%s", message.c_str());
  return 1;
}

}  // namespace npujit_twin
