#include "host/runtime/work_queue.h"

namespace banlieue::runtime {
namespace {

// client-go's: 10 ns to 1000 s by powers of ten (exponential buckets 1e-8 * 10^i, i < 12).
const std::vector<double> kWorkQueueBuckets{1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3,
                                            1e-2, 1e-1, 1,    10,   100,  1000};

}  // namespace

WorkQueue::WorkQueue(Clock& clock, const std::string& metrics_name)
    : clock_(clock), limiter_(clock) {
  if (metrics_name.empty()) return;
  auto& registry = MetricsRegistry::global();
  MetricLabels labels{{"name", metrics_name}, {"controller", metrics_name}};
  metrics_.depth = &registry.gauge("workqueue_depth", "Current depth of workqueue", labels);
  metrics_.adds = &registry.counter("workqueue_adds_total",
                                    "Total number of adds handled by workqueue", labels);
  metrics_.retries = &registry.counter("workqueue_retries_total",
                                       "Total number of retries handled by workqueue", labels);
  metrics_.queue_duration =
      &registry.histogram("workqueue_queue_duration_seconds",
                          "How long in seconds an item stays in workqueue before being requested",
                          labels, kWorkQueueBuckets);
  metrics_.work_duration = &registry.histogram(
      "workqueue_work_duration_seconds",
      "How long in seconds processing an item from workqueue takes.", labels, kWorkQueueBuckets);
  metrics_.unfinished_work = &registry.gauge(
      "workqueue_unfinished_work_seconds",
      "How many seconds of work has been done that is in progress and hasn't been observed by "
      "work_duration. Large values indicate stuck threads.",
      labels);
  metrics_.longest_running = &registry.gauge(
      "workqueue_longest_running_processor_seconds",
      "How many seconds has the longest running processor for workqueue been running.", labels);
  in_progress_collector_ = registry.addCollector([this] {
    double unfinished = 0;
    double longest = 0;
    {
      std::lock_guard lock(mutex_);
      auto now = clock_.now();
      for (const auto& [key, since] : processing_) {
        double seconds = std::chrono::duration<double>(now - since).count();
        unfinished += seconds;
        longest = std::max(longest, seconds);
      }
    }
    metrics_.unfinished_work->set(unfinished);
    metrics_.longest_running->set(longest);
  });
}

WorkQueue::~WorkQueue() {
  in_progress_collector_ = {};
  shutDown();
  clock_.forget(cv_);
}

void WorkQueue::addLocked(const std::string& key) {
  if (shutting_down_ || dirty_.count(key) != 0) return;
  dirty_.insert(key);
  ++adds_;
  if (metrics_.adds != nullptr) metrics_.adds->inc();
  if (processing_.count(key) == 0) {
    queue_.push_back(key);
    queued_at_[key] = clock_.now();
    if (metrics_.depth != nullptr) metrics_.depth->set(static_cast<double>(queue_.size()));
    cv_.notify_one();
  }
}

void WorkQueue::add(const std::string& key) {
  std::lock_guard lock(mutex_);
  addLocked(key);
}

void WorkQueue::addAfter(const std::string& key, std::chrono::nanoseconds delay) {
  if (delay <= std::chrono::nanoseconds(0)) {
    add(key);
    return;
  }
  std::lock_guard lock(mutex_);
  if (shutting_down_) return;
  auto due = clock_.now() + std::chrono::duration_cast<Clock::TimePoint::duration>(delay);
  // Keep only the earliest due time of a key, as client-go does.
  auto existing = delayed_due_.find(key);
  if (existing != delayed_due_.end()) {
    if (existing->second <= due) return;
    for (auto [it, end] = delayed_.equal_range(existing->second); it != end; ++it) {
      if (it->second == key) {
        delayed_.erase(it);
        break;
      }
    }
  }
  delayed_.emplace(due, key);
  delayed_due_[key] = due;
  cv_.notify_all();  // a waiting get() may need to wake earlier
}

void WorkQueue::addRateLimited(const std::string& key) {
  auto delay = limiter_.when(key);
  {
    std::lock_guard lock(mutex_);
    ++retries_;
  }
  if (metrics_.retries != nullptr) metrics_.retries->inc();
  addAfter(key, delay);
}

void WorkQueue::forget(const std::string& key) {
  limiter_.forget(key);
}

void WorkQueue::promoteDueLocked() {
  auto now = clock_.now();
  while (!delayed_.empty() && delayed_.begin()->first <= now) {
    std::string key = delayed_.begin()->second;
    delayed_.erase(delayed_.begin());
    delayed_due_.erase(key);
    addLocked(key);
  }
}

std::optional<std::string> WorkQueue::get() {
  std::unique_lock lock(mutex_);
  for (;;) {
    promoteDueLocked();
    if (!queue_.empty()) break;
    if (shutting_down_) return std::nullopt;
    if (delayed_.empty()) {
      cv_.wait(lock);
    } else {
      clock_.waitUntil(lock, cv_, delayed_.begin()->first);
    }
  }
  std::string key = std::move(queue_.front());
  queue_.pop_front();
  if (auto it = queued_at_.find(key); it != queued_at_.end()) {
    if (metrics_.queue_duration != nullptr) {
      metrics_.queue_duration->observe(
          std::chrono::duration<double>(clock_.now() - it->second).count());
    }
    queued_at_.erase(it);
  }
  if (metrics_.depth != nullptr) metrics_.depth->set(static_cast<double>(queue_.size()));
  dirty_.erase(key);
  processing_.emplace(key, clock_.now());
  return key;
}

void WorkQueue::done(const std::string& key) {
  std::lock_guard lock(mutex_);
  if (auto it = processing_.find(key); it != processing_.end()) {
    if (metrics_.work_duration != nullptr) {
      metrics_.work_duration->observe(
          std::chrono::duration<double>(clock_.now() - it->second).count());
    }
    processing_.erase(it);
  }
  if (dirty_.count(key) != 0) {  // re-added while it was being processed
    queue_.push_back(key);
    queued_at_[key] = clock_.now();
    if (metrics_.depth != nullptr) metrics_.depth->set(static_cast<double>(queue_.size()));
    cv_.notify_one();
  }
}

void WorkQueue::shutDown() {
  std::lock_guard lock(mutex_);
  shutting_down_ = true;
  cv_.notify_all();
}

bool WorkQueue::shuttingDown() const {
  std::lock_guard lock(mutex_);
  return shutting_down_;
}

WorkQueueStats WorkQueue::stats() const {
  std::lock_guard lock(mutex_);
  return {adds_, retries_, queue_.size(), delayed_.size(), processing_.size()};
}

}  // namespace banlieue::runtime
