#include "host/roles/controller/status_mirror.h"

#include "host/runtime/object_helpers.h"

#include <banlieue/sdk/json.h>

#include <rapidjson/document.h>

#include <algorithm>

namespace banlieue::controller {
namespace {

namespace json = sdk::json;

std::optional<api::Condition> conditionOf(const rapidjson::Value& infra, const std::string& type) {
  const auto* list = json::find(&infra, "status.conditions");
  if (list == nullptr || !list->IsArray()) return std::nullopt;
  for (const auto& entry : list->GetArray()) {
    if (!entry.IsObject() || json::stringOr(&entry, "type") != type) continue;
    api::Condition condition;
    condition.type = type;
    condition.status = json::stringOr(&entry, "status", "Unknown");
    condition.reason = json::stringOr(&entry, "reason");
    condition.message = json::stringOr(&entry, "message");
    return condition;
  }
  return std::nullopt;
}

}  // namespace

InfraObservation observeInfra(const rapidjson::Value& infra) {
  InfraObservation out;
  if (const auto* provisioned = json::find(&infra, "status.initialization.provisioned");
      provisioned != nullptr && provisioned->IsBool()) {
    out.initialization = api::InitializationStatus{.provisioned = provisioned->GetBool()};
  }
  if (const auto* addresses = json::find(&infra, "status.addresses");
      addresses != nullptr && addresses->IsArray()) {
    for (const auto& entry : addresses->GetArray()) {
      auto type = json::string(&entry, "type");
      auto address = json::string(&entry, "address");
      if (type && address) out.addresses.push_back({std::string(*type), std::string(*address)});
    }
  }
  out.observed_power_state = json::stringOr(&infra, "status.observedPowerState");
  if (auto requested = json::string(&infra, "status.lastRestart.requestedAt");
      requested && !requested->empty()) {
    out.last_restart =
        api::RestartRecord{.requested_at = std::string(*requested),
                           .performed_at = json::stringOr(&infra, "status.lastRestart.performedAt"),
                           .outcome = json::stringOr(&infra, "status.lastRestart.outcome")};
  }
  if (const auto* certificates = json::find(&infra, "status.tpmEndorsementCertificates");
      certificates != nullptr && certificates->IsArray()) {
    for (const auto& entry : certificates->GetArray())
      if (entry.IsString()) out.tpm_endorsement_certificates.emplace_back(entry.GetString());
  }
  out.ready = conditionOf(infra, conditions::kReady);
  out.guest_ready = conditionOf(infra, conditions::kGuestReady);
  return out;
}

const api::Condition* findCondition(const std::vector<api::Condition>& list,
                                    const std::string& type) {
  auto it = std::find_if(list.begin(), list.end(), [&](const auto& c) { return c.type == type; });
  return it == list.end() ? nullptr : &*it;
}

void setCondition(std::vector<api::Condition>& list, const std::string& type,
                  const std::string& status, const std::string& reason, const std::string& message,
                  int64_t generation, const std::string& now) {
  // Backend reasons travel up here: made valid, with a message, as the CRD requires.
  std::string valid_reason = runtime::conditionReason(reason);
  std::string valid_message =
      runtime::conditionMessage(message, reason.empty() ? valid_reason : reason);
  auto it = std::find_if(list.begin(), list.end(), [&](const auto& c) { return c.type == type; });
  if (it == list.end()) {
    list.push_back({.type = type,
                    .status = status,
                    .observed_generation = generation,
                    .last_transition_time = now,
                    .reason = valid_reason,
                    .message = valid_message});
    return;
  }
  if (it->status != status || it->last_transition_time.empty()) it->last_transition_time = now;
  it->status = status;
  it->reason = valid_reason;
  it->message = valid_message;
  it->observed_generation = generation;
}

void removeCondition(std::vector<api::Condition>& list, const std::string& type) {
  list.erase(
      std::remove_if(list.begin(), list.end(), [&](const auto& c) { return c.type == type; }),
      list.end());
}

void mirrorInfra(api::VirtualMachineStatus& status, const std::optional<InfraObservation>& infra,
                 int64_t generation, const std::string& now) {
  // Once written, initialization is never dropped but set to provisioned=false: a server-side
  // apply that removes the last field of an object leaves `initialization: null`, which the
  // schema refuses, and every later status write would fail.
  std::optional<api::InitializationStatus> initialization =
      infra ? infra->initialization : std::nullopt;
  if (!initialization && status.initialization)
    initialization = api::InitializationStatus{.provisioned = false};
  status.initialization = initialization;
  if (infra) {
    status.addresses = infra->addresses;
    status.observed_power_state = infra->observed_power_state;
    // Kept when the machine has none (a machine made after a swap): the request was answered.
    if (infra->last_restart) status.last_restart = infra->last_restart;
    status.tpm_endorsement_certificates = infra->tpm_endorsement_certificates;
  } else {
    status.addresses.clear();
    status.observed_power_state.clear();
    status.tpm_endorsement_certificates.clear();
  }
  if (infra && infra->ready) {
    const auto& ready = *infra->ready;
    std::string reason = ready.reason.empty() ? "InfrastructureReported" : ready.reason;
    setCondition(status.conditions, conditions::kInfrastructureReady, ready.status, reason,
                 ready.message, generation, now);
  } else {
    setCondition(status.conditions, conditions::kInfrastructureReady, "False", "Pending",
                 infra ? "infrastructure has not reported a Ready condition yet"
                       : "the infrastructure object does not exist yet",
                 generation, now);
  }
  if (infra && infra->guest_ready) {
    const auto& guest = *infra->guest_ready;
    setCondition(status.conditions, conditions::kGuestReady, guest.status,
                 guest.reason.empty() ? "GuestReported" : guest.reason, guest.message, generation,
                 now);
  } else {
    removeCondition(status.conditions, conditions::kGuestReady);
  }
  setAggregateReady(status, generation, now);
}

void setAggregateReady(api::VirtualMachineStatus& status, int64_t generation,
                       const std::string& now) {
  auto is = [&](const char* type, const char* value) {
    const auto* condition = findCondition(status.conditions, type);
    return condition != nullptr && condition->status == value;
  };
  if (!is(conditions::kScheduled, "True")) {
    setCondition(status.conditions, conditions::kReady, "False", "Scheduling",
                 "scheduling not yet successful", generation, now);
  } else if (is(conditions::kPlacementValid, "False")) {
    setCondition(status.conditions, conditions::kReady, "False", "PlacementInvalid",
                 findCondition(status.conditions, conditions::kPlacementValid)->message, generation,
                 now);
  } else if (!is(conditions::kInfrastructureReady, "True")) {
    // The backend's own reason travels up, so `kubectl get vm` / `kubectl wait` say why.
    std::string message = "waiting for the infrastructure CR to report Ready";
    const auto* infra = findCondition(status.conditions, conditions::kInfrastructureReady);
    if (infra != nullptr && !infra->message.empty()) {
      message += " (" + infra->reason + ": " + infra->message + ")";
    }
    // An object the provider holds back because it crashed or hung the plugin is not waiting
    // for progress: its own reason is the VM's, so `kubectl get vm` shows it (ADR 0021).
    const bool held_back =
        infra != nullptr && (infra->reason == "PluginCrashed" || infra->reason == "PluginHung");
    setCondition(status.conditions, conditions::kReady, "False",
                 held_back ? infra->reason : std::string("InfrastructureNotReady"), message,
                 generation, now);
  } else {
    setCondition(status.conditions, conditions::kReady, "True", "Reconciled",
                 "VirtualMachine reconciled successfully", generation, now);
  }
}

}  // namespace banlieue::controller
