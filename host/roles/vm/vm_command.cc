#include "host/roles/vm/vm_command.h"

#include "host/kube/api_error.h"
#include "host/kube/client.h"
#include "host/kube/config.h"
#include "host/kube/http_transport.h"
#include "host/roles/common/snapshot_binding.h"
#include "host/roles/controller/vm_reconciler.h"
#include "host/roles/vm/console_command.h"

#include "host/runtime/object_helpers.h"

#include <banlieue/sdk/json.h>
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <thread>

namespace banlieue::roles::vm {
namespace {

namespace json = sdk::json;

struct Options {
  std::string name;
  std::string namespace_;
  std::string kubeconfig;
  std::string context;
  bool wait = true;
  int timeout_seconds = 300;
  // snapshot and restore
  std::string snapshot_name;
  std::string description;
  bool memory = false;
};

// What a verb watches once its request is written: an object, how its end is recognised, and
// the condition whose reason and message tell the user how it goes.
struct Target {
  kube::ResourceType type;
  std::string name;
  std::string condition = "Ready";
  std::function<bool(const rapidjson::Value&)> done;
  // Reasons of `condition` that end the wait: nothing will change until the user does.
  std::vector<std::string> terminal_reasons;
  // Done already when the request was written (judged on the object the write returned, before
  // any controller acted on it): nothing to wait for.
  bool already_done = false;
};

// A verb writes its request (a patch of the VM's spec, or a new object) and says what to watch.
struct Verb {
  std::string name;       // start, stop, restart, snapshot, restore
  std::string done_when;  // for the progress line
  std::function<StatusOr<Target>(kube::KubeClient&, const std::string& ns, std::string& said)>
      request;
};

// RFC 3339 UTC with milliseconds: two restarts asked for within one second stay two requests.
std::string requestTime() {
  auto now = std::chrono::system_clock::now();
  std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  auto millis =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[sizeof "1970-01-01T00:00:00"];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &utc);
  return fmt::format("{}.{:03d}Z", text, millis);
}

// A name suffix from the time: yyyymmdd-hhmmss.
std::string timeSuffix() {
  std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[sizeof "19700101-000000"];
  std::strftime(text, sizeof text, "%Y%m%d-%H%M%S", &utc);
  return text;
}

bool conditionIsTrue(const rapidjson::Value& object, const std::string& type) {
  const auto* c = runtime::condition(object, type);
  return c != nullptr && json::stringOr(c, "status") == "True";
}

std::string vmWhat(const std::string& ns, const std::string& name) {
  return "virtualmachine " + ns + "/" + name;
}

// A verb that patches the VM's spec and waits on the VM.
Verb specVerb(const Options& o, std::string name, const std::string& patch, std::string done_when,
              const std::function<bool(const rapidjson::Value&)>& done) {
  return {std::move(name), std::move(done_when),
          [o, patch, done](kube::KubeClient& client, const std::string& ns,
                           std::string& said) -> StatusOr<Target> {
            auto patched = client.patch(::banlieue::controller::resources::kVirtualMachine, ns,
                                        o.name, kube::PatchType::kMerge, patch);
            if (!patched.ok()) {
              return Status(Code::kFailedPrecondition, "RequestFailed",
                            kube::isNotFound(patched.status())
                                ? vmWhat(ns, o.name) + " does not exist"
                                : vmWhat(ns, o.name) + ": " + patched.status().message());
            }
            said = vmWhat(ns, o.name);
            return Target{::banlieue::controller::resources::kVirtualMachine,
                          o.name,
                          "Ready",
                          done,
                          {},
                          done(*patched)};
          }};
}

Verb powerVerb(const Options& o, const std::string& verb, const std::string& state) {
  return specVerb(o, verb, R"({"spec":{"desiredPowerState":")" + state + R"("}})",
                  "status.observedPowerState is " + state, [state](const rapidjson::Value& vm) {
                    return json::stringOr(&vm, "status.observedPowerState") == state;
                  });
}

Verb restartVerb(const Options& o) {
  const std::string at = requestTime();
  return specVerb(o, "restart", R"({"spec":{"restartRequestedAt":")" + at + R"("}})",
                  "status.lastRestart answers the request of " + at + " and the VM is Ready",
                  [at](const rapidjson::Value& vm) {
                    return json::stringOr(&vm, "status.lastRestart.requestedAt") == at &&
                           (json::stringOr(&vm, "status.lastRestart.outcome") == "NotRunning" ||
                            conditionIsTrue(vm, "Ready"));
                  });
}

// Creates `body` (an object of `type`) after checking that the objects it names exist, so a
// typo is an error now rather than a condition later.
StatusOr<rapidjson::Document> createChecked(
    kube::KubeClient& client, const kube::ResourceType& type, const std::string& ns,
    const std::string& body, const std::vector<std::pair<kube::ResourceType, std::string>>& named) {
  for (const auto& [named_type, named_name] : named) {
    auto found = client.get(named_type, ns, named_name);
    if (!found.ok()) {
      std::string what = named_type.plural.substr(0, named_type.plural.size() - 1);
      what += " ";
      what += ns;
      what += "/";
      what += named_name;
      return Status(Code::kNotFound, "NotFound",
                    kube::isNotFound(found.status()) ? what + " does not exist"
                                                     : what + ": " + found.status().message());
    }
  }
  auto created = client.create(type, ns, body);
  if (!created.ok()) {
    return Status(Code::kFailedPrecondition, "RequestFailed", created.status().message());
  }
  return created;
}

Verb snapshotVerb(const Options& o) {
  return {
      "snapshot", "the VirtualMachineSnapshot is Ready",
      [o](kube::KubeClient& client, const std::string& ns, std::string& said) -> StatusOr<Target> {
        const std::string name =
            o.snapshot_name.empty() ? o.name + "-" + timeSuffix() : o.snapshot_name;
        rapidjson::Document body(rapidjson::kObjectType);
        auto& a = body.GetAllocator();
        body.AddMember("apiVersion", "banlieue.io/v1alpha1", a);
        body.AddMember("kind", "VirtualMachineSnapshot", a);
        rapidjson::Value metadata(rapidjson::kObjectType);
        metadata.AddMember("name", json::stringValue(name, a), a);
        metadata.AddMember("namespace", json::stringValue(ns, a), a);
        body.AddMember("metadata", metadata, a);
        rapidjson::Value spec(rapidjson::kObjectType);
        spec.AddMember("virtualMachineName", json::stringValue(o.name, a), a);
        spec.AddMember("memory", o.memory, a);
        if (!o.description.empty()) {
          spec.AddMember("description", json::stringValue(o.description, a), a);
        }
        body.AddMember("spec", spec, a);
        auto created =
            createChecked(client, kVirtualMachineSnapshotType, ns, json::serialize(body),
                          {{::banlieue::controller::resources::kVirtualMachine, o.name}});
        if (!created.ok()) return created.status();
        said = "virtualmachinesnapshot " + ns + "/" + name + " of " + vmWhat(ns, o.name);
        return Target{kVirtualMachineSnapshotType,
                      name,
                      "Ready",
                      [](const rapidjson::Value& s) { return conditionIsTrue(s, "Ready"); },
                      {"NotSupportedByBackend", "VirtualMachineDeleting", "MachineGone"}};
      }};
}

Verb restoreVerb(const Options& o) {
  return {
      "restore", "the VirtualMachineRestore is Complete",
      [o](kube::KubeClient& client, const std::string& ns, std::string& said) -> StatusOr<Target> {
        const std::string name = o.name + "-restore-" + timeSuffix();
        rapidjson::Document body(rapidjson::kObjectType);
        auto& a = body.GetAllocator();
        body.AddMember("apiVersion", "banlieue.io/v1alpha1", a);
        body.AddMember("kind", "VirtualMachineRestore", a);
        rapidjson::Value metadata(rapidjson::kObjectType);
        metadata.AddMember("name", json::stringValue(name, a), a);
        metadata.AddMember("namespace", json::stringValue(ns, a), a);
        body.AddMember("metadata", metadata, a);
        rapidjson::Value spec(rapidjson::kObjectType);
        spec.AddMember("virtualMachineName", json::stringValue(o.name, a), a);
        spec.AddMember("snapshotName", json::stringValue(o.snapshot_name, a), a);
        body.AddMember("spec", spec, a);
        auto created = createChecked(client, kVirtualMachineRestoreType, ns, json::serialize(body),
                                     {{::banlieue::controller::resources::kVirtualMachine, o.name},
                                      {kVirtualMachineSnapshotType, o.snapshot_name}});
        if (!created.ok()) return created.status();
        said = "virtualmachinerestore " + ns + "/" + name + " of " + vmWhat(ns, o.name) + " to " +
               o.snapshot_name;
        return Target{kVirtualMachineRestoreType,
                      name,
                      "Complete",
                      [](const rapidjson::Value& r) { return conditionIsTrue(r, "Complete"); },
                      {"NotSupportedByBackend", "SnapshotNotFound", "SnapshotOfAnotherMachine",
                       "MachineGone"}};
      }};
}

int fail(const std::string& verb, const std::string& message) {
  std::cerr << "banlieue vm " << verb << ": " << message << "\n";
  return app::kExitFailure;
}

int run(const Options& o, const Verb& verb) {
  std::optional<std::filesystem::path> kubeconfig;
  if (!o.kubeconfig.empty()) kubeconfig = o.kubeconfig;
  std::optional<std::string> context;
  if (!o.context.empty()) context = o.context;
  auto connection = kube::loadDefaultConfig(kubeconfig, context);
  if (!connection.ok()) return fail(verb.name, connection.status().message());
  const std::string ns = o.namespace_.empty() ? connection->default_namespace : o.namespace_;
  auto transport = kube::makeHttpTransport(*connection);
  if (!transport.ok()) return fail(verb.name, transport.status().message());
  auto client = kube::makeKubeClient(std::move(transport).value());

  std::string what;
  auto target = verb.request(*client, ns, what);
  if (!target.ok()) return fail(verb.name, target.status().message());
  if (target->already_done) {
    std::cout << what << ": already done (" << verb.done_when << ")\n";
    return app::kExitOk;
  }
  std::cout << what << ": " << verb.name << " requested\n";
  if (!o.wait) return app::kExitOk;

  std::cout << "waiting until " << verb.done_when << " (at most " << o.timeout_seconds
            << " s; --no-wait returns at once)\n"
            << std::flush;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(o.timeout_seconds);
  std::string last_said;
  while (std::chrono::steady_clock::now() < deadline) {
    auto object = client->get(target->type, ns, target->name);
    if (object.ok()) {
      if (target->done(*object)) {
        std::cout << what << ": " << verb.name << " done\n";
        return app::kExitOk;
      }
      // Progress: the condition's reason and message, when they change.
      std::string said;
      std::string reason;
      if (const auto* c = runtime::condition(*object, target->condition)) {
        reason = json::stringOr(c, "reason");
        said = target->condition + "=" + json::stringOr(c, "status") + " " + reason + ": " +
               json::stringOr(c, "message");
      }
      if (!said.empty() && said != last_said) std::cout << "  " << said << "\n" << std::flush;
      last_said = said;
      for (const auto& terminal : target->terminal_reasons) {
        if (reason == terminal) return fail(verb.name, what.append(": ").append(said));
      }
    } else if (kube::isNotFound(object.status())) {
      return fail(verb.name, what + " was deleted while waiting");
    }
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  return fail(verb.name, "timed out after " + std::to_string(o.timeout_seconds) +
                             " s waiting until " + verb.done_when + "; the request stands");
}

// The options every verb takes; returns the verb's options for its own.
std::shared_ptr<Options> addVerb(CLI::App& parent, app::Action& action, const std::string& name,
                                 const std::string& help, std::function<Verb(const Options&)> make,
                                 CLI::App** added = nullptr) {
  auto o = std::make_shared<Options>();
  auto* sub = parent.add_subcommand(name, help);
  sub->add_option("name", o->name, "The VirtualMachine's name")->required();
  sub->add_option("--namespace,-n", o->namespace_,
                  "Its namespace (default: the kubeconfig context's, else default)");
  sub->add_option("--kubeconfig", o->kubeconfig,
                  "kubeconfig file (default: $KUBECONFIG, else ~/.kube/config)");
  sub->add_option("--context", o->context, "kubeconfig context");
  sub->add_flag("!--no-wait", o->wait, "Return once the request is written");
  sub->add_option("--timeout", o->timeout_seconds, "Seconds to wait for the backend")
      ->capture_default_str();
  sub->callback(
      [&action, o, make = std::move(make)] { action = [o, make] { return run(*o, make(*o)); }; });
  if (added != nullptr) *added = sub;
  return o;
}

}  // namespace

void registerVmCommands(CLI::App& app, app::Action& action) {
  auto* vm = app.add_subcommand(
      "vm",
      "Start, stop, restart, snapshot or restore a VirtualMachine and wait until its backend\n"
      "did it. start, stop and restart write the VM's spec (desiredPowerState, or\n"
      "restartRequestedAt), so they are idempotent and show in the VM like any other change;\n"
      "snapshot and restore create a VirtualMachineSnapshot or VirtualMachineRestore. Each\n"
      "waits for the status to say it was done, printing the condition as it changes.\n"
      "console attaches the terminal to the VM's serial console.\n"
      "As a kubectl plugin: put a link named kubectl-banlieue to this binary on PATH, then\n"
      "'kubectl banlieue vm restart NAME'.");
  vm->require_subcommand(1);
  addVerb(*vm, action, "start",
          "Power the VM on (spec.desiredPowerState: PoweredOn); waits for "
          "status.observedPowerState",
          [](const Options& o) { return powerVerb(o, "start", "PoweredOn"); });
  addVerb(*vm, action, "stop",
          "Power the VM off (spec.desiredPowerState: PoweredOff; the backend shuts the guest "
          "down gracefully where it can); waits for status.observedPowerState",
          [](const Options& o) { return powerVerb(o, "stop", "PoweredOff"); });
  addVerb(*vm, action, "restart",
          "Restart the running VM once: a new spec.restartRequestedAt (now); the backend shuts "
          "the guest down and starts it, and answers in status.lastRestart. A VM that is not "
          "running is answered NotRunning and left as it is",
          [](const Options& o) { return restartVerb(o); });
  CLI::App* snapshot = nullptr;
  auto snapshot_options = addVerb(
      *vm, action, "snapshot",
      "Take a snapshot of the VM on its backend: creates a VirtualMachineSnapshot "
      "(named NAME-<yyyymmdd-hhmmss> unless --snapshot-name says) and waits until it is "
      "Ready. 'kubectl get bvmsnap' lists them; deleting one removes it from the backend",
      [](const Options& o) { return snapshotVerb(o); }, &snapshot);
  snapshot->add_option("--snapshot-name", snapshot_options->snapshot_name,
                       "The VirtualMachineSnapshot's name");
  snapshot->add_flag("--memory", snapshot_options->memory,
                     "Also keep the running VM's memory, where the backend can");
  snapshot->add_option("--description", snapshot_options->description,
                       "Text the backend stores with the snapshot");
  CLI::App* restore = nullptr;
  auto restore_options = addVerb(
      *vm, action, "restore",
      "Bring the VM back to one of its snapshots, once: creates a VirtualMachineRestore and "
      "waits until it is Complete. The backend reverts the machine's disks (and memory, when "
      "the snapshot has it); then the VM returns to its spec's power state",
      [](const Options& o) { return restoreVerb(o); }, &restore);
  restore
      ->add_option("--snapshot", restore_options->snapshot_name,
                   "The VirtualMachineSnapshot to restore to")
      ->required();
  registerConsoleCommand(*vm, action);
}

}  // namespace banlieue::roles::vm
