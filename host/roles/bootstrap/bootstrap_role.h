#pragma once

#include "host/app/command.h"

namespace banlieue::roles::bootstrap {

// `banlieue bootstrap operator [--dry-run] [--image ..] [--plugin-dir ..] ...`
void registerBootstrapCommand(CLI::App& app, app::Action& action);

}  // namespace banlieue::roles::bootstrap
