#include "host/roles/pending/pending_roles.h"

#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>
#include <string>

namespace banlieue::roles {
namespace {

struct PendingRole {
  const char* name;
  const char* help;
  const char* lands_with;  // the issue that delivers it
};

// When a role lands, its own folder under host/roles/ registers it and it leaves this list.
constexpr PendingRole kPendingRoles[] = {
    {"operator", "Mint a least-privilege workload per Provider from its ProviderClass",
     "issue #7 (operator and provider runtime)"},
    {"imagebuilder", "Turn Url-kind VMImages into OSArtifacts and mirror build status",
     "issue #11 (image pipeline)"},
    {"image-import", "Verify an artifact's sha256 and push it into every zone through the plugin",
     "issue #11 (image pipeline)"},
};

app::Action unavailable(std::string command, std::string lands_with) {
  return [command = std::move(command), lands_with = std::move(lands_with)] {
    std::cerr << "banlieue " << command << ": not available in this build yet; it lands with "
              << lands_with << ".\n";
    return app::kExitRoleUnavailable;
  };
}

}  // namespace

void registerPendingRoles(CLI::App& app, app::Action& action) {
  for (const auto& role : kPendingRoles) {
    auto* sub = app.add_subcommand(role.name, role.help);
    sub->allow_extras();
    sub->callback([&action, role] { action = unavailable(role.name, role.lands_with); });
  }

  auto* provider =
      app.add_subcommand("provider", "Run one Provider's backend plugin behind the ABI");
  auto backend = std::make_shared<std::string>();
  provider->add_option("backend", *backend, "Backend name: a plugin directory under --plugin-dir")
      ->required();
  auto plugin_dir = std::make_shared<std::string>("/usr/lib/banlieue/plugins");
  provider
      ->add_option("--plugin-dir", *plugin_dir, "Directory holding one sub-directory per plugin")
      ->capture_default_str();
  provider->allow_extras();
  provider->callback([&action, backend, plugin_dir] {
    action = unavailable("provider " + *backend, "issue #7 (operator and provider runtime)");
  });
}

}  // namespace banlieue::roles
