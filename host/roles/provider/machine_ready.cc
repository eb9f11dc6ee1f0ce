#include "host/roles/provider/machine_ready.h"

#include <algorithm>

namespace banlieue::roles::provider {

runtime::Condition machineReady(bool in_progress, const std::string& operation_description,
                                bool provisioned,
                                const std::vector<runtime::Condition>& plugin_conditions,
                                int64_t generation) {
  if (in_progress) {
    return {"Ready", "False", "InProgress",
            operation_description.empty() ? "backend task in progress" : operation_description,
            generation};
  }
  if (!provisioned) {
    return {"Ready", "False", "Provisioning",
            "the plugin has not reported the machine provisioned yet", generation};
  }
  auto hardware = std::find_if(plugin_conditions.begin(), plugin_conditions.end(),
                               [](const auto& c) { return c.type == kHardwareApplied; });
  if (hardware != plugin_conditions.end() && hardware->status == "False") {
    // The machine exists and runs, but not as the spec says (a change waiting for a restart).
    return {"Ready", "False", hardware->reason.empty() ? "HardwareNotApplied" : hardware->reason,
            "the backend machine does not run the spec yet: " + hardware->message, generation};
  }
  return {"Ready", "True", "Provisioned", "the backend machine matches the spec", generation};
}

}  // namespace banlieue::roles::provider
