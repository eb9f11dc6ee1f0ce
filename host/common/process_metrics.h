// The process_* metrics every Prometheus client library exports (client_golang's process
// collector: CPU time, memory, file descriptors, start time), read from /proc at scrape time so
// that dashboards and alerts written for Go operators work on banlieue's roles unchanged.
// Linux only; where /proc cannot be read a metric keeps its last value.
#pragma once

#include "host/common/metrics.h"

namespace banlieue {

// Registers the collector; MetricsRegistry::global() does this for every process.
MetricsCollector exportProcessMetrics(MetricsRegistry& registry);

}  // namespace banlieue
