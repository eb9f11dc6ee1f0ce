#include "host/roles/bootstrap/bootstrap_role.h"

#include "host/api/yaml.h"
#include "host/kube/config.h"
#include "host/roles/bootstrap/apply.h"
#include "host/roles/bootstrap/manifests.h"
#include "host/roles/bootstrap/plugin_discovery.h"

#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>

namespace banlieue::roles::bootstrap {
namespace {

struct BootstrapFlags {
  BootstrapOptions options;
  std::string plugin_dir = kImagePluginDir;
  bool dry_run = false;
  std::string kubeconfig;
  std::string context;
  int crd_timeout_seconds = 60;
};

int runBootstrap(const BootstrapFlags& flags) {
  auto plugins = discoverPlugins(flags.plugin_dir);
  if (!plugins.ok()) {
    std::cerr << "banlieue bootstrap operator: " << plugins.status().message() << "\n";
    return app::kExitFailure;
  }
  if (plugins->empty()) {
    std::cerr << "banlieue bootstrap operator: no plugins under " << flags.plugin_dir
              << "; no ProviderClass will be created\n";
  }
  auto objects = buildBootstrapObjects(flags.options, *plugins);
  if (flags.dry_run) {
    std::vector<const rapidjson::Value*> docs;
    docs.reserve(objects.size());
    for (const auto& o : objects) docs.push_back(&o);
    auto yaml = api::toYamlStream(docs);
    if (!yaml.ok()) {
      std::cerr << "banlieue bootstrap operator: " << yaml.status().message() << "\n";
      return app::kExitFailure;
    }
    std::cout << *yaml;
    return std::cout.good() ? app::kExitOk : app::kExitFailure;
  }

  std::optional<std::filesystem::path> kubeconfig;
  if (!flags.kubeconfig.empty()) kubeconfig = flags.kubeconfig;
  std::optional<std::string> context;
  if (!flags.context.empty()) context = flags.context;
  auto connection = kube::loadDefaultConfig(kubeconfig, context);
  if (!connection.ok()) {
    std::cerr << "banlieue bootstrap operator: " << connection.status().message() << "\n";
    return app::kExitFailure;
  }
  auto transport = kube::makeHttpTransport(*connection);
  if (!transport.ok()) {
    std::cerr << "banlieue bootstrap operator: " << transport.status().message() << "\n";
    return app::kExitFailure;
  }
  auto client = kube::makeKubeClient(std::move(transport).value());
  auto report = applyAll(*client, objects, std::chrono::seconds(flags.crd_timeout_seconds));
  if (!report.ok()) {
    std::cerr << "banlieue bootstrap operator: " << report.status().message() << "\n";
    return app::kExitFailure;
  }
  std::cout << "bootstrap: " << report->applied << " objects applied, " << report->changed
            << " changed\n";
  return app::kExitOk;
}

}  // namespace

void registerBootstrapCommand(CLI::App& app, app::Action& action) {
  auto* bootstrap = app.add_subcommand("bootstrap", "Install banlieue into a cluster");
  bootstrap->require_subcommand(1);
  auto* op = bootstrap->add_subcommand(
      "operator", "Apply the namespace, CRDs, RBAC, Deployments and one ProviderClass per plugin");
  auto flags = std::make_shared<BootstrapFlags>();
  flags->options.image = defaultImage();
  op->add_flag("--dry-run", flags->dry_run,
               "Print the objects as multi-document YAML instead of applying them");
  op->add_option("--image", flags->options.image, "The banlieue image (binary + plugins)")
      ->capture_default_str();
  op->add_option("--plugin-dir", flags->plugin_dir,
                 "Directory holding one sub-directory per plugin; one ProviderClass each")
      ->capture_default_str();
  op->add_option("--image-plugin-dir", flags->options.image_plugin_dir,
                 "Where the plugins live inside the image (ProviderClass spec.plugin.path)")
      ->capture_default_str();
  op->add_option("--namespace", flags->options.namespace_, "Namespace for banlieue's workloads")
      ->capture_default_str();
  op->add_option("--userdata-namespace", flags->options.userdata_namespaces,
                 "Namespace (repeatable) where the controller may read userData Secrets and "
                 "ConfigMaps; must exist")
      ->capture_default_str();
  op->add_flag("!--skip-crds", flags->options.crds,
               "Leave the CRDs out (when they are installed separately, e.g. from deploy/crds)");
  op->add_flag("!--skip-provider-classes", flags->options.provider_classes,
               "Do not create a ProviderClass per plugin");
  op->add_option("--kubeconfig", flags->kubeconfig,
                 "kubeconfig file (default: $KUBECONFIG, "
                 "in-cluster, ~/.kube/config)");
  op->add_option("--context", flags->context, "kubeconfig context");
  op->add_option("--crd-timeout", flags->crd_timeout_seconds,
                 "Seconds to wait for each CRD to become Established")
      ->capture_default_str()
      ->check(CLI::Range(1, 3600));
  op->callback([&action, flags] { action = [flags] { return runBootstrap(*flags); }; });
}

}  // namespace banlieue::roles::bootstrap
