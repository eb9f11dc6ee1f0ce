// Long operations a plugin runs on threads of its own (an image import, a copy): the first call
// starts the work, answers IN_PROGRESS with an operation token, and every later call finds the
// work again by that token (ADR 0001: the host stores the token in the object's status and
// passes it back). This registry owns the jobs; a token from before a restart finds nothing,
// and the plugin starts over (idempotently: the result's name must make a finished earlier
// attempt visible).
//
// Job is the plugin's own type; it must have `std::atomic<bool> stop` (the work checks it and
// cleans up what it wrote) and `std::thread thread` (the worker).
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <string_view>
#include <thread>

namespace banlieue::sdk {

template <class Job>
class BackgroundOperations {
 public:
  BackgroundOperations() = default;
  ~BackgroundOperations() { stopAll(); }
  BackgroundOperations(const BackgroundOperations&) = delete;
  BackgroundOperations& operator=(const BackgroundOperations&) = delete;

  // Registers `job` and returns its new token, "<prefix>:<n>:<random>": unique in this process
  // and not guessable from an earlier one. Start the job's thread after this.
  std::string add(std::shared_ptr<Job> job, std::string_view prefix) {
    std::lock_guard lock(mutex_);
    std::string token = std::string(prefix) + ":" + std::to_string(++next_id_) + ":" +
                        std::to_string(std::random_device{}());
    jobs_[token] = std::move(job);
    return token;
  }

  // The job of `token`, or null (unknown, finished and removed, or from before a restart).
  std::shared_ptr<Job> find(const std::string& token) const {
    std::lock_guard lock(mutex_);
    auto it = jobs_.find(token);
    return it == jobs_.end() ? nullptr : it->second;
  }

  // Joins the job's thread and forgets it: call once its result has been reported.
  void finish(const std::string& token, Job& job) {
    if (job.thread.joinable()) job.thread.join();
    std::lock_guard lock(mutex_);
    jobs_.erase(token);
  }

  // Asks every job to stop, then joins them all (the instance is being destroyed).
  void stopAll() {
    std::map<std::string, std::shared_ptr<Job>> jobs;
    {
      std::lock_guard lock(mutex_);
      jobs.swap(jobs_);
    }
    for (auto& entry : jobs) entry.second->stop = true;
    for (auto& entry : jobs) {
      if (entry.second->thread.joinable()) entry.second->thread.join();
    }
  }

  size_t size() const {
    std::lock_guard lock(mutex_);
    return jobs_.size();
  }

 private:
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<Job>> jobs_;  // guarded by mutex_
  uint64_t next_id_ = 0;                              // guarded by mutex_
};

}  // namespace banlieue::sdk
