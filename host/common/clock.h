// Time as the host sees it, so tests can move it by hand. Everything that waits for a point in
// time (delayed work-queue items, backoff, lease renewal, the kube client's request throttle)
// waits through a Clock. In common so that the kube client, below the controller runtime, can
// take one too.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <set>

namespace banlieue::common {

class Clock {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  virtual ~Clock() = default;
  virtual TimePoint now() const = 0;
  // Waits on cv (lock held) until notified or `deadline` on this clock has passed.
  virtual void waitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                         TimePoint deadline) = 0;
  // Called by a waiter's owner before it stops using `cv` (fake clocks keep a registry).
  virtual void forget(std::condition_variable& /*cv*/) {}
};

class SteadyClock final : public Clock {
 public:
  TimePoint now() const override { return std::chrono::steady_clock::now(); }
  void waitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                 TimePoint deadline) override {
    cv.wait_until(lock, deadline);
  }
  static SteadyClock& instance();
};

// A clock that only moves when advance() is called; waiters wake on every advance.
class FakeClock final : public Clock {
 public:
  TimePoint now() const override {
    std::lock_guard lock(mutex_);
    return now_;
  }
  void waitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                 TimePoint deadline) override;
  void forget(std::condition_variable& cv) override;
  void advance(std::chrono::nanoseconds by);
  // Threads inside waitUntil right now: a test that moves time only while this is nonzero
  // (and nothing else runs) never moves it under a thread that has not yet looked at it.
  size_t sleeping() const;

 private:
  mutable std::mutex mutex_;
  TimePoint now_{std::chrono::hours(1)};
  std::set<std::condition_variable*> waiters_;
  size_t sleeping_ = 0;
};

}  // namespace banlieue::common
