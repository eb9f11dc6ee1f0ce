#include "host/runtime/cache_metrics.h"

#include <banlieue/sdk/json.h>

#include <vector>

namespace banlieue::runtime {
namespace {
constexpr char kPhaseIndex[] = "readinessPhase";
}  // namespace

std::string readinessPhase(const rapidjson::Value& object) {
  namespace json = sdk::json;
  if (!json::stringOr(&object, "metadata.deletionTimestamp").empty()) return "Deleting";
  const auto* conditions = json::find(&object, "status.conditions");
  if (conditions != nullptr && conditions->IsArray()) {
    for (const auto& c : conditions->GetArray()) {
      if (json::stringOr(&c, "type") != "Ready") continue;
      std::string status = json::stringOr(&c, "status");
      if (status == "True") return "Ready";
      if (status == "False") return "NotReady";
    }
  }
  return "Pending";
}

MetricsCollector exportPhaseGauge(MetricsRegistry& registry, const std::string& name,
                                  const std::string& help, Informer& informer) {
  informer.addIndexer(kPhaseIndex, [](const rapidjson::Value& object) {
    return std::vector<std::string>{readinessPhase(object)};
  });
  std::vector<Gauge*> gauges;
  gauges.reserve(kReadinessPhases.size());
  for (const char* phase : kReadinessPhases) {
    gauges.push_back(&registry.gauge(name, help, {{"phase", phase}}));
  }
  return registry.addCollector([gauges, &informer] {
    for (size_t i = 0; i < gauges.size(); ++i) {
      gauges[i]->set(static_cast<double>(informer.countByIndex(kPhaseIndex, kReadinessPhases[i])));
    }
  });
}

}  // namespace banlieue::runtime
