// The infra CR a placed VirtualMachine becomes (pure; docs/adr/0010). The kind is whatever the
// chosen Provider's ProviderClass publishes in status.machineKind. The in-tree kinds
// (VSphereMachine, LibvirtMachine, ProxmoxMachine) get their backend's spec; any other kind gets
// the generic machine spec third-party providers read (see buildGenericSpec in the .cc).
//
// Every kind carries the contract fields: same name and namespace as the VM, labels
// `banlieue.io/provider` and `banlieue.io/owned-by` (plus the VM's own labels), a controller
// ownerReference to the VM, spec.providerRef, spec.failureDomain, spec.desiredPowerState and,
// for a VM with userData, the annotations naming the Secret that holds it rendered (never the
// text: docs/adr/0026). spec.providerID is never set here: the provider runtime owns it. A
// new object carries its provider's finalizer when the class publishes it (docs/adr/0056).
#pragma once

#include "host/api/provider.h"
#include "host/api/virtual_machine.h"
#include "host/api/vm_class.h"
#include "host/common/status_or.h"
#include "host/roles/controller/rendered_user_data.h"
#include "host/roles/controller/scheduler.h"

#include <rapidjson/document.h>

#include <optional>
#include <string>
#include <vector>

namespace banlieue::controller {

inline constexpr const char* kFieldManager = "banlieue.io/controller";
inline constexpr const char* kProviderLabel = "banlieue.io/provider";
inline constexpr const char* kOwnedByLabel = "banlieue.io/owned-by";

// The owned-by label's value for a VM name: the name itself when it fits a label value (63
// characters), otherwise its first characters and a hash of the whole, so a long VM name (up
// to 253 characters) never makes every apply of its infra object invalid.
std::string ownedByLabelValue(const std::string& vm_name);
// FNV-1a of the applied object, so a removed field is noticed although the live object still
// contains it (a subset comparison alone cannot see removals).
inline constexpr const char* kAppliedHashAnnotation = "banlieue.io/applied-hash";

struct MachineKind {
  std::string api_version;
  std::string kind;
  std::string group() const;
};

struct InfraBuildInput {
  const api::VirtualMachine* vm = nullptr;
  const api::VMClass* vm_class = nullptr;
  const api::VMImage* image = nullptr;
  const api::Provider* provider = nullptr;
  const Placement* placement = nullptr;
  MachineKind kind;
  std::optional<UserDataReference> user_data;  // the rendered Secret, when the VM has userData
  // metadata.finalizers of the applied object (infraFinalizers below); outside the applied
  // hash, so objects made before it are not re-applied for it.
  std::vector<std::string> finalizers;
};

// The prefix of every provider's infra finalizer (banlieue.io/provider-<backend>).
inline constexpr const char* kProviderFinalizerPrefix = "banlieue.io/provider-";

// The finalizers the controller's apply of an infra object carries (docs/adr/0056). Creating
// one (`live` null), the finalizer its class's provider pods publish in
// status.plugin.machineFinalizer, so the provider need not write it before its first backend
// call. Applying to an existing one, the provider finalizers it already has: an apply that
// leaves out a finalizer this manager applied before would remove it, and with it the guard
// that the backend machine goes first. Never one the live object lacks (it may be going).
std::vector<std::string> infraFinalizers(const rapidjson::Value* provider_class,
                                         const rapidjson::Value* live);

// The controller ownerReference to `vm` its objects carry (the infrastructure object, the
// rendered userData Secret).
rapidjson::Value vmControllerReference(const api::VirtualMachine& vm,
                                       rapidjson::Document::AllocatorType& a);

// The complete object to apply (InvalidArgument, reason InfraBuildFailed, when the inputs cannot
// make one, e.g. a vSphere failure domain without a datacenter).
StatusOr<rapidjson::Document> buildInfraObject(const InfraBuildInput& input);

// True when `live` already holds everything `desired` sets (objects: every member of desired;
// arrays: same length, element-wise) and carries the same applied hash: applying would change
// nothing, so it is skipped.
bool infraUpToDate(const rapidjson::Value& desired, const rapidjson::Value& live);

// Exposed for tests.
bool jsonContains(const rapidjson::Value& have, const rapidjson::Value& want);

}  // namespace banlieue::controller
