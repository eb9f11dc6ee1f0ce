// A rate-limited work queue of object keys ("ns/name") with client-go's guarantees:
//  - a key is queued at most once however often it is added (dirty set);
//  - a key is never handed to two workers at once: added while being processed, it is queued
//    again only when the worker calls done();
//  - FIFO among ready keys; add_after() delays a key on the queue's Clock;
//  - add_rate_limited() delays by the controller rate limiter, forget() resets its backoff;
//  - shut_down() wakes every waiting worker; get() then returns nothing.
// A named queue also exports client-go's workqueue_* metrics, labelled {name, controller} as
// controller-runtime labels them (both the controller's name): depth, adds_total,
// retries_total, queue_duration_seconds, work_duration_seconds, and, computed at scrape time,
// unfinished_work_seconds and longest_running_processor_seconds.
#pragma once

#include "host/common/metrics.h"
#include "host/runtime/clock.h"
#include "host/runtime/rate_limiter.h"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>

namespace banlieue::runtime {

struct WorkQueueStats {
  uint64_t adds = 0;      // add() calls that queued a key
  uint64_t retries = 0;   // add_rate_limited() calls
  size_t depth = 0;       // keys ready to be handed out
  size_t waiting = 0;     // keys delayed by add_after
  size_t processing = 0;  // keys handed out and not yet done
};

class WorkQueue {
 public:
  explicit WorkQueue(Clock& clock = SteadyClock::instance(), const std::string& metrics_name = {});
  ~WorkQueue();
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  void add(const std::string& key);
  void addAfter(const std::string& key, std::chrono::nanoseconds delay);
  void addRateLimited(const std::string& key);
  void forget(const std::string& key);
  int retries(const std::string& key) const { return limiter_.failures(key); }

  // Blocks until a key is ready (or the queue shuts down: nullopt). The caller must call
  // done(key) when it has finished with it.
  std::optional<std::string> get();
  void done(const std::string& key);

  void shutDown();
  bool shuttingDown() const;
  WorkQueueStats stats() const;

 private:
  void addLocked(const std::string& key);
  void promoteDueLocked();

  Clock& clock_;
  ControllerRateLimiter limiter_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::string> queue_;
  std::set<std::string> dirty_;
  std::map<std::string, Clock::TimePoint> processing_;  // key -> when a worker took it
  std::multimap<Clock::TimePoint, std::string> delayed_;
  std::map<std::string, Clock::TimePoint> delayed_due_;  // earliest due time per key
  bool shutting_down_ = false;
  uint64_t adds_ = 0;
  uint64_t retries_ = 0;
  std::map<std::string, Clock::TimePoint> queued_at_;  // when each ready key joined queue_

  struct Metrics {
    Gauge* depth = nullptr;
    Counter* adds = nullptr;
    Counter* retries = nullptr;
    Histogram* queue_duration = nullptr;
    Histogram* work_duration = nullptr;
    Gauge* unfinished_work = nullptr;
    Gauge* longest_running = nullptr;
  } metrics_;
  MetricsCollector in_progress_collector_;  // last: unregistered before the rest goes
};

}  // namespace banlieue::runtime
