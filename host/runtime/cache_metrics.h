// Gauges computed from an informer's cache when /metrics is scraped, so an object count never
// drifts from the cache the way an increment per event could (a missed delete, a relist). The
// count comes from an index the informer keeps up to date: a scrape parses no object.
#pragma once

#include "host/common/metrics.h"
#include "host/runtime/informer.h"

#include <array>
#include <string>

namespace banlieue::runtime {

// Where an object stands, from its Ready condition and deletion timestamp: Deleting (a deletion
// timestamp, whatever Ready says), Ready (Ready=True), NotReady (Ready=False) or Pending (no
// Ready condition yet, or Unknown). One vocabulary for every kind the roles count.
inline constexpr std::array<const char*, 4> kReadinessPhases{"Pending", "NotReady", "Ready",
                                                             "Deleting"};
std::string readinessPhase(const rapidjson::Value& object);

// <name>{phase} for each of kReadinessPhases (zero included), counting the informer's objects
// at every scrape until the returned collector goes. Adds the index "readinessPhase", so it is
// called before the informer runs. The informer must outlive the collector.
MetricsCollector exportPhaseGauge(MetricsRegistry& registry, const std::string& name,
                                  const std::string& help, Informer& informer);

}  // namespace banlieue::runtime
