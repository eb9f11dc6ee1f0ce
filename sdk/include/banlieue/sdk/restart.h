// Restarts, as every machine kind shares them. A restart request: the controller copies a
// VirtualMachine's spec.restartRequestedAt to its machine's spec while no machine has answered it;
// a plugin answers it with status.lastRestart, in the same reply that starts the restart (a
// shutdown then a start), so one request is acted on once. A request on a machine that is not
// running is answered with outcome NotRunning and nothing is done. docs/provider-contract.md,
// "Restart".
#pragma once

#include <banlieue/sdk/json.h>
#include <banlieue/sdk/payloads.h>
#include <banlieue/sdk/provider.h>
#include <banlieue/sdk/time.h>

#include <chrono>
#include <ctime>
#include <string>
#include <string_view>

namespace banlieue::sdk {

// The request in spec.restartRequestedAt that status.lastRestart has not answered; empty when
// there is none.
inline std::string unansweredRestart(const ReconcileRequest& request) {
  std::string requested = json::stringOr(request.spec, "restartRequestedAt");
  if (requested.empty() || json::stringOr(request.status, "lastRestart.requestedAt") == requested) {
    return {};
  }
  return requested;
}

// spec.resizePolicy is WaitForRestart: a change the running machine can take only at boot
// waits for the next restart (report HardwareApplied=False, reason RestartRequired) instead of
// the plugin restarting the machine itself (the default, Restart).
inline bool waitsForRestart(const ReconcileRequest& request) {
  return json::stringOr(request.spec, "resizePolicy", "Restart") == "WaitForRestart";
}

// Answers `requested_at` in the reply's status: Restarted when the restart begins now,
// NotRunning when the machine was not running and nothing was done.
inline void answerRestart(Reply& reply, std::string_view requested_at, bool restarted) {
  auto& a = reply.allocator();
  rapidjson::Value record(rapidjson::kObjectType);
  record.AddMember("requestedAt", json::stringValue(requested_at, a), a);
  record.AddMember("performedAt", json::stringValue(utcNow(), a), a);
  record.AddMember("outcome", rapidjson::StringRef(restarted ? "Restarted" : "NotRunning"), a);
  rapidjson::Value& status = reply.status();
  status.RemoveMember("lastRestart");
  status.AddMember("lastRestart", record, a);
}

}  // namespace banlieue::sdk
