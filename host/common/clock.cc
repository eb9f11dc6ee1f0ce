#include "host/common/clock.h"

namespace banlieue::common {

SteadyClock& SteadyClock::instance() {
  static SteadyClock clock;
  return clock;
}

void FakeClock::waitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                          TimePoint deadline) {
  {
    std::lock_guard guard(mutex_);
    if (now_ >= deadline) return;
    waiters_.insert(&cv);
  }
  // advance() notifies without the caller's lock, so a wakeup could slip in between the
  // registration above and this wait; a short real-time bound makes that harmless (callers
  // re-check their state in a loop). Test-only clock: the spin costs nothing that matters.
  cv.wait_for(lock, std::chrono::milliseconds(1));
}

void FakeClock::forget(std::condition_variable& cv) {
  std::lock_guard guard(mutex_);
  waiters_.erase(&cv);
}

void FakeClock::advance(std::chrono::nanoseconds by) {
  std::set<std::condition_variable*> waiters;
  {
    std::lock_guard guard(mutex_);
    now_ += by;
    waiters = waiters_;
  }
  for (auto* cv : waiters) cv->notify_all();
}

}  // namespace banlieue::common
