// Running an emitted kernel on the CPU: one call per block, in block order, each block
// with fresh on-chip memory; the first error stops the launch and is copied to `error`.
#pragma once

#include <cstdio>
#include <functional>

#include "state.h"
#include "sync.h"

namespace npujit_twin {

inline int run_blocks(int64_t block_dim, const std::function<void()>& kernel, char* error, size_t error_len,
                      bool mixed = false) {
  std::string message;
  try {
    for (int64_t b = 0; b < block_dim; ++b) {
      block() = Block{b, block_dim};
      cross_flags().clear();
      for (int half = mixed ? 0 : 1; half < 2; ++half) {
        core_type() = half == 0 ? CoreType::AIC : CoreType::AIV;
        flags().clear();
        deferred_error().clear();
        kernel();
        if (!deferred_error().empty()) twin_fail(deferred_error());
        check_flags_drained();
      }
      check_cross_flags_drained();
    }
  } catch (const DeviceError& e) {
    message = "block " + std::to_string(block().idx) + ": " + e.what();
  } catch (const std::exception& e) {
    message = std::string("block ") + std::to_string(block().idx) + ": C++ exception: " + e.what();
  }
  gm_ranges().clear();
  if (message.empty()) return 0;
  std::snprintf(error, error_len, "%s", message.c_str());
  return 1;
}

}  // namespace npujit_twin
