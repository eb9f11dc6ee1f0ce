#include "host/runtime/rate_limiter.h"

#include <algorithm>
#include <cmath>

namespace banlieue::runtime {

std::chrono::nanoseconds ItemExponentialBackoff::when(const std::string& key) {
  std::lock_guard lock(mutex_);
  int exponent = failures_[key]++;
  // 2^exponent overflows long before the cap matters; stop doubling once past it.
  double delay = static_cast<double>(base_.count()) * std::pow(2.0, std::min(exponent, 62));
  if (delay >= static_cast<double>(max_.count())) return max_;
  return std::chrono::nanoseconds(static_cast<int64_t>(delay));
}

void ItemExponentialBackoff::forget(const std::string& key) {
  std::lock_guard lock(mutex_);
  failures_.erase(key);
}

int ItemExponentialBackoff::failures(const std::string& key) const {
  std::lock_guard lock(mutex_);
  auto it = failures_.find(key);
  return it == failures_.end() ? 0 : it->second;
}

TokenBucket::TokenBucket(Clock& clock, double per_second, int burst)
    : clock_(clock), per_second_(per_second), burst_(burst), tokens_(burst), last_(clock.now()) {}

std::chrono::nanoseconds TokenBucket::reserve() {
  std::lock_guard lock(mutex_);
  auto now = clock_.now();
  double elapsed = std::chrono::duration<double>(now - last_).count();
  last_ = now;
  tokens_ = std::min(burst_, tokens_ + elapsed * per_second_);
  tokens_ -= 1;  // reserve, possibly going into debt: later reservations wait longer
  if (tokens_ >= 0) return std::chrono::nanoseconds(0);
  return std::chrono::nanoseconds(static_cast<int64_t>(-tokens_ / per_second_ * 1e9));
}

}  // namespace banlieue::runtime
