#pragma once

#include "host/app/command.h"

namespace banlieue::roles {

// Registers the roles whose issues have not landed yet. Each has its real name, help and
// arguments, says plainly that it is not in this build, and exits with kExitRoleUnavailable.
void registerPendingRoles(CLI::App& app, app::Action& action);

}  // namespace banlieue::roles
