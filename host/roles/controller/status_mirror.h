// The VirtualMachine status as the controller writes it: conditions that keep their
// lastTransitionTime while their status holds, what is copied from the infra CR the provider
// runtime reports on, and the Ready truth table
//   Ready = Scheduled==True && PlacementValid!=False && InfrastructureReady==True
// (the first failing term names the reason: Scheduling, PlacementInvalid,
// InfrastructureNotReady). Pure functions; the reconciler decides when to write.
#pragma once

#include "host/api/virtual_machine.h"

#include <rapidjson/fwd.h>

#include <optional>
#include <string>
#include <vector>

namespace banlieue::controller {

namespace conditions {
inline constexpr const char* kReady = "Ready";
inline constexpr const char* kScheduled = "Scheduled";
inline constexpr const char* kPlacementValid = "PlacementValid";
inline constexpr const char* kInfrastructureReady = "InfrastructureReady";
inline constexpr const char* kMigrating = "Migrating";
inline constexpr const char* kPaused = "Paused";
inline constexpr const char* kGuestReady = "GuestReady";
}  // namespace conditions

// What the infra CR says about itself (its status, written by the provider runtime).
struct InfraObservation {
  std::optional<api::InitializationStatus> initialization;
  std::vector<api::MachineAddress> addresses;
  std::string observed_power_state;
  std::optional<api::RestartRecord> last_restart;
  std::vector<std::string> tpm_endorsement_certificates;
  std::optional<api::Condition> ready;
  std::optional<api::Condition> guest_ready;
};

// Reads the fields above from an infra object of any kind; fields of the wrong type are ignored
// (a third party's CR is not trusted to be well formed).
InfraObservation observeInfra(const rapidjson::Value& infra);

// Sets (or adds) a condition; lastTransitionTime moves to `now` only when the status changes.
void setCondition(std::vector<api::Condition>& list, const std::string& type,
                  const std::string& status, const std::string& reason, const std::string& message,
                  int64_t generation, const std::string& now);
void removeCondition(std::vector<api::Condition>& list, const std::string& type);
const api::Condition* findCondition(const std::vector<api::Condition>& list,
                                    const std::string& type);

// Copies the infra CR's report into `status` (nullopt: no infra CR yet) and sets
// InfrastructureReady, GuestReady (only when the infra CR publishes it) and Ready.
void mirrorInfra(api::VirtualMachineStatus& status, const std::optional<InfraObservation>& infra,
                 int64_t generation, const std::string& now);

// Ready from the other conditions (the truth table above).
void setAggregateReady(api::VirtualMachineStatus& status, int64_t generation,
                       const std::string& now);

}  // namespace banlieue::controller
