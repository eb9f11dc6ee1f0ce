// One plugin call at a time per machine uid across the provider's controllers. The ABI lets
// the host run two calls for one object_uid never at once; each controller's work queue keeps
// that for its own objects, but snapshot and restore calls carry their machine's uid (the
// snapshot slot, ABI 1.2), so they and the machine's reconcile take this lock instead.
#pragma once

#include <condition_variable>
#include <mutex>
#include <set>
#include <string>

namespace banlieue::roles::provider {

class MachineLocks {
 public:
  class Guard {
   public:
    Guard(MachineLocks* locks, std::string uid) : locks_(locks), uid_(std::move(uid)) {}
    Guard(Guard&& other) noexcept : locks_(other.locks_), uid_(std::move(other.uid_)) {
      other.locks_ = nullptr;
    }
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;
    Guard& operator=(Guard&&) = delete;
    ~Guard() {
      if (locks_ != nullptr) locks_->unlock(uid_);
    }

   private:
    MachineLocks* locks_;
    std::string uid_;
  };

  // Blocks while another call holds `uid` (a plugin call is bounded by its deadline).
  Guard lock(const std::string& uid) {
    std::unique_lock lock(mu_);
    released_.wait(lock, [&] { return held_.count(uid) == 0; });
    held_.insert(uid);
    return Guard(this, uid);
  }

 private:
  void unlock(const std::string& uid) {
    {
      std::lock_guard lock(mu_);
      held_.erase(uid);
    }
    released_.notify_all();
  }

  std::mutex mu_;
  std::condition_variable released_;
  std::set<std::string> held_;
};

}  // namespace banlieue::roles::provider
