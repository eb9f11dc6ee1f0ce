#include "host/roles/plugin/plugin_command.h"

#include "host/api/yaml.h"
#include "host/common/logging.h"
#include "host/plugin/conformance.h"
#include "host/roles/bootstrap/manifests.h"
#include "host/roles/bootstrap/plugin_discovery.h"

#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>

namespace banlieue::roles::plugin {
namespace {

using banlieue::plugin::CheckOptions;

struct Options {
  std::string directory;
  std::string config;
  std::string output = "text";
  std::string sha256;
  int64_t deadline_ms = 10000;
  int64_t grace_ms = 2000;
  int64_t create_timeout_s = 900;

  CheckOptions toCheck() const {
    CheckOptions o;
    o.directory = directory;
    if (!config.empty()) o.config_file = config;
    if (!sha256.empty()) o.expected_sha256 = sha256;
    o.deadline = std::chrono::milliseconds(deadline_ms);
    o.grace = std::chrono::milliseconds(grace_ms);
    o.create_timeout = std::chrono::seconds(create_timeout_s);
    return o;
  }
};

void addCommon(CLI::App* sub, Options& o) {
  sub->add_option("dir", o.directory, "Plugin directory (holds provider.json and the .so)")
      ->required()
      ->check(CLI::ExistingDirectory);
  sub->add_option("--sha256", o.sha256, "Refuse to load unless the library has this sha256");
  sub->add_option("--output,-o", o.output, "text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
}

// What installing a plugin in a running cluster takes, without re-running bootstrap: its CRDs
// and its two ClusterRoles (docs/adr/0043), as one YAML stream. Reads files only.
int printInstallManifests(const std::string& directory) {
  auto discovered = bootstrap::discoverPlugin(directory);
  if (!discovered.ok()) {
    std::cerr << "banlieue plugin manifests: " << discovered.status().reason() << ": "
              << discovered.status().message() << "\n";
    return app::kExitFailure;
  }
  auto roles = bootstrap::backendClusterRoles(*discovered);
  std::vector<const rapidjson::Value*> documents;
  for (const auto& crd : discovered->crds) documents.push_back(&crd);
  for (const auto& role : roles) documents.push_back(&role);
  auto yaml = api::toYamlStream(documents);
  if (!yaml.ok()) {
    std::cerr << "banlieue plugin manifests: " << yaml.status().message() << "\n";
    return app::kExitFailure;
  }
  std::cout << *yaml;
  return app::kExitOk;
}

}  // namespace

void registerPluginCommands(CLI::App& app, app::Action& action) {
  auto* plugin =
      app.add_subcommand("plugin", "Check or inspect a provider plugin (third-party conformance)");
  plugin->require_subcommand(1);

  auto check_options = std::make_shared<Options>();
  auto* check = plugin->add_subcommand(
      "check",
      "Load a plugin in a child process, drive every slot it offers with sample payloads, and\n"
      "report PASS/FAIL per step. Exit code 0 when nothing failed, 1 otherwise.\n"
      "Always checked: the .so exports only banlieue_provider_v1_init, and every slot describe\n"
      "claims is in the table. After a crash or a hang the step fails and the check goes on in\n"
      "a fresh process, so every step is listed.\n"
      "With --config the check is strict (what a plugin's CI should run): instance_create and\n"
      "reconcile of each sample must succeed, a second reconcile of the same object must answer\n"
      "the same providerID, OK without progress fails after 3 answers, and a claimed slot may\n"
      "not answer UNIMPLEMENTED. IN_PROGRESS is polled after the plugin's requeue hint (else\n"
      "backoff from 500 ms), at most 30 s apart, for up to --create-timeout.");
  addCommon(check, *check_options);
  check
      ->add_option(
          "--config", check_options->config,
          "instance_create config (JSON: {\"provider\": <Provider>, \"credentials\": {...}});\n"
          "makes the check strict. Without it, instance-bound slots run only if the sample\n"
          "config connects, and a backend error is a well-formed answer")
      ->check(CLI::ExistingFile);
  check->add_option("--deadline-ms", check_options->deadline_ms, "Deadline of each call")
      ->check(CLI::Range(int64_t{1}, int64_t{3600000}))
      ->capture_default_str();
  check
      ->add_option("--grace-ms", check_options->grace_ms,
                   "Time past the deadline before the call is killed")
      ->check(CLI::Range(int64_t{0}, int64_t{600000}))
      ->capture_default_str();
  check
      ->add_option("--create-timeout", check_options->create_timeout_s,
                   "Seconds one long operation (create, delete, import) may stay IN_PROGRESS")
      ->check(CLI::Range(int64_t{1}, int64_t{86400}))
      ->capture_default_str();
  check->callback([&action, check_options] {
    action = [check_options] {
      auto report = banlieue::plugin::checkPlugin(check_options->toCheck());
      std::cout << (check_options->output == "json" ? banlieue::plugin::renderJson(report) + "\n"
                                                    : banlieue::plugin::renderText(report));
      return report.passed() ? app::kExitOk : app::kExitFailure;
    };
  });

  auto manifests_dir = std::make_shared<std::string>();
  auto* manifests = plugin->add_subcommand(
      "manifests",
      "Print what adding this plugin to a running cluster takes, as YAML for `kubectl apply\n"
      "-f -`: the CRDs it ships and its two ClusterRoles, banlieue-provider-<name> (its\n"
      "provider pods' rights on its kinds) and banlieue-infrastructure-<name> (creating and\n"
      "deleting them). Both carry the labels banlieue's operator and controller aggregate, so\n"
      "no bootstrap re-run is needed; a ProviderClass naming the plugin's provider image does\n"
      "the rest. Reads the directory only: the plugin's code is not loaded.");
  manifests->add_option("dir", *manifests_dir, "Plugin directory (holds provider.json)")
      ->required()
      ->check(CLI::ExistingDirectory);
  manifests->callback([&action, manifests_dir] {
    action = [manifests_dir] { return printInstallManifests(*manifests_dir); };
  });

  auto inspect_options = std::make_shared<Options>();
  inspect_options->output = "json";
  auto* inspect = plugin->add_subcommand(
      "inspect", "Print a plugin's manifest and descriptor as JSON (loads it in a child process)");
  addCommon(inspect, *inspect_options);
  inspect->callback([&action, inspect_options] {
    action = [inspect_options] {
      auto report = banlieue::plugin::inspectPlugin(inspect_options->toCheck());
      if (!report.passed()) {
        std::cerr << banlieue::plugin::renderText(report);
        return app::kExitFailure;
      }
      if (inspect_options->output == "json") {
        std::cout << "{\"library\":\"" << common::jsonEscape(report.library)
                  << "\",\"manifest\":" << report.manifest_json
                  << ",\"descriptor\":" << report.descriptor_json << "}\n";
      } else {
        std::cout << banlieue::plugin::renderText(report);
      }
      return app::kExitOk;
    };
  });
}

}  // namespace banlieue::roles::plugin
