#include "host/roles/provider/provider_command.h"

#include "host/common/logging.h"
#include "host/common/proxy_environment.h"
#include "host/common/sleep_unless.h"
#include "host/kube/discovery.h"
#include "host/plugin/loader.h"
#include "host/roles/common/leadership.h"
#include "host/roles/common/role_process.h"
#include "host/roles/common/snapshot_binding.h"
#include "host/roles/images/import_job.h"
#include "host/roles/provider/change_feed.h"
#include "host/roles/provider/class_publication.h"
#include "host/roles/provider/console_server.h"
#include "host/roles/provider/image_reconciler.h"
#include "host/roles/provider/machine_reconciler.h"
#include "host/roles/provider/plugin_resolution.h"
#include "host/roles/provider/provider_reconciler.h"
#include "host/roles/provider/snapshot_reconciler.h"
#include "host/roles/provider/status_writer.h"
#include "host/runtime/controller.h"
#include "host/runtime/health_server.h"
#include "host/runtime/informer.h"

#include <unistd.h>

#include <banlieue/sdk/json.h>
#include <CLI/CLI.hpp>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <set>
#include <thread>

namespace banlieue::roles::provider {
namespace {

namespace json = sdk::json;
using common::sleepUnless;

// The machine informers' index of spec.providerID, for the change feed's wakes.
constexpr const char* kProviderIdIndex = "providerID";

struct Options {
  RoleProcessOptions process;
  std::string backend;
  std::string provider;  // <namespace>/<name>
  std::string plugin_dir = plugin::kDefaultPluginRoot;
  std::string lease_id;
  std::string lease_namespace;
  int workers = 8;
  int credentials_poll_seconds = 30;
  int introspect_interval_seconds = 300;
  int resync_seconds = 600;
  int watch_seconds = 60;
  int call_timeout_seconds = 30;
  std::string import_namespace = images::kImageBuildNamespace;
  std::string artifacts_host_root;
  std::string import_plugin_dir;
  int import_retry_seconds = 300;
  std::string state_dir;
  int plugin_hang_grace_seconds = 30;
  int plugin_crash_backoff_seconds = 60;
  int plugin_quarantine_after = CrashQuarantine::kDefaultQuarantineAfter;
  std::string console_address = "127.0.0.1";
  int console_port = 0;  // off
  int console_idle_seconds = 3600;
};

// The plugin's parent directory as the import Jobs' image holds it: where this process found it,
// or the same place under --import-plugin-dir when this process runs outside that image.
std::string importPluginDir(const Options& o, const std::filesystem::path& parent) {
  if (o.import_plugin_dir.empty()) return parent.string();
  std::error_code ec;
  auto root = std::filesystem::canonical(o.plugin_dir, ec);  // `parent` is canonical too
  auto relative = ec ? std::filesystem::path() : parent.lexically_relative(root);
  if (relative.empty() || relative == ".") return o.import_plugin_dir;
  return (std::filesystem::path(o.import_plugin_dir) / relative).string();
}

// What the import Jobs need from the plugin and its class (docs/adr/0015).
ImportSettings importSettings(const Options& o, const ResolvedPlugin& resolved) {
  ImportSettings settings;
  settings.backend = resolved.directory.filename().string();
  settings.plugin_dir = importPluginDir(o, resolved.directory.parent_path());
  settings.container_image = resolved.container_image;
  settings.plugin_sha256 = resolved.plugin_sha256;
  settings.job_namespace = o.import_namespace;
  settings.artifacts_host_root = o.artifacts_host_root;
  settings.proxy_env = common::proxyEnvironment();
  settings.retry_after = std::chrono::seconds(o.import_retry_seconds);
  auto described = resolved.plugin->describe();
  rapidjson::Document caps;
  if (described.ok() && !caps.Parse(described.outcome.body.c_str()).HasParseError() &&
      caps.IsObject()) {
    settings.plugin_imports = json::boolean(&caps, "operations.importImage", false) &&
                              resolved.plugin->client().table().import_image != nullptr;
    if (const auto* formats = json::find(&caps, "imageFormats");
        formats != nullptr && formats->IsArray()) {
      for (const auto& f : formats->GetArray()) {
        if (f.IsString()) settings.image_formats.emplace_back(f.GetString());
      }
    }
  }
  return settings;
}

std::string envOr(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::string(value) : fallback;
}

// Before a plugin is loaded there is no reconciler yet; the Provider still says why it is not
// Ready (e.g. PluginPathEscapes), with the same conditions the reconciler writes later.
void reportStartupFailure(kube::KubeClient& client, const Options& o, const std::string& ns,
                          const std::string& name, const Status& failure) {
  auto provider = client.get(kProviderType, ns, name);
  if (!provider.ok()) return;
  int64_t generation = json::integer(&*provider, "metadata.generation").value_or(0);
  rapidjson::Document status(rapidjson::kObjectType);
  auto& a = status.GetAllocator();
  status.AddMember(
      "conditions",
      mergeConditions(
          json::find(&*provider, "status.conditions"),
          {{"ProviderReachable", "False", failure.reason(), failure.message(), generation},
           {"Ready", "False", failure.reason(), failure.message(), generation}},
          a),
      a);
  (void)applyStatusIfChanged(client, kProviderType, *provider, status,
                             providerFieldManager(o.backend));
}

int runProvider(const Options& o) {
  auto log = common::logger("provider");
  StopSignal stop;
  auto slash = o.provider.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == o.provider.size()) {
    std::cerr << "banlieue provider: --provider must be <namespace>/<name>, got '" << o.provider
              << "'\n";
    return app::kExitUsage;
  }
  std::string ns = o.provider.substr(0, slash);
  std::string name = o.provider.substr(slash + 1);
  auto client_or = connectToApiServer(o.process);
  if (!client_or.ok()) {
    std::cerr << "banlieue provider: " << client_or.status().message() << "\n";
    return app::kExitFailure;
  }
  auto& client = **client_or;
  std::string identity = envOr("POD_NAME", "");
  if (identity.empty()) {
    char host[256] = "localhost";
    gethostname(host, sizeof(host) - 1);
    identity = std::string(host) + "_" + std::to_string(getpid());
  }

  // Health first, so a process stuck waiting for its ProviderClass is alive but not ready.
  std::atomic<bool> leading{false};
  std::atomic<bool> synced{false};
  runtime::HealthServer health;
  health.addReadinessCheck("leader", [&](std::string& reason) {
    if (!leading) reason = "not leading (waiting for the Lease)";
    return leading.load();
  });
  health.addReadinessCheck("caches", [&](std::string& reason) {
    if (!synced) reason = "plugin not loaded or caches not synced";
    return synced.load();
  });
  // A plugin call past its deadline plus the grace is stuck: the host cannot interrupt it, so
  // the liveness probe restarts the process (docs/adr/0021).
  auto calls = std::make_shared<plugin::CallTracker>();
  health.addLivenessCheck("plugin-calls", [&, calls](std::string& reason) {
    // Recorded as hung in the journal first, so the next process reports PluginHung.
    auto stuck = calls->markOverdueAsHung(std::chrono::seconds(o.plugin_hang_grace_seconds));
    if (stuck.empty()) return true;
    reason = std::to_string(stuck.size()) + " plugin call(s) stuck past deadline + " +
             std::to_string(o.plugin_hang_grace_seconds) + " s grace: " + stuck.front().slot;
    if (!stuck.front().object.empty()) reason += " of " + stuck.front().object;
    return false;
  });
  RoleEndpoints endpoints;
  if (auto s = endpoints.start(o.process, health); !s.isOk()) {
    std::cerr << "banlieue provider: " << s.message() << "\n";
    return app::kExitFailure;
  }

  // 1. The plugin, retried until the ProviderClass makes sense (an edit fixes it without a
  // restart).
  ResolvedPlugin resolved;
  while (!stop.stopping()) {
    auto found = resolvePlugin(client, o.backend, ns, name, o.plugin_dir);
    if (found.ok()) {
      resolved = std::move(*found);
      break;
    }
    log->error("provider {}/{}: {}: {}", ns, name, found.status().reason(),
               found.status().message());
    reportStartupFailure(client, o, ns, name, found.status());
    sleepUnless(stop.stopping(), std::chrono::seconds(o.credentials_poll_seconds));
  }
  if (stop.stopping()) return app::kExitOk;
  resolved.plugin->trackCallsWith(calls);
  // Read what the previous process left in the journal before this one writes to it.
  CrashQuarantine quarantine(o.state_dir, std::chrono::seconds(o.plugin_crash_backoff_seconds),
                             o.plugin_quarantine_after);
  if (!o.state_dir.empty()) {
    if (auto s = calls->setJournal(o.state_dir); !s.isOk()) {
      log->error("provider {}/{}: {}", ns, name, s.message());
      return app::kExitFailure;
    }
  }
  const auto& manifest = resolved.plugin->manifest();
  log->info("provider {}/{}: loaded plugin {} {} from {}", ns, name, manifest.name,
            manifest.provider_version, manifest.directory.string());

  // 2. Leadership: one active process per Provider, whatever the replica count. The work runs
  // only while leading and is stopped, with every plugin call cancelled and returned, before
  // the Lease goes (roles/common/leadership.h).
  runtime::LeaderElectionConfig election;
  election.lease_namespace =
      o.lease_namespace.empty() ? envOr("POD_NAMESPACE", ns) : o.lease_namespace;
  election.lease_name =
      o.lease_id.empty() ? "banlieue-provider-" + resolved.class_name + "-" + name : o.lease_id;
  election.identity = identity;
  election.on_started_leading = [&] {
    log->info("provider {}/{}: leading (Lease {}/{})", ns, name, election.lease_namespace,
              election.lease_name);
  };
  auto serve = [&](const std::atomic<bool>& work_stop) {
    // 3. Controllers over this Provider's own objects only (server-side filtered watches).
    runtime::EventRecorder events(client, {providerFieldManager(o.backend), identity});
    PluginSession session(resolved.plugin);
    RuntimeContext context{client, events, session,   o.backend,
                           ns,     name,   work_stop, std::chrono::seconds(o.call_timeout_seconds)};
    context.quarantine = &quarantine;
    MachineLocks machine_locks;
    context.machine_locks = &machine_locks;
    CreateSlots create_slots;  // per Provider, across kinds (docs/adr/0049)
    context.create_slots = &create_slots;
    runtime::InformerOptions provider_options;
    provider_options.ns = ns;
    provider_options.field_selector = "metadata.name=" + name;
    runtime::Informer providers(client, kProviderType, provider_options);
    ProviderReconcilerOptions provider_reconciler_options;
    provider_reconciler_options.credentials_poll = std::chrono::seconds(o.credentials_poll_seconds);
    provider_reconciler_options.introspect_interval =
        std::chrono::seconds(o.introspect_interval_seconds);
    auto provider_reconciler =
        std::make_unique<ProviderReconciler>(context, providers, provider_reconciler_options);
    runtime::Controller provider_controller("provider", *provider_reconciler,
                                            runtime::ControllerOptions{1});
    // Its status is written here (conditions, failure domains) and by the operator (workload).
    provider_controller.watch(providers, runtime::Controller::Updates::kIgnoreStatusOnly);

    // What this pod loaded, on its class's status for the operator and the controller
    // (docs/adr/0043); kept there while leading.
    runtime::InformerOptions class_options;
    class_options.field_selector = "metadata.name=" + resolved.class_name;
    runtime::Informer own_class(client, kProviderClassType, class_options);
    auto published = describePublished(*resolved.plugin, resolved.class_generation);
    published.machine_finalizer = context.finalizer();
    ClassPublisher publisher(client, own_class, std::move(published), context.fieldManager());
    runtime::Controller publish_controller("providerclass-publication", publisher,
                                           runtime::ControllerOptions{1});
    publish_controller.watch(own_class);

    // This Provider's row of every VMImage (cluster-scoped, so all of them are watched); a change
    // of the Provider's failure domains revisits every image.
    runtime::Informer images(client, kVMImageType, runtime::InformerOptions{});
    // This Provider's import Jobs and their pods in the build namespace (label-filtered).
    runtime::InformerOptions import_options;
    import_options.ns = o.import_namespace;
    import_options.label_selector = importJobSelector(ns, name);
    runtime::Informer import_jobs(client, kJobType, import_options);
    runtime::Informer import_pods(client, kube::resources::kPod, import_options);
    ImportWatch imports{importSettings(o, resolved), import_jobs, import_pods};
    log->info("provider {}/{}: import Jobs in {} ({})", ns, name, o.import_namespace,
              imports.settings.plugin_imports ? "the plugin imports images"
                                              : "the plugin imports no images");
    ImageReconciler image_reconciler(context, resolved.class_name, images, providers, &imports);
    runtime::Controller image_controller("vmimage", image_reconciler,
                                         runtime::ControllerOptions{1});
    image_controller.watch(images);
    auto image_of = [&import_jobs](const runtime::Object& object) {
      std::vector<std::string> keys;
      if (auto image = importedImageOf(object, import_jobs); !image.empty()) keys.push_back(image);
      return keys;
    };
    image_controller.watchMapped(import_jobs, image_of);
    image_controller.watchMapped(import_pods, image_of);
    image_controller.watchMapped(providers,
                                 [&images](const runtime::Object&) { return images.keys(); });

    kube::KindResolver kinds(client);
    struct KindRuntime {
      std::string kind;
      std::unique_ptr<runtime::Informer> informer;
      std::unique_ptr<MachineReconciler> reconciler;
      std::unique_ptr<runtime::Controller> controller;
    };
    std::vector<KindRuntime> machine_kinds;
    MachineReconcilerOptions machine_options;
    machine_options.resync = std::chrono::seconds(o.resync_seconds);
    for (const auto& gvk : manifest.infrastructure) {
      std::string api_version = gvk.group + "/" + gvk.version;
      auto type = kinds.resolve(api_version, gvk.kind);
      while (!type.ok() && !work_stop) {
        log->error("provider {}/{}: {} {}: {} (retrying)", ns, name, api_version, gvk.kind,
                   type.status().message());
        sleepUnless(work_stop, std::chrono::seconds(10));
        type = kinds.resolve(api_version, gvk.kind);
      }
      if (!type.ok()) break;
      KindRuntime k;
      k.kind = gvk.kind;
      runtime::InformerOptions options;
      options.ns = ns;
      options.label_selector = "banlieue.io/provider=" + name;
      k.informer = std::make_unique<runtime::Informer>(client, *type, options);
      // The change feed names the machines that changed by their backend id: an index finds
      // them without a pass over every cached machine per wake.
      k.informer->addIndexer(kProviderIdIndex, [](const rapidjson::Value& machine) {
        std::string id = json::stringOr(&machine, "spec.providerID");
        return id.empty() ? std::vector<std::string>{} : std::vector<std::string>{std::move(id)};
      });
      k.reconciler = std::make_unique<MachineReconciler>(context, *type, gvk.kind, *k.informer,
                                                         providers, machine_options);
      k.controller = std::make_unique<runtime::Controller>(gvk.kind, *k.reconciler,
                                                           runtime::ControllerOptions{o.workers});
      k.reconciler->setWake(
          [controller = k.controller.get()](const std::string& key) { controller->enqueue(key); });
      // The runtime writes these objects' status itself; the controller writes their spec.
      k.controller->watch(*k.informer, runtime::Controller::Updates::kIgnoreStatusOnly);
      machine_kinds.push_back(std::move(k));
    }

    // The snapshots and restores the controller bound to this Provider (docs/adr/0039).
    runtime::InformerOptions bound_options;
    bound_options.ns = ns;
    bound_options.label_selector = std::string(kSnapshotProviderLabel) + "=" + name;
    runtime::Informer snapshots(client, kVirtualMachineSnapshotType, bound_options);
    runtime::Informer restores(client, kVirtualMachineRestoreType, bound_options);
    MachineDirectory machine_directory{
        [&machine_kinds](const std::string& kind, const std::string& key) -> runtime::Object {
          for (auto& k : machine_kinds) {
            if (k.kind == kind) return k.informer->get(key);
          }
          return nullptr;
        },
        // A wake follows a change another slot made on the backend (a snapshot revert): the
        // machine's next pass calls the plugin even when its last reply said it was settled.
        [&machine_kinds](const std::string& kind, const std::string& key) {
          for (auto& k : machine_kinds) {
            if (k.kind != kind) continue;
            k.reconciler->forgetInSync(key);
            k.controller->enqueue(key);
          }
        }};
    SnapshotReconciler snapshot_reconciler(context, snapshots, machine_directory);
    runtime::Controller snapshot_controller("virtualmachinesnapshot", snapshot_reconciler,
                                            runtime::ControllerOptions{1});
    // status.machineRef, the controller's binding, arrives as a status change.
    snapshot_controller.watch(snapshots);
    // A machine that goes (or changes) revisits the snapshots taken of it.
    for (auto& k : machine_kinds) {
      snapshot_controller.watchMapped(
          *k.informer, [&snapshots, kind = k.kind](const runtime::Object& machine) {
            std::vector<std::string> keys;
            const std::string machine_name = json::stringOr(machine.get(), "metadata.name");
            for (const auto& s : snapshots.byIndex(
                     "namespace", json::stringOr(machine.get(), "metadata.namespace"))) {
              auto bound = boundMachine(*s);
              if (bound && bound->kind == kind && bound->name == machine_name) {
                keys.push_back(runtime::objectKey(*s));
              }
            }
            return keys;
          });
    }
    RestoreReconciler restore_reconciler(context, restores, snapshots, machine_directory);
    runtime::Controller restore_controller("virtualmachinerestore", restore_reconciler,
                                           runtime::ControllerOptions{1});
    restore_controller.watch(restores, runtime::Controller::Updates::kIgnoreStatusOnly);
    restore_controller.watchMapped(snapshots, [&restores](const runtime::Object& snapshot) {
      std::vector<std::string> keys;
      const std::string snapshot_name = json::stringOr(snapshot.get(), "metadata.name");
      for (const auto& r :
           restores.byIndex("namespace", json::stringOr(snapshot.get(), "metadata.namespace"))) {
        if (json::stringOr(r.get(), "spec.snapshotName") == snapshot_name) {
          keys.push_back(runtime::objectKey(*r));
        }
      }
      return keys;
    });

    // The plugin's change feed (docs/adr/0057): it wakes the machines that changed at the
    // backend, and while it answers a settled machine's resync makes no plugin call.
    auto wake_machines = [&machine_kinds](const std::set<std::string>* provider_ids) {
      for (auto& k : machine_kinds) {
        auto wake = [&k](const std::string& key) {
          k.reconciler->forgetInSync(key);
          k.controller->enqueue(key);
        };
        if (provider_ids == nullptr) {
          for (const auto& key : k.informer->keys()) wake(key);
          continue;
        }
        for (const auto& id : *provider_ids) {
          for (const auto& key : k.informer->keysByIndex(kProviderIdIndex, id)) wake(key);
        }
      }
    };
    ChangeFeed change_feed(
        context,
        ChangeFeedTargets{
            [&wake_machines](const std::set<std::string>& ids) { wake_machines(&ids); },
            [&wake_machines] { wake_machines(nullptr); },
            [&providers, &ns, &name] {
              auto provider = providers.get(ns + "/" + name);
              return provider ? json::stringOr(provider.get(), "metadata.uid") : std::string();
            }},
        ChangeFeedOptions{std::chrono::seconds(std::max(1, o.watch_seconds))});
    if (o.watch_seconds > 0) {
      for (auto& k : machine_kinds) {
        k.reconciler->setChangeFeed([&change_feed](std::chrono::steady_clock::time_point seen) {
          return change_feed.covers(seen);
        });
      }
    }

    // Machines that waited for the backend (ProviderNotConnected) go again as soon as it is
    // connected, whatever their next poll; so do the snapshots and restores.
    session.onConnected(
        [&machine_kinds, &snapshots, &restores, &snapshot_controller, &restore_controller] {
          for (auto& k : machine_kinds) {
            for (const auto& key : k.informer->keys()) k.controller->enqueue(key);
          }
          for (const auto& key : snapshots.keys()) snapshot_controller.enqueue(key);
          for (const auto& key : restores.keys()) restore_controller.enqueue(key);
        });
    // Consoles, for as long as this process leads (docs/adr/0040). One that cannot listen
    // leaves the reconcilers running: machines matter more than their consoles.
    std::optional<ConsoleServer> consoles;
    if (o.console_port > 0) {
      consoles.emplace(context, machine_directory,
                       ConsoleServerOptions{o.console_address, o.console_port,
                                            std::chrono::seconds(o.console_idle_seconds)});
      if (auto listening = consoles->listen(); !listening.isOk()) {
        log->error("provider {}/{}: {}: {} (no consoles this term)", ns, name, listening.reason(),
                   listening.message());
        consoles.reset();
      } else {
        log->info("provider {}/{}: consoles on {}:{}", ns, name, o.console_address,
                  consoles->port());
      }
    }
    std::vector<std::thread> threads;
    if (consoles) threads.emplace_back([&] { consoles->run(work_stop); });
    threads.emplace_back([&] { own_class.run(work_stop); });
    threads.emplace_back([&] { publish_controller.run(work_stop); });
    threads.emplace_back([&] { providers.run(work_stop); });
    threads.emplace_back([&] { provider_controller.run(work_stop); });
    threads.emplace_back([&] { images.run(work_stop); });
    threads.emplace_back([&] { import_jobs.run(work_stop); });
    threads.emplace_back([&] { import_pods.run(work_stop); });
    threads.emplace_back([&] { image_controller.run(work_stop); });
    threads.emplace_back([&] { snapshots.run(work_stop); });
    threads.emplace_back([&] { restores.run(work_stop); });
    for (auto& k : machine_kinds) {
      threads.emplace_back([&] { k.informer->run(work_stop); });
      threads.emplace_back([&] { k.controller->run(work_stop); });
    }
    if (o.watch_seconds > 0) threads.emplace_back([&] { change_feed.run(work_stop); });
    while (!work_stop) {
      bool all = providers.hasSynced() && images.hasSynced() && import_jobs.hasSynced() &&
                 import_pods.hasSynced() && snapshots.hasSynced() && restores.hasSynced();
      for (const auto& k : machine_kinds) all = all && k.informer->hasSynced();
      if (all && !synced) {
        // The machines' informers feed the snapshot controllers: they start once synced.
        threads.emplace_back([&] { snapshot_controller.run(work_stop); });
        threads.emplace_back([&] { restore_controller.run(work_stop); });
      }
      if (all && !synced) {
        synced = true;
        log->info("provider {}/{}: caches synced; serving {} kind(s)", ns, name,
                  machine_kinds.size());
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    log->info("provider {}/{}: stopping", ns, name);
    for (auto& t : threads) t.join();
    synced = false;
    session.disconnect();  // instance_destroy: log out, remove temp files
  };
  // Each term serves afresh (a new session, caches and queues); a lost Lease ends the term and
  // this process campaigns again (ADR 0021).
  // Plugin calls act on the backend: one still running after a lost Lease ends the process.
  runWhileLeading(client, election, stop, serve,
                  {.leading = &leading,
                   .abandon =
                       [&] {
                         log->error("provider {}/{}: plugin calls still running: {}", ns, name,
                                    calls->describeInFlight());
                         log->flush();
                         std::_Exit(1);
                       },
                   .acting_outside_apiserver = [&calls] { return calls->inFlight() > 0; }});
  return app::kExitOk;
}

}  // namespace

void registerProviderCommand(CLI::App& app, app::Action& action) {
  auto o = std::make_shared<Options>();
  auto* sub = app.add_subcommand(
      "provider",
      "Run one Provider's backend plugin behind the ABI: connect with the Provider's "
      "credentials, report its failure domains, reconcile the infrastructure objects of the "
      "kinds the plugin serves");
  sub->add_option("backend", o->backend, "Backend name (the plugin's provider.json name)")
      ->required();
  sub->add_option("--provider", o->provider, "The Provider to serve, as <namespace>/<name>")
      ->required();
  sub->add_option("--plugin-dir", o->plugin_dir,
                  "Plugins are loaded only from inside this directory; the ProviderClass's "
                  "spec.plugin.path is resolved in it")
      ->capture_default_str();
  sub->add_option("--leader-election-id", o->lease_id,
                  "Lease name (default banlieue-provider-<class>-<provider>)");
  sub->add_option("--leader-election-namespace", o->lease_namespace,
                  "Lease namespace (default $POD_NAMESPACE, else the Provider's)");
  sub->add_option("--workers", o->workers, "Infrastructure objects reconciled in parallel per kind")
      ->capture_default_str();
  sub->add_option("--credentials-poll-seconds", o->credentials_poll_seconds,
                  "How often the credentials Secret and CA bundle are re-read (rotation)")
      ->capture_default_str();
  sub->add_option("--introspect-interval-seconds", o->introspect_interval_seconds,
                  "How often the backend inventory is walked again when nothing changed")
      ->capture_default_str();
  sub->add_option("--resync-seconds", o->resync_seconds,
                  "How often a settled machine is checked for drift, unless the plugin's\n"
                  "change feed (watch_changes) covers it: then only the feed tells")
      ->capture_default_str();
  sub->add_option("--watch-seconds", o->watch_seconds,
                  "Deadline of one watch_changes long poll, the plugin's feed of what\n"
                  "changed at the backend for all machines at once; 0 turns the feed off")
      ->check(CLI::Range(0, 3600))
      ->capture_default_str();
  sub->add_option("--call-timeout-seconds", o->call_timeout_seconds, "Deadline of one plugin call")
      ->capture_default_str();
  sub->add_option("--import-namespace", o->import_namespace,
                  "Namespace of the image import Jobs (ServiceAccount banlieue-image-import)")
      ->capture_default_str();
  sub->add_option("--artifacts-host-root", o->artifacts_host_root,
                  "Development nodes: import Jobs mount <dir>/<artifacts PVC> as a hostPath\n"
                  "instead of the PVC");
  sub->add_option("--import-plugin-dir", o->import_plugin_dir,
                  "The plugin directory inside the import Jobs' image (default: --plugin-dir,\n"
                  "as when this process runs in that image; set it when it runs elsewhere)");
  sub->add_option("--import-retry-seconds", o->import_retry_seconds,
                  "How long after a retryable failure an import Job is made again")
      ->check(CLI::Range(1, 86400))
      ->capture_default_str();
  sub->add_option("--state-dir", o->state_dir,
                  "Where plugin calls in flight are journaled, so an object whose call the\n"
                  "process did not survive (a plugin crash) is held back after a restart (a\n"
                  "directory that outlives the container, e.g. an emptyDir; empty: off)");
  sub->add_option("--plugin-hang-grace-seconds", o->plugin_hang_grace_seconds,
                  "/healthz fails while a plugin call runs this long past its deadline")
      ->check(CLI::Range(0, 86400))
      ->capture_default_str();
  sub->add_option("--plugin-crash-backoff-seconds", o->plugin_crash_backoff_seconds,
                  "First hold of an object the plugin crashed on (doubles per crash, up to 1 h)")
      ->check(CLI::Range(1, 3600))
      ->capture_default_str();
  sub->add_option("--plugin-quarantine-after", o->plugin_quarantine_after,
                  "Crashes or hangs in a row after which an object is quarantined: no more\n"
                  "plugin calls until its spec changes or the annotation\n"
                  "banlieue.io/clear-quarantine is set on it")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  sub->add_option("--console-port", o->console_port,
                  "Serve machines' consoles on this port while leading (docs/adr/0040): each\n"
                  "connection is checked with TokenReview and a SubjectAccessReview of get on\n"
                  "virtualmachines/console (0: no console server)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  sub->add_option("--console-address", o->console_address,
                  "The console server's IPv4 address; loopback keeps pods/portforward (banlieue\n"
                  "vm console) the only way in")
      ->capture_default_str();
  sub->add_option("--console-idle-seconds", o->console_idle_seconds,
                  "A console with no input for this long is closed")
      ->check(CLI::Range(1, 7 * 86400))
      ->capture_default_str();
  addRoleProcessFlags(sub, &o->process);
  sub->callback([&action, o] { action = [o] { return runProvider(*o); }; });
}

}  // namespace banlieue::roles::provider
