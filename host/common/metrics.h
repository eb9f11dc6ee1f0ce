// Prometheus metrics for every role: counters, gauges and histograms with labels, rendered in
// the text exposition format (version 0.0.4) for /metrics. Series are created on first use and
// never removed, so callers may keep the returned references for the process's lifetime.
// Updates are lock-free atomics; only series creation and rendering take the registry lock.
// Values that are cheaper to read than to track (a cache's objects by phase, a queue's work in
// progress, process_* from /proc) are set by collectors, which run before every render.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace banlieue {

using MetricLabels = std::vector<std::pair<std::string, std::string>>;

class Counter {
 public:
  void inc(double by = 1) { value_.fetch_add(by, std::memory_order_relaxed); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

class Gauge {
 public:
  void set(double value) { value_.store(value, std::memory_order_relaxed); }
  void add(double by) { value_.fetch_add(by, std::memory_order_relaxed); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  void observe(double value);
  // Cumulative counts per bucket (the last is +Inf), plus sum and count.
  struct Snapshot {
    std::vector<double> upper_bounds;
    std::vector<uint64_t> cumulative;
    double sum = 0;
    uint64_t count = 0;
  };
  Snapshot snapshot() const;

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;  // non-cumulative, bounds_.size() + 1
  std::atomic<double> sum_{0};
  std::atomic<uint64_t> count_{0};
};

// Seconds: 1 ms to 60 s, the range of API calls and reconciles.
std::vector<double> defaultLatencyBuckets();

class MetricsRegistry;

// Keeps a collector registered; destroying it unregisters the collector, waiting for a render
// that is running it to finish, so the collector may capture objects that outlive the handle.
class [[nodiscard]] MetricsCollector {
 public:
  MetricsCollector() = default;
  MetricsCollector(MetricsRegistry* registry, uint64_t id) : registry_(registry), id_(id) {}
  MetricsCollector(MetricsCollector&& other) noexcept;
  MetricsCollector& operator=(MetricsCollector&& other) noexcept;
  ~MetricsCollector();

 private:
  MetricsRegistry* registry_ = nullptr;
  uint64_t id_ = 0;
};

class MetricsRegistry {
 public:
  // The process-wide registry that /metrics serves, with the process_* metrics of
  // process_metrics.h.
  static MetricsRegistry& global();

  Counter& counter(const std::string& name, const std::string& help,
                   const MetricLabels& labels = {});
  Gauge& gauge(const std::string& name, const std::string& help, const MetricLabels& labels = {});
  Histogram& histogram(const std::string& name, const std::string& help,
                       const MetricLabels& labels = {},
                       const std::vector<double>& upper_bounds = defaultLatencyBuckets());

  // `collect` runs before every render (on the scraping thread, one collector at a time) and
  // sets the gauges it owns. It must not register or unregister collectors.
  MetricsCollector addCollector(std::function<void()> collect);

  // Text exposition format, families sorted by name, series by labels.
  std::string render() const;

 private:
  friend class MetricsCollector;
  void removeCollector(uint64_t id);

  enum class Type { kCounter, kGauge, kHistogram };
  struct Family {
    Type type;
    std::string help;
    std::map<MetricLabels, std::unique_ptr<Counter>> counters;
    std::map<MetricLabels, std::unique_ptr<Gauge>> gauges;
    std::map<MetricLabels, std::unique_ptr<Histogram>> histograms;
  };
  Family& family(const std::string& name, const std::string& help, Type type);

  mutable std::mutex mutex_;
  std::map<std::string, Family> families_;
  mutable std::mutex collectors_mutex_;  // held while collectors run; taken before mutex_
  std::map<uint64_t, std::function<void()>> collectors_;
  uint64_t next_collector_ = 1;
};

}  // namespace banlieue
