#include "host/roles/vm/vm_command.h"

#include "host/kube/api_error.h"
#include "host/kube/client.h"
#include "host/kube/config.h"
#include "host/kube/http_transport.h"
#include "host/roles/controller/vm_reconciler.h"

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
};

// What a verb writes into the VM's spec, and how its end is recognised in the VM's status.
struct Verb {
  std::string name;        // start, stop, restart
  std::string spec_patch;  // merge patch of .spec
  std::string done_when;   // for the progress line
  std::function<bool(const rapidjson::Value& vm)> done;
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

bool readyIsTrue(const rapidjson::Value& vm) {
  const auto* conditions = json::find(&vm, "status.conditions");
  if (conditions == nullptr || !conditions->IsArray()) return false;
  for (const auto& c : conditions->GetArray()) {
    if (json::stringOr(&c, "type") == "Ready") return json::stringOr(&c, "status") == "True";
  }
  return false;
}

Verb powerVerb(const std::string& verb, const std::string& state) {
  return {verb, R"({"spec":{"desiredPowerState":")" + state + R"("}})",
          "status.observedPowerState is " + state, [state](const rapidjson::Value& vm) {
            return json::stringOr(&vm, "status.observedPowerState") == state;
          }};
}

Verb restartVerb() {
  const std::string at = requestTime();
  return {"restart", R"({"spec":{"restartRequestedAt":")" + at + R"("}})",
          "status.lastRestart answers the request of " + at + " and the VM is Ready",
          [at](const rapidjson::Value& vm) {
            return json::stringOr(&vm, "status.lastRestart.requestedAt") == at &&
                   (json::stringOr(&vm, "status.lastRestart.outcome") == "NotRunning" ||
                    readyIsTrue(vm));
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

  const std::string what = "virtualmachine " + ns + "/" + o.name;
  auto patched = client->patch(::banlieue::controller::resources::kVirtualMachine, ns, o.name,
                               kube::PatchType::kMerge, verb.spec_patch);
  if (!patched.ok()) {
    return fail(verb.name, kube::isNotFound(patched.status())
                               ? what + " does not exist"
                               : what + ": " + patched.status().message());
  }
  if (verb.done(*patched)) {
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
    auto vm = client->get(::banlieue::controller::resources::kVirtualMachine, ns, o.name);
    if (vm.ok()) {
      if (verb.done(*vm)) {
        std::cout << what << ": " << verb.name << " done\n";
        return app::kExitOk;
      }
      // Progress: the Ready condition's reason and message, when they change.
      std::string said;
      if (const auto* conditions = json::find(&*vm, "status.conditions");
          conditions != nullptr && conditions->IsArray()) {
        for (const auto& c : conditions->GetArray()) {
          if (json::stringOr(&c, "type") != "Ready") continue;
          said = "Ready=" + json::stringOr(&c, "status") + " " + json::stringOr(&c, "reason") +
                 ": " + json::stringOr(&c, "message");
        }
      }
      if (!said.empty() && said != last_said) std::cout << "  " << said << "\n" << std::flush;
      last_said = said;
    } else if (kube::isNotFound(vm.status())) {
      return fail(verb.name, what + " was deleted while waiting");
    }
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  return fail(verb.name, "timed out after " + std::to_string(o.timeout_seconds) +
                             " s waiting until " + verb.done_when + "; the request stands");
}

void addVerb(CLI::App& parent, app::Action& action, const std::string& name,
             const std::string& help, std::function<Verb()> make) {
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
      [&action, o, make = std::move(make)] { action = [o, make] { return run(*o, make()); }; });
}

}  // namespace

void registerVmCommands(CLI::App& app, app::Action& action) {
  auto* vm = app.add_subcommand(
      "vm",
      "Start, stop or restart a VirtualMachine and wait until its backend did it.\n"
      "Each verb writes the VM's spec (desiredPowerState, or restartRequestedAt for a restart),\n"
      "so it is idempotent and shows in the VM like any other change; then it waits for the\n"
      "VM's status to say it was done, printing the Ready condition as it changes.\n"
      "As a kubectl plugin: put a link named kubectl-banlieue to this binary on PATH, then\n"
      "'kubectl banlieue vm restart NAME'.");
  vm->require_subcommand(1);
  addVerb(*vm, action, "start",
          "Power the VM on (spec.desiredPowerState: PoweredOn); waits for "
          "status.observedPowerState",
          [] { return powerVerb("start", "PoweredOn"); });
  addVerb(*vm, action, "stop",
          "Power the VM off (spec.desiredPowerState: PoweredOff; the backend shuts the guest "
          "down gracefully where it can); waits for status.observedPowerState",
          [] { return powerVerb("stop", "PoweredOff"); });
  addVerb(*vm, action, "restart",
          "Restart the running VM once: a new spec.restartRequestedAt (now); the backend shuts "
          "the guest down and starts it, and answers in status.lastRestart. A VM that is not "
          "running is answered NotRunning and left as it is",
          [] { return restartVerb(); });
}

}  // namespace banlieue::roles::vm
