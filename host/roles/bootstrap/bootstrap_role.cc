#include "host/roles/bootstrap/bootstrap_role.h"

#include "host/api/yaml.h"
#include "host/kube/api_error.h"
#include "host/kube/config.h"
#include "host/roles/bootstrap/apply.h"
#include "host/roles/bootstrap/manifests.h"
#include "host/roles/bootstrap/plugin_discovery.h"
#include "host/roles/bootstrap/rollout.h"

#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>
#include <vector>

namespace banlieue::roles::bootstrap {
namespace {

struct BootstrapFlags {
  BootstrapOptions options;
  std::string plugin_dir = kImagePluginDir;
  bool dry_run = false;
  std::string kubeconfig;
  std::string context;
  int crd_timeout_seconds = 60;
  bool wait = true;
  int wait_timeout_seconds = 300;
};

// What to do once banlieue runs: the objects a platform team and a VM user write, in the order
// they need them. Full resource names: `virtualmachines` alone is ambiguous beside KubeVirt.
void printNextSteps(const BootstrapFlags& flags) {
  std::cout << "\nNext (examples/ in the banlieue repository has each object):\n"
            << "  kubectl get providerclasses.banlieue.io        # one per plugin\n"
            << "  kubectl apply -f provider.yaml                 # a backend and its credentials "
               "(02-provider-libvirt.yaml)\n"
            << "  kubectl apply -f vmclass.yaml -f vmimage.yaml  # 05-vmclasses.yaml, "
               "06-vmimages.yaml\n"
            << "  kubectl apply -f vm.yaml                       # 01-walkthrough.yaml\n"
            << "  kubectl get virtualmachines.banlieue.io -A -w\n"
            << "  kubectl -n " << flags.options.namespace_
            << " logs deploy/banlieue-controller  # when a VM does not become Ready\n";
}

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
  // Every Deployment becomes ready, the imagebuilder too without kairos-operator (its Url
  // VMImages then say BuildUnavailable): all are waited for.
  auto deployments = deploymentsOf(objects);
  if (!flags.wait) {
    std::cout << "not waiting for the rollout (--no-wait); to follow it:\n";
    for (const auto& d : deployments) {
      std::cout << "  kubectl -n " << d.ns << " rollout status deployment/" << d.name << "\n";
    }
  } else {
    std::cout.flush();
    auto rolled = waitForRollouts(*client, deployments,
                                  std::chrono::seconds(flags.wait_timeout_seconds), std::cout);
    if (!rolled.isOk()) {
      std::cerr << "banlieue bootstrap operator: " << rolled.message() << "\n";
      std::cerr << "banlieue bootstrap operator: the objects are applied; see kubectl -n "
                << flags.options.namespace_ << " describe deployments,pods\n";
      return app::kExitFailure;
    }
    std::cout << "banlieue is running in namespace " << flags.options.namespace_ << "\n";
  }
  printNextSteps(flags);
  return std::cout.good() ? app::kExitOk : app::kExitFailure;
}

}  // namespace

void registerBootstrapCommand(CLI::App& app, app::Action& action) {
  auto* bootstrap = app.add_subcommand("bootstrap", "Install banlieue into a cluster");
  bootstrap->require_subcommand(1);
  auto* op = bootstrap->add_subcommand(
      "operator",
      "Apply the namespace, CRDs, RBAC, Deployments and one ProviderClass per plugin, then wait "
      "for the Deployments to roll out");
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
  op->add_flag("!--no-wait", flags->wait,
               "Return once the objects are applied, without waiting for the Deployments to "
               "roll out");
  op->add_option("--wait-timeout", flags->wait_timeout_seconds,
                 "Seconds to wait for every Deployment to roll out (all replicas updated, ready "
                 "and available); exit 1 naming the one that did not")
      ->capture_default_str()
      ->check(CLI::Range(1, 86400));
  op->callback([&action, flags] { action = [flags] { return runBootstrap(*flags); }; });
}

}  // namespace banlieue::roles::bootstrap
