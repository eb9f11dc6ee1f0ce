#include "host/roles/controller/controller_role.h"

#include "host/common/logging.h"
#include "host/roles/common/leadership.h"
#include "host/roles/common/role_process.h"
#include "host/roles/controller/manager.h"

#include <CLI/CLI.hpp>

#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <mutex>
#include <random>
#include <thread>

namespace banlieue::roles::controller {
namespace {

struct ControllerOptions {
  RoleProcessOptions process;
  bool leader_elect = true;
  std::string lease_namespace = "banlieue-system";
  std::string lease_name = "banlieue-controller";
  std::string identity;
  int workers = 16;
  std::string ns;
};

// Unique per process: the pod name (or host name) and a random suffix, so a restarted replica
// never mistakes the previous incarnation's Lease for its own.
std::string defaultIdentity() {
  std::string base;
  if (const char* pod = std::getenv("POD_NAME"); pod != nullptr && *pod != '\0') {
    base = pod;
  } else {
    char host[256] = {};
    base = gethostname(host, sizeof(host) - 1) == 0 ? host : "banlieue-controller";
  }
  std::random_device random;
  return base + "_" + std::to_string(random() % 1000000);
}

int runController(const ControllerOptions& options) {
  auto log = common::logger("controller");
  StopSignal signals;
  auto client = connectToApiServer(options.process);
  if (!client.ok()) {
    log->error("cannot connect to the API server: {}", client.status().message());
    return app::kExitFailure;
  }
  std::string identity = options.identity.empty() ? defaultIdentity() : options.identity;
  const banlieue::controller::ManagerOptions manager_options{
      .workers = options.workers, .ns = options.ns, .event_instance = identity};
  // One Manager per leadership term: a term that ended (a lost Lease) shut its work queues
  // down, and the next term starts from fresh caches, as a restarted process would.
  std::mutex manager_mutex;
  banlieue::controller::Manager* current = nullptr;
  auto run_term = [&](const std::atomic<bool>& stop) {
    banlieue::controller::Manager manager(**client, manager_options);
    {
      std::lock_guard lock(manager_mutex);
      current = &manager;
    }
    manager.run(stop);
    std::lock_guard lock(manager_mutex);
    current = nullptr;
  };
  std::atomic<bool> leading{!options.leader_elect};

  runtime::HealthServer health;
  health.addLivenessCheck("ping", [](std::string&) { return true; });
  health.addReadinessCheck("informers-synced", [&](std::string& reason) {
    std::lock_guard lock(manager_mutex);
    if (current != nullptr && current->synced()) return true;
    reason = "caches not synced yet";
    return false;
  });
  health.addReadinessCheck("leader", [&leading](std::string& reason) {
    if (leading) return true;
    reason = "not the leader";
    return false;
  });
  RoleEndpoints endpoints;
  if (auto started = endpoints.start(options.process, health); !started.isOk()) {
    log->error("cannot serve health endpoints: {}", started.message());
    return app::kExitFailure;
  }

  if (!options.leader_elect) {
    log->info("controller starting without leader election");
    run_term(signals.stopping());
    return app::kExitOk;
  }

  // Workers stop before the Lease is released, so two replicas never act at once.
  runtime::LeaderElectionConfig config;
  config.lease_namespace = options.lease_namespace;
  config.lease_name = options.lease_name;
  config.identity = identity;
  config.on_started_leading = [&] {
    log->info("leading as {}: starting the controller", identity);
  };
  log->info("campaigning for lease {}/{} as {}", options.lease_namespace, options.lease_name,
            identity);
  // A lost Lease stops the term's workers and campaigns again in this process (ADR 0021).
  runWhileLeading(**client, config, signals, run_term, {.leading = &leading});
  return app::kExitOk;
}

}  // namespace

void registerControllerCommand(CLI::App& app, app::Action& action) {
  auto options = std::make_shared<ControllerOptions>();
  auto* sub = app.add_subcommand(
      "controller", "Schedule VirtualMachines onto Providers, apply infra CRs, mirror status");
  addRoleProcessFlags(sub, &options->process);
  sub->add_flag("!--no-leader-elect", options->leader_elect,
                "Run without Lease leader election (a single replica only)");
  sub->add_option("--leader-election-namespace", options->lease_namespace, "Namespace of the Lease")
      ->capture_default_str();
  sub->add_option("--leader-election-id", options->lease_name, "Name of the Lease")
      ->capture_default_str();
  sub->add_option("--leader-election-identity", options->identity,
                  "This replica's identity in the Lease (default: $POD_NAME or the host name "
                  "with a random suffix)");
  sub->add_option("--namespace", options->ns,
                  "Only this namespace's VirtualMachines, Providers, pools and clusters "
                  "(default: all)");
  sub->add_option("--workers", options->workers, "Concurrent VirtualMachine reconciles")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  sub->callback([options, &action] { action = [options] { return runController(*options); }; });
}

}  // namespace banlieue::roles::controller
