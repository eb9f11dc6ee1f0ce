// Sleeping that a stop flag cuts short: for loops that poll or back off between attempts and
// must leave promptly when their process or term stops.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

namespace banlieue::common {

// Sleeps up to `duration`, waking early (within 200 ms) once `stop` is set.
inline void sleepUnless(const std::atomic<bool>& stop, std::chrono::milliseconds duration) {
  const auto until = std::chrono::steady_clock::now() + duration;
  while (!stop) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - std::chrono::steady_clock::now());
    if (left.count() <= 0) return;
    std::this_thread::sleep_for(
        std::min<std::chrono::milliseconds>(left, std::chrono::milliseconds(200)));
  }
}

}  // namespace banlieue::common
