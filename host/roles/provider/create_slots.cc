#include "host/roles/provider/create_slots.h"

#include <algorithm>
#include <vector>

namespace banlieue::roles::provider {

void CreateSlots::setLimit(int limit) {
  std::unique_lock lock(mu_);
  if (limit == limit_) return;
  limit_ = limit;
  wakeReserved(lock);
}

void CreateSlots::hold(const std::string& key) {
  std::lock_guard lock(mu_);
  held_.insert(key);
  auto it = std::find_if(line_.begin(), line_.end(), [&](const auto& e) { return e.first == key; });
  if (it != line_.end()) line_.erase(it);
  woken_.erase(key);
}

bool CreateSlots::acquire(const std::string& key, Wake wake) {
  std::lock_guard lock(mu_);
  if (held_.count(key) != 0) return true;
  auto it = std::find_if(line_.begin(), line_.end(), [&](const auto& e) { return e.first == key; });
  // Slots free now go to the first in line: a newcomer gets one only when nobody waits for it.
  size_t free = limit_ < 1
                    ? line_.size() + 1
                    : static_cast<size_t>(std::max(0, limit_ - static_cast<int>(held_.size())));
  size_t position = it == line_.end() ? line_.size() : static_cast<size_t>(it - line_.begin());
  if (position < free) {
    if (it != line_.end()) line_.erase(it);
    woken_.erase(key);
    held_.insert(key);
    return true;
  }
  if (it != line_.end()) {
    it->second = std::move(wake);
  } else {
    line_.emplace_back(key, std::move(wake));
  }
  woken_.erase(key);  // told, came, found none: a later release tells it again
  return false;
}

void CreateSlots::release(const std::string& key) {
  std::unique_lock lock(mu_);
  bool held = held_.erase(key) != 0;
  auto it = std::find_if(line_.begin(), line_.end(), [&](const auto& e) { return e.first == key; });
  bool queued = it != line_.end();
  if (queued) line_.erase(it);
  woken_.erase(key);
  if (held || queued) wakeReserved(lock);
}

void CreateSlots::wakeReserved(std::unique_lock<std::mutex>& lock) {
  size_t free = limit_ < 1
                    ? line_.size()
                    : static_cast<size_t>(std::max(0, limit_ - static_cast<int>(held_.size())));
  std::vector<Wake> wakes;
  for (size_t i = 0; i < line_.size() && i < free; ++i) {
    if (woken_.insert(line_[i].first).second && line_[i].second) wakes.push_back(line_[i].second);
  }
  lock.unlock();
  for (auto& wake : wakes) wake();
  lock.lock();
}

int CreateSlots::inFlight() const {
  std::lock_guard lock(mu_);
  return static_cast<int>(held_.size());
}

int CreateSlots::waiting() const {
  std::lock_guard lock(mu_);
  return static_cast<int>(line_.size());
}

int CreateSlots::limit() const {
  std::lock_guard lock(mu_);
  return limit_;
}

}  // namespace banlieue::roles::provider
