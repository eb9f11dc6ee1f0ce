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
#include <mutex>
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

// Everything one leadership term uses: the caches, the reconcilers and their work queues. A
// term that ended (a lost Lease) shut its queues down, so the next term builds a new one and
// starts from fresh caches, as a restarted process would (ADR 0021).
class OperatorTerm {
 public:
  OperatorTerm(kube::KubeClient& client, const Options& o, runtime::EventRecorder& events)
      : providers_(client, kProviderType, {.ns = o.watch_namespace}),
        classes_(client, kProviderClassType, {}),
        deployments_(client, kube::resources::kDeployment,
                     {.label_selector = std::string("app.kubernetes.io/managed-by=") + kManagedBy}),
        provider_reconciler_(client, providers_, classes_, deployments_, events,
                             {o.image_plugin_dir, o.build_namespace, common::proxyEnvironment()},
                             {o.plugin_dir, o.image_plugin_dir},
                             std::chrono::seconds(o.resync_seconds)),
        provider_controller_("operator-provider", provider_reconciler_,
                             runtime::ControllerOptions{o.workers}),
        class_reconciler_(client, classes_, providers_, {o.plugin_dir, o.image_plugin_dir},
                          std::chrono::seconds(o.resync_seconds)),
        class_controller_("operator-providerclass", class_reconciler_,
                          runtime::ControllerOptions{1}) {
    providers_.addIndexer(kClassIndex, providerClassIndex);
    provider_controller_.watch(providers_);
    // A class edit reaches every Provider of the class at once.
    provider_controller_.watchMapped(classes_, [this](const runtime::Object& object) {
      std::vector<std::string> keys;
      for (const auto& p : providers_.byIndex(kClassIndex, runtime::objectKey(*object))) {
        keys.push_back(runtime::objectKey(*p));
      }
      return keys;
    });
    provider_controller_.watchMapped(deployments_, [](const runtime::Object& object) {
      auto key = ownerProviderKey(*object);
      return key.empty() ? std::vector<std::string>{} : std::vector<std::string>{key};
    });
    class_controller_.watch(classes_);
    // The provider count follows Providers moving between classes: both the old and the new
    // class are recounted.
    auto recount = [this](const runtime::Object& p) {
      for (const auto& c : providerClassIndex(*p)) class_controller_.enqueue(c);
    };
    providers_.addHandler(runtime::EventHandler{
        recount,
        [recount](const runtime::Object& old_p, const runtime::Object& new_p) {
          recount(old_p);
          recount(new_p);
        },
        recount});
  }

  bool synced() const {
    return providers_.hasSynced() && classes_.hasSynced() && deployments_.hasSynced();
  }

  // Lists, then reconciles once every cache is complete (the prune must not take a Deployment
  // missing from a half-filled cache for a stale one), until `stop`.
  void run(const std::atomic<bool>& stop) {
    std::thread providers_thread([&] { providers_.run(stop); });
    std::thread classes_thread([&] { classes_.run(stop); });
    std::thread deployments_thread([&] { deployments_.run(stop); });
    while (!stop && !synced()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (!stop) {
      std::thread class_thread([&] { class_controller_.run(stop); });
      provider_controller_.run(stop);
      class_thread.join();
    }
    for (auto* t : {&providers_thread, &classes_thread, &deployments_thread}) t->join();
  }

 private:
  runtime::Informer providers_;
  runtime::Informer classes_;
  runtime::Informer deployments_;
  ProviderReconciler provider_reconciler_;
  runtime::Controller provider_controller_;
  ClassStatusReconciler class_reconciler_;
  runtime::Controller class_controller_;
};

int runOperator(const Options& o) {
  StopSignal stop_signal;  // first, so every thread started below inherits the blocked mask
  auto log = common::logger("operator");
  auto client_or = connectToApiServer(o.process);
  if (!client_or.ok()) {
    std::cerr << "banlieue operator: " << client_or.status().message() << "\n";
    return app::kExitFailure;
  }
  auto& client = **client_or;

  const std::string identity = leaderIdentity();
  runtime::EventRecorder events(client, {"banlieue.io/operator", identity});
  runtime::LeaderElectionConfig election;
  election.lease_namespace = o.lease_namespace;
  election.lease_name = o.lease_name;
  election.identity = identity;
  std::atomic<bool> leading{false};
  std::mutex term_mutex;
  OperatorTerm* term = nullptr;

  runtime::HealthServer health;
  health.addReadinessCheck("informers", [&](std::string& reason) {
    std::lock_guard lock(term_mutex);
    bool synced = term != nullptr && term->synced();
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

  // The reconcilers run only while leading and stop before the Lease is released; a lost Lease
  // stops them and this process campaigns again (ADR 0021), so an old and a new operator never
  // write at once.
  runWhileLeading(
      client, election, stop_signal,
      [&](const std::atomic<bool>& work_stop) {
        log->info("leading {}/{}; reconciling Providers{}", o.lease_namespace, o.lease_name,
                  o.watch_namespace.empty() ? " in every namespace" : " in " + o.watch_namespace);
        OperatorTerm this_term(client, o, events);
        {
          std::lock_guard lock(term_mutex);
          term = &this_term;
        }
        this_term.run(work_stop);
        std::lock_guard lock(term_mutex);
        term = nullptr;
      },
      {.leading = &leading});
  health.stop();
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
