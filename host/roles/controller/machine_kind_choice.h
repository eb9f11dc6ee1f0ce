// Which infrastructure kind a VM placed on a Provider becomes. A plugin may serve several
// kinds (its class publishes them all in status.machineKinds); a Provider picks one with
// spec.machineKind, otherwise the class's status.machineKind (the plugin's first) is used.
#pragma once

#include "host/common/status_or.h"
#include "host/roles/controller/infra_builder.h"
#include "host/runtime/informer.h"

#include <vector>

namespace banlieue::controller {

// Every kind a ProviderClass object publishes: status.machineKinds, and status.machineKind
// for a class written before machineKinds existed. Empty when it published none.
std::vector<MachineKind> publishedMachineKinds(const rapidjson::Value& provider_class);

// The kind for VMs on `provider` (a Provider object; may be null when it is not cached yet)
// of `provider_class` (may be null: deleted). Refusals: MachineKindNotPublished (the class has
// published no kind yet), MachineKindNotServed (the Provider names a kind the class does not
// serve; the message lists those it does).
StatusOr<MachineKind> chooseMachineKind(const rapidjson::Value* provider_class,
                                        const rapidjson::Value* provider,
                                        const std::string& class_name);

}  // namespace banlieue::controller
