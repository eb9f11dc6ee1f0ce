// How long to wait before retrying a key, with client-go's default controller rate limiter:
// the larger of a per-item exponential backoff (5 ms doubling to 1000 s) and an overall token
// bucket (10 per second, burst 100), so one failing object backs off alone and a storm of
// failures cannot hammer the API server.
#pragma once

#include "host/runtime/clock.h"

#include <chrono>
#include <map>
#include <mutex>
#include <string>

namespace banlieue::runtime {

class ItemExponentialBackoff {
 public:
  explicit ItemExponentialBackoff(std::chrono::nanoseconds base = std::chrono::milliseconds(5),
                                  std::chrono::nanoseconds max = std::chrono::seconds(1000))
      : base_(base), max_(max) {}

  // The delay for this failure of `key` (5 ms, 10 ms, 20 ms, ... capped).
  std::chrono::nanoseconds when(const std::string& key);
  void forget(const std::string& key);
  int failures(const std::string& key) const;

 private:
  std::chrono::nanoseconds base_, max_;
  mutable std::mutex mutex_;
  std::map<std::string, int> failures_;
};

class TokenBucket {
 public:
  explicit TokenBucket(Clock& clock, double per_second = 10, int burst = 100);
  // Reserves one token and returns how long to wait for it (zero when one is available).
  std::chrono::nanoseconds reserve();

 private:
  Clock& clock_;
  double per_second_;
  double burst_;
  double tokens_;
  Clock::TimePoint last_;
  std::mutex mutex_;
};

class ControllerRateLimiter {
 public:
  explicit ControllerRateLimiter(Clock& clock) : bucket_(clock) {}
  std::chrono::nanoseconds when(const std::string& key) {
    return std::max(backoff_.when(key), bucket_.reserve());
  }
  void forget(const std::string& key) { backoff_.forget(key); }
  int failures(const std::string& key) const { return backoff_.failures(key); }

 private:
  ItemExponentialBackoff backoff_;
  TokenBucket bucket_;
};

}  // namespace banlieue::runtime
