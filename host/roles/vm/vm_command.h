// `banlieue vm start|stop|restart NAME`: a person's verbs for one VirtualMachine, also usable
// as the kubectl plugin `kubectl banlieue vm ...` (docs/user-guide.md, "Start, stop, restart").
#pragma once

#include "host/app/command.h"

namespace banlieue::roles::vm {

void registerVmCommands(CLI::App& app, app::Action& action);

}  // namespace banlieue::roles::vm
