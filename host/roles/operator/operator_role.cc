#include "host/roles/operator/operator_role.h"

#include "host/common/logging.h"
#include "host/common/proxy_environment.h"
#include "host/roles/common/leadership.h"
#include "host/roles/common/role_process.h"
#include "host/roles/operator/class_status_reconciler.h"
#include "host/roles/operator/provider_reconciler.h"
#include "host/roles/operator/workload_names.h"
#include "host/runtime/leader_election.h"

#include <unistd.h>

#include <CLI/CLI.hpp>

#include <cstdlib>
#include <iostream>
#include <memory>
#include <random>
#include <thread>

namespace banlieue::roles::provider_operator {
namespace {

struct Options {
  RoleProcessOptions process;
  std::string lease_namespace = "banlieue-system";
  std::string lease_name = "banlieue-operator";
  std::string watch_namespace;  // empty: every namespace
  std::string plugin_dir = "/usr/lib/banlieue/plugins";
  std::string image_plugin_dir = "/usr/lib/banlieue/plugins";
  std::string build_namespace = kDefaultBuildNamespace;
  int workers = 2;
  int resync_seconds = static_cast<int>(kRequeueDefault.count());
};

// Unique per process: two replicas of one pod template never share an identity.
std::string leaderIdentity() {
  std::string base;
  if (const char* pod = std::getenv("POD_NAME"); pod != nullptr && *pod != '\0') {
    base = pod;
  } else {
    char host[256] = {};
    base = ::gethostname(host, sizeof(host) - 1) == 0 ? host : "unknown";
  }
  std::random_device random;
  return base + "_" + std::to_string(random() % 1000000);
}

int runOperator(const Options& o) {
  StopSignal stop_signal;  // first, so every thread started below inherits the blocked mask
  auto log = common::logger("operator");
  auto client_or = connectToApiServer(o.process);
  if (!client_or.ok()) {
    std::cerr << "banlieue operator: " << client_or.status().message() << "\n";
    return app::kExitFailure;
  }
  auto& client = **client_or;

  runtime::InformerOptions provider_options;
  provider_options.ns = o.watch_namespace;
  runtime::Informer providers(client, kProviderType, provider_options);
  providers.addIndexer(kClassIndex, providerClassIndex);
  runtime::Informer classes(client, kProviderClassType, {});
  runtime::InformerOptions deployment_options;
  deployment_options.label_selector = std::string("app.kubernetes.io/managed-by=") + kManagedBy;
  runtime::Informer deployments(client, kube::resources::kDeployment, deployment_options);

  const std::string identity = leaderIdentity();
  runtime::EventRecorder events(client, {"banlieue.io/operator", identity});
  ProviderReconciler provider_reconciler(
      client, providers, classes, deployments, events,
      {o.image_plugin_dir, o.build_namespace, common::proxyEnvironment()},
      {o.plugin_dir, o.image_plugin_dir}, std::chrono::seconds(o.resync_seconds));
  runtime::Controller provider_controller("operator-provider", provider_reconciler,
                                          runtime::ControllerOptions{o.workers});
  provider_controller.watch(providers);
  // A class edit reaches every Provider of the class at once.
  provider_controller.watchMapped(classes, [&](const runtime::Object& object) {
    std::vector<std::string> keys;
    for (const auto& p : providers.byIndex(kClassIndex, runtime::objectKey(*object))) {
      keys.push_back(runtime::objectKey(*p));
    }
    return keys;
  });
  provider_controller.watchMapped(deployments, [](const runtime::Object& object) {
    auto key = ownerProviderKey(*object);
    return key.empty() ? std::vector<std::string>{} : std::vector<std::string>{key};
  });

  ClassStatusReconciler class_reconciler(client, classes, providers,
                                         {o.plugin_dir, o.image_plugin_dir},
                                         std::chrono::seconds(o.resync_seconds));
  runtime::Controller class_controller("operator-providerclass", class_reconciler,
                                       runtime::ControllerOptions{1});
  class_controller.watch(classes);
  // The provider count follows Providers moving between classes: both the old and the new
  // class are recounted.
  providers.addHandler(
      runtime::EventHandler{[&](const runtime::Object& p) {
                              for (const auto& c : providerClassIndex(*p))
                                class_controller.enqueue(c);
                            },
                            [&](const runtime::Object& old_p, const runtime::Object& new_p) {
                              for (const auto& c : providerClassIndex(*old_p))
                                class_controller.enqueue(c);
                              for (const auto& c : providerClassIndex(*new_p))
                                class_controller.enqueue(c);
                            },
                            [&](const runtime::Object& p) {
                              for (const auto& c : providerClassIndex(*p))
                                class_controller.enqueue(c);
                            }});

  runtime::LeaderElectionConfig election;
  election.lease_namespace = o.lease_namespace;
  election.lease_name = o.lease_name;
  election.identity = identity;
  std::atomic<bool> leading{false};

  runtime::HealthServer health;
  health.addReadinessCheck("informers", [&](std::string& reason) {
    bool synced = providers.hasSynced() && classes.hasSynced() && deployments.hasSynced();
    if (!synced) reason = "Providers, ProviderClasses and Deployments not listed yet";
    return synced;
  });
  health.addReadinessCheck("leader", [&](std::string& reason) {
    if (!leading) reason = "not leading " + o.lease_namespace + "/" + o.lease_name;
    return leading.load();
  });
  RoleEndpoints endpoints;
  if (auto s = endpoints.start(o.process, health); !s.isOk()) {
    std::cerr << "banlieue operator: " << s.message() << "\n";
    return app::kExitFailure;
  }

  const auto& stop = stop_signal.stopping();
  // Caches fill while campaigning, so a new leader starts from warm informers.
  std::thread providers_thread([&] { providers.run(stop); });
  std::thread classes_thread([&] { classes.run(stop); });
  std::thread deployments_thread([&] { deployments.run(stop); });

  // The reconcilers run only while leading and stop before the Lease is released (ADR 0021),
  // so an old and a new operator never write at once.
  auto end = runWhileLeading(
      client, election, stop_signal,
      [&](const std::atomic<bool>& work_stop) {
        log->info("leading {}/{}; reconciling Providers{}", o.lease_namespace, o.lease_name,
                  o.watch_namespace.empty() ? " in every namespace" : " in " + o.watch_namespace);
        std::thread class_thread([&] { class_controller.run(work_stop); });
        provider_controller.run(work_stop);
        class_thread.join();
      },
      {.leading = &leading});
  stop_signal.requestStop();  // the informers end with the work
  for (auto* t : {&providers_thread, &classes_thread, &deployments_thread}) t->join();
  health.stop();
  if (end == LeadershipEnd::kLost) {
    log->error("lost the lease {}/{}; exiting", o.lease_namespace, o.lease_name);
    return app::kExitFailure;
  }
  return app::kExitOk;
}

}  // namespace

void registerOperatorCommand(CLI::App& app, app::Action& action) {
  auto options = std::make_shared<Options>();
  auto* sub = app.add_subcommand(
      "operator",
      "Mint a least-privilege workload per Provider from its ProviderClass (ServiceAccount, "
      "Role scoped to its credentials Secret, bindings, Deployment) and publish ProviderClass "
      "status");
  addRoleProcessFlags(sub, &options->process);
  sub->add_option("--namespace", options->lease_namespace, "Namespace of the operator's Lease")
      ->capture_default_str();
  sub->add_option("--leader-election-id", options->lease_name, "Name of the operator's Lease")
      ->capture_default_str();
  sub->add_option("--watch-namespace", options->watch_namespace,
                  "Reconcile Providers of this namespace only (default: every namespace; "
                  "ProviderClass status then counts this namespace's Providers only)");
  sub->add_option("--plugin-dir", options->plugin_dir,
                  "Where this operator reads plugins' provider.json (never loading their code)")
      ->capture_default_str();
  sub->add_option("--image-plugin-dir", options->image_plugin_dir,
                  "The plugin directory inside the provider image, passed to provider "
                  "Deployments as --plugin-dir")
      ->capture_default_str();
  sub->add_option("--build-namespace", options->build_namespace,
                  "Namespace of the image import Jobs: their ServiceAccount banlieue-image-import "
                  "gets each Provider's read-only import Role, each provider a RoleBinding there")
      ->capture_default_str();
  sub->add_option("--workers", options->workers, "Provider reconciles run in parallel")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  sub->add_option("--resync-seconds", options->resync_seconds,
                  "Reconcile every Provider and ProviderClass again after this long with nothing "
                  "changed; a safety net, since watches bring every change at once (and the only "
                  "way a new backend ClusterRole is noticed)")
      ->check(CLI::Range(1, 86400))
      ->capture_default_str();
  sub->callback([&action, options] { action = [options] { return runOperator(*options); }; });
}

}  // namespace banlieue::roles::provider_operator
