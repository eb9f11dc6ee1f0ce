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
    {"controller",
     "Schedule VirtualMachines onto Providers, apply infra CRs, mirror status, run pools",
     "issue #6 (banlieue controller)"},
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
}

}  // namespace banlieue::roles
