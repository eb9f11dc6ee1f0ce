#include "host/roles/common/snapshot_binding.h"

#include <banlieue/sdk/json.h>

#include <cctype>

namespace banlieue::roles {
namespace {

namespace json = sdk::json;

bool conditionTrue(const rapidjson::Value& object, const std::string& type) {
  const auto* conditions = json::find(&object, "status.conditions");
  if (conditions == nullptr || !conditions->IsArray()) return false;
  for (const auto& c : conditions->GetArray()) {
    if (json::stringOr(&c, "type") == type) return json::stringOr(&c, "status") == "True";
  }
  return false;
}

SnapshotBinding notYet(std::string reason, std::string message, bool retry) {
  return {std::nullopt, std::move(reason), std::move(message), retry};
}

}  // namespace

std::optional<SnapshotMachine> boundMachine(const rapidjson::Value& snapshot) {
  const auto* ref = json::find(&snapshot, "status.machineRef");
  if (ref == nullptr || !ref->IsObject()) return std::nullopt;
  SnapshotMachine machine{json::stringOr(ref, "apiGroup"), json::stringOr(ref, "kind"),
                          json::stringOr(ref, "name"), json::stringOr(ref, "providerName")};
  if (machine.kind.empty() || machine.name.empty() || machine.provider.empty()) return std::nullopt;
  return machine;
}

SnapshotBinding bindSnapshot(const rapidjson::Value& snapshot, const rapidjson::Value* vm) {
  if (auto bound = boundMachine(snapshot)) return {bound, "", "", false};
  const std::string vm_name = json::stringOr(&snapshot, "spec.virtualMachineName");
  if (vm == nullptr) {
    return notYet("VirtualMachineNotFound",
                  "no VirtualMachine " + vm_name + " in this namespace to snapshot", true);
  }
  if (json::find(vm, "metadata.deletionTimestamp") != nullptr) {
    return notYet("VirtualMachineDeleting",
                  "VirtualMachine " + vm_name + " is being deleted; nothing to snapshot", false);
  }
  const auto* ref = json::find(vm, "status.infrastructureRef");
  const std::string provider = json::stringOr(vm, "status.scheduled.providerName");
  if (ref == nullptr || json::stringOr(ref, "kind").empty() || provider.empty()) {
    return notYet("WaitingForMachine",
                  "VirtualMachine " + vm_name + " has no machine on a backend yet", true);
  }
  return {SnapshotMachine{json::stringOr(ref, "apiGroup"), json::stringOr(ref, "kind"),
                          json::stringOr(ref, "name"), provider},
          "", "", false};
}

SnapshotBinding bindRestore(const rapidjson::Value& restore, const rapidjson::Value* snapshot) {
  const std::string snapshot_name = json::stringOr(&restore, "spec.snapshotName");
  const std::string vm_name = json::stringOr(&restore, "spec.virtualMachineName");
  if (snapshot == nullptr) {
    return notYet("SnapshotNotFound",
                  "no VirtualMachineSnapshot " + snapshot_name + " in this namespace", true);
  }
  if (json::stringOr(snapshot, "spec.virtualMachineName") != vm_name) {
    return notYet("SnapshotOfAnotherMachine",
                  "VirtualMachineSnapshot " + snapshot_name + " is of VirtualMachine " +
                      json::stringOr(snapshot, "spec.virtualMachineName") + ", not " + vm_name,
                  false);
  }
  auto machine = boundMachine(*snapshot);
  if (!machine || !conditionTrue(*snapshot, "Ready")) {
    return notYet("SnapshotNotReady",
                  "VirtualMachineSnapshot " + snapshot_name + " is not Ready yet", true);
  }
  return {machine, "", "", false};
}

std::string backendSnapshotName(const std::string& name, const std::string& uid) {
  constexpr size_t kNameChars = 31;  // + '-' + 8 hex digits = 40
  std::string out;
  if (name.empty() || !std::isalpha(static_cast<unsigned char>(name.front()))) out = "s";
  for (char c : name) {
    if (out.size() >= kNameChars) break;
    out.push_back(std::isalnum(static_cast<unsigned char>(c)) ? c : '-');
  }
  out.push_back('-');
  size_t hex = 0;
  for (char c : uid) {
    if (hex == 8) break;
    if (std::isxdigit(static_cast<unsigned char>(c))) {
      out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
      ++hex;
    }
  }
  return out;
}

}  // namespace banlieue::roles
