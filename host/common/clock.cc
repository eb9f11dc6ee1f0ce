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
    ++sleeping_;
  }
  // advance() notifies without the caller's lock, so a wakeup could slip in between the
  // registration above and this wait; a short real-time bound makes that harmless (callers
  // re-check their state in a loop). Test-only clock: the spin costs nothing that matters.
  cv.wait_for(lock, std::chrono::milliseconds(1));
  std::lock_guard guard(mutex_);
  --sleeping_;
}

void FakeClock::forget(std::condition_variable& cv) {
  std::lock_guard guard(mutex_);
  waiters_.erase(&cv);
}

size_t FakeClock::sleeping() const {
  std::lock_guard guard(mutex_);
  return sleeping_;
}

void FakeClock::advance(std::chrono::nanoseconds by) {
  // Notified under the clock's lock: a waiter forgets its condition variable (under the same
  // lock) before destroying it, so none is notified after its destruction (TSan found that
  // with a copy of the set notified outside the lock).
  std::lock_guard guard(mutex_);
  now_ += by;
  for (auto* cv : waiters_) cv->notify_all();
}

}  // namespace banlieue::common
