#pragma once

#include "host/app/command.h"

namespace banlieue::roles::plugin {

// `banlieue plugin check <dir>` and `banlieue plugin inspect <dir>`.
void registerPluginCommands(CLI::App& app, app::Action& action);

}  // namespace banlieue::roles::plugin
