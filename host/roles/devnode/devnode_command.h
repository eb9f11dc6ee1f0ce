#pragma once

#include "host/app/command.h"

namespace banlieue::roles::devnode {

// `banlieue devnode`: the local node agent for development and tests (deploy/local).
void registerDevnodeCommand(CLI::App& app, app::Action& action);

}  // namespace banlieue::roles::devnode
