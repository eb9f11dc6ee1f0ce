#include "host/common/metrics.h"

#include "host/common/process_metrics.h"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

namespace banlieue {
namespace {

std::string escapeLabelValue(const std::string& value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string formatValue(double value) {
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  if (std::isnan(value)) return "NaN";
  return fmt::format("{}", value);
}

// {a="1",b="2"} with an optional extra label (le for histogram buckets).
std::string labelSet(const MetricLabels& labels, const std::string& extra_name = {},
                     const std::string& extra_value = {}) {
  if (labels.empty() && extra_name.empty()) return {};
  std::string out = "{";
  bool first = true;
  for (const auto& [name, value] : labels) {
    if (!first) out += ',';
    first = false;
    out += name + "=\"" + escapeLabelValue(value) + "\"";
  }
  if (!extra_name.empty()) {
    if (!first) out += ',';
    out += extra_name + "=\"" + extra_value + "\"";
  }
  out += '}';
  return out;
}

}  // namespace

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), buckets_(new std::atomic<uint64_t>[bounds_.size() + 1]) {
  for (size_t i = 0; i <= bounds_.size(); ++i) buckets_[i].store(0);
}

void Histogram::observe(double value) {
  size_t i = 0;
  while (i < bounds_.size() && value > bounds_[i]) ++i;
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(value, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
}

Histogram::Snapshot Histogram::snapshot() const {
  Snapshot s;
  s.upper_bounds = bounds_;
  uint64_t running = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    running += buckets_[i].load(std::memory_order_relaxed);
    s.cumulative.push_back(running);
  }
  s.sum = sum_.load(std::memory_order_relaxed);
  s.count = running;
  return s;
}

std::vector<double> defaultLatencyBuckets() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
}

MetricsCollector::MetricsCollector(MetricsCollector&& other) noexcept
    : registry_(std::exchange(other.registry_, nullptr)), id_(other.id_) {}

MetricsCollector& MetricsCollector::operator=(MetricsCollector&& other) noexcept {
  if (this != &other) {
    if (registry_ != nullptr) registry_->removeCollector(id_);
    registry_ = std::exchange(other.registry_, nullptr);
    id_ = other.id_;
  }
  return *this;
}

MetricsCollector::~MetricsCollector() {
  if (registry_ != nullptr) registry_->removeCollector(id_);
}

MetricsRegistry& MetricsRegistry::global() {
  static auto* registry = [] {
    auto* r = new MetricsRegistry();  // never destroyed: metrics outlive threads
    static auto process = exportProcessMetrics(*r);
    return r;
  }();
  return *registry;
}

MetricsCollector MetricsRegistry::addCollector(std::function<void()> collect) {
  std::lock_guard lock(collectors_mutex_);
  uint64_t id = next_collector_++;
  collectors_.emplace(id, std::move(collect));
  return MetricsCollector(this, id);
}

void MetricsRegistry::removeCollector(uint64_t id) {
  std::lock_guard lock(collectors_mutex_);
  collectors_.erase(id);
}

MetricsRegistry::Family& MetricsRegistry::family(const std::string& name, const std::string& help,
                                                 Type type) {
  auto [it, inserted] = families_.try_emplace(name);
  if (inserted) {
    it->second.type = type;
    it->second.help = help;
  } else if (it->second.type != type) {
    throw std::logic_error("metric " + name + " registered with two types");
  }
  return it->second;
}

Counter& MetricsRegistry::counter(const std::string& name, const std::string& help,
                                  const MetricLabels& labels) {
  std::lock_guard lock(mutex_);
  auto& slot = family(name, help, Type::kCounter).counters[labels];
  if (!slot) slot = std::make_unique<Counter>();
  return *slot;
}

Gauge& MetricsRegistry::gauge(const std::string& name, const std::string& help,
                              const MetricLabels& labels) {
  std::lock_guard lock(mutex_);
  auto& slot = family(name, help, Type::kGauge).gauges[labels];
  if (!slot) slot = std::make_unique<Gauge>();
  return *slot;
}

Histogram& MetricsRegistry::histogram(const std::string& name, const std::string& help,
                                      const MetricLabels& labels,
                                      const std::vector<double>& upper_bounds) {
  std::lock_guard lock(mutex_);
  auto& slot = family(name, help, Type::kHistogram).histograms[labels];
  if (!slot) slot = std::make_unique<Histogram>(upper_bounds);
  return *slot;
}

std::string MetricsRegistry::render() const {
  {
    std::lock_guard lock(collectors_mutex_);
    for (const auto& [id, collect] : collectors_) collect();
  }
  std::lock_guard lock(mutex_);
  std::string out;
  for (const auto& [name, fam] : families_) {
    const char* type = fam.type == Type::kCounter ? "counter"
                       : fam.type == Type::kGauge ? "gauge"
                                                  : "histogram";
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, fam.help, name, type);
    for (const auto& [labels, counter] : fam.counters) {
      out += name + labelSet(labels) + " " + formatValue(counter->value()) + "\n";
    }
    for (const auto& [labels, gauge] : fam.gauges) {
      out += name + labelSet(labels) + " " + formatValue(gauge->value()) + "\n";
    }
    for (const auto& [labels, histogram] : fam.histograms) {
      auto s = histogram->snapshot();
      for (size_t i = 0; i < s.cumulative.size(); ++i) {
        std::string le = i < s.upper_bounds.size() ? formatValue(s.upper_bounds[i]) : "+Inf";
        out += name + "_bucket" + labelSet(labels, "le", le) + " " +
               std::to_string(s.cumulative[i]) + "\n";
      }
      out += name + "_sum" + labelSet(labels) + " " + formatValue(s.sum) + "\n";
      out += name + "_count" + labelSet(labels) + " " + std::to_string(s.count) + "\n";
    }
  }
  return out;
}

}  // namespace banlieue
