// The runtime's Ready condition of a machine object after a reconcile reply. Pure, so the
// rule that Ready never claims a spec the machine does not run is tested on its own.
#pragma once

#include "host/runtime/object_helpers.h"

#include <cstdint>
#include <string>
#include <vector>

namespace banlieue::roles::provider {

// The plugin condition that says whether the running machine has the spec's hardware
// (docs/provider-contract.md, "Resize"): False holds Ready back with its own reason.
inline constexpr const char* kHardwareApplied = "HardwareApplied";

// in_progress: the reply was IN_PROGRESS (its operation description becomes the message);
// provisioned: status.initialization.provisioned after the reply; plugin_conditions: the
// conditions the reply sent (empty when it sent none).
runtime::Condition machineReady(bool in_progress, const std::string& operation_description,
                                bool provisioned,
                                const std::vector<runtime::Condition>& plugin_conditions,
                                int64_t generation);

}  // namespace banlieue::roles::provider
