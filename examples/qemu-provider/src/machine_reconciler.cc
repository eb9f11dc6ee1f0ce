#include "machine_reconciler.h"

#include <banlieue/sdk/restart.h>

#include <algorithm>
#include <optional>

#include "machine.h"
#include "machine_spec.h"
#include "qmp_client.h"

namespace qemu_provider {
namespace {

namespace json = banlieue::sdk::json;
using banlieue::sdk::Call;
using banlieue::sdk::Code;
using banlieue::sdk::Error;
using banlieue::sdk::ReconcileRequest;
using banlieue::sdk::Reply;
using banlieue::sdk::Status;
using std::chrono::milliseconds;

// The part of a call's time kept back so the reply reaches the host before its deadline.
Deadline workDeadline(const Call& call) {
  milliseconds left = call.remaining();
  milliseconds margin = std::min(milliseconds(500), left / 10);
  return std::chrono::steady_clock::now() + left - margin;
}

std::string describe(int64_t cpus, int64_t memory_mib) {
  return std::to_string(cpus) + " CPUs and " + std::to_string(memory_mib) + " MiB";
}

// What the guest lacks of the spec, in words; empty when it runs the spec's shape.
std::string shapeDifference(const LiveShape& live, const MachineSpec& spec) {
  std::set<std::string> wanted;
  for (const auto& d : spec.disks) wanted.insert(d.name);
  if (live.cpus == spec.cpus && live.memory_mib == spec.memory_mib && live.disks == wanted) {
    return {};
  }
  std::string text = "the guest runs " + describe(live.cpus, live.memory_mib) + " with " +
                     std::to_string(live.disks.size()) + " disks; the spec asks for " +
                     describe(spec.cpus, spec.memory_mib) + " with " +
                     std::to_string(wanted.size());
  return text;
}

std::string observedPower(const std::string& qmp_status) {
  if (qmp_status == "running") return "PoweredOn";
  if (qmp_status == "paused" || qmp_status == "suspended") return "Suspended";
  return "PoweredOff";
}

// The status every reply of an existing machine carries.
void reportMachine(Reply& reply, const std::string& provider_id, const std::string& power,
                   const std::string& accel, const std::string& failure_domain) {
  auto& a = reply.allocator();
  auto& status = reply.status();
  status.AddMember("providerID", json::stringValue(provider_id, a), a);
  rapidjson::Value init(rapidjson::kObjectType);
  init.AddMember("provisioned", true, a);
  status.AddMember("initialization", init, a);
  status.AddMember("observedPowerState", json::stringValue(power, a), a);
  status.AddMember("failureDomain", json::stringValue(failure_domain, a), a);
  if (!accel.empty()) status.AddMember("accel", json::stringValue(accel, a), a);
}

Status inProgress(Reply& reply, const std::string& token, const std::string& description) {
  reply.setOperation(token, description);
  reply.requeueAfter(milliseconds(1000));
  return Status::inProgress("InProgress", description);
}

}  // namespace

Status MachineReconciler::reconcile(const Call& call, const ReconcileRequest& request,
                                    Reply& reply) const {
  if (call.cancelled()) return {Code::kCancelled, "Cancelled", "the call was cancelled"};
  const MachineSpec spec = MachineSpec::parse(request.spec);
  const Deadline deadline = workDeadline(call);
  Machine machine(config_, request.uid);
  Machine::Lock lock(machine, deadline);
  const std::string who = request.namespace_ + "/" + request.name;
  const std::string provider_id = "qemu://" + host_ + "/" + machine.id();
  const std::string zone = json::stringOr(request.spec, "failureDomain", "local");
  const std::string wanted_power = spec.power == "Suspended" ? "Suspended" : "PoweredOn";
  const std::string restart = banlieue::sdk::unansweredRestart(request);
  // Every reply of an existing machine: its status, the restart request's answer (once a
  // request is seen it is answered: Restarted as the restart begins, else NotRunning) and
  // HardwareApplied.
  std::optional<bool> restarted;
  auto report = [&](const std::string& power, const char* applied, const char* reason,
                    const std::string& message) {
    reportMachine(reply, provider_id, power, power == "PoweredOff" ? "" : config_.accel, zone);
    if (!restart.empty()) banlieue::sdk::answerRestart(reply, restart, restarted.value_or(false));
    reply.setCondition("HardwareApplied", applied, reason, message);
  };
  auto done = [&](const std::string& power, const char* applied, const char* reason,
                  const std::string& message) {
    report(power, applied, reason, message);
    reply.clearOperation();
    return Status::ok();
  };
  const std::string off_message = "the machine is off; it starts with the spec's shape";
  // Whether the reply may say the machine is settled (docs/provider-contract.md, "Settled
  // replies"): only when this pass found it as the spec asks and did nothing. A pass that
  // created, started, stopped or resumed it, or ended a stop it carried in its token, leaves
  // the confirmation to the next one.
  bool acted = request.operation_token.has_value();

  if (!machine.exists()) {
    machine.create(spec, who, deadline);
    acted = true;
    BANLIEUE_LOG(kInfo, "created the disks of " + who + " in " + machine.dir().string());
  }

  if (machine.runningPid()) {
    acted = acted || spec.power == "PoweredOff";  // the stop below ends or begins now
    std::string qmp_status;
    std::string difference;
    {
      QmpClient qmp(machine.qmpSocket(), deadline);
      qmp_status = qmp.status();
      difference = shapeDifference(Machine::liveShape(qmp), spec);
      const bool stopping = std::filesystem::exists(machine.dir() / "powerdown");
      const bool restart_now = !restart.empty() && spec.power != "PoweredOff";
      const bool resize_now = !difference.empty() && !spec.wait_for_restart;
      if (spec.power != "PoweredOff" && !stopping && !restart_now && !resize_now) {
        // Running as it should: only the run state may need a change.
        if (spec.power == "Suspended" && qmp_status == "running") {
          qmp.execute("stop");
          qmp_status = qmp.status();
          acted = true;
        } else if (spec.power == "PoweredOn" && qmp_status == "paused") {
          qmp.execute("cont");
          qmp_status = qmp.status();
          acted = true;
        }
        if (observedPower(qmp_status) != wanted_power) {
          return {Code::kUnavailable, "GuestNotRunning",
                  "QEMU of " + who + " reports '" + qmp_status + "'"};
        }
        if (difference.empty()) {
          if (!acted) reply.settle();
          return done(wanted_power, "True", "Applied", "the guest runs the spec");
        }
        return done(wanted_power, "False", "RestartRequired",
                    difference + " (resizePolicy WaitForRestart: applied at the next restart)");
      }
      if (restart_now) restarted = true;
    }
    // Stop it (the QMP session above is closed: QEMU serves one client at a time): a power
    // off, a restart request, a resize applied by a restart (docs/adr/0034), or a graceful
    // stop an earlier call began.
    if (!machine.stopGracefully(config_.powerdown_grace, deadline)) {
      if (spec.power == "PoweredOff" || difference.empty()) {
        report(observedPower(qmp_status), "True", "Applied", "the guest runs the spec");
      } else {
        report(observedPower(qmp_status), "False", "RestartingToApply", difference);
      }
      return inProgress(reply, "stop/" + machine.id(),
                        "waiting for the guest of " + who + " to power off");
    }
    BANLIEUE_LOG(kInfo, "stopped QEMU of " + who);
  }

  if (spec.power == "PoweredOff") {
    if (!acted) reply.settle();
    return done("PoweredOff", "True", "AppliedAtNextStart", off_message);
  }
  machine.createMissingDisks(spec, deadline);
  machine.start(spec, config_.accel, who, deadline);
  BANLIEUE_LOG(kInfo, "started QEMU of " + who + " (" + describe(spec.cpus, spec.memory_mib) +
                          ", accel " + config_.accel + ")");
  QmpClient qmp(machine.qmpSocket(), deadline);
  if (spec.power == "Suspended") qmp.execute("stop");
  const std::string qmp_status = qmp.status();
  if (observedPower(qmp_status) != wanted_power) {
    return {Code::kUnavailable, "GuestNotRunning",
            "QEMU of " + who + " started but reports '" + qmp_status + "'"};
  }
  return done(wanted_power, "True", "Applied", "the guest runs the spec");
}

Status MachineReconciler::finalize(const Call& call, const ReconcileRequest& request,
                                   Reply& reply) const {
  std::optional<Machine> machine;
  try {
    machine.emplace(config_, request.uid);
  } catch (const Error& e) {
    // No machine was ever made for an object without a usable uid: nothing to delete.
    if (e.reason() == "InvalidUid") return Status::ok();
    throw;
  }
  const Deadline deadline = workDeadline(call);
  Machine::Lock lock(*machine, deadline);
  if (!machine->remove(deadline)) {
    return inProgress(
        reply, "delete/" + machine->id(),
        "waiting for QEMU of " + request.namespace_ + "/" + request.name + " to exit");
  }
  lock.release(/*remove_file=*/true);
  BANLIEUE_LOG(kInfo, "deleted machine " + request.namespace_ + "/" + request.name);
  return Status::ok();
}

}  // namespace qemu_provider
