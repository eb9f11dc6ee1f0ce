// `banlieue vm console NAME`: a person's terminal on a VirtualMachine's serial console
// (docs/adr/0040). The console is served by the leader of the VM's Provider, on loopback inside
// its pod; this command finds that pod, reaches it through `kubectl port-forward` (the
// apiserver's pods/portforward), proves who the user is with their bearer token and bridges the
// terminal until Ctrl-] or the console ends.
#pragma once

#include "host/app/command.h"

namespace banlieue::roles::vm {

// Adds `console` under the `vm` command.
void registerConsoleCommand(CLI::App& vm, app::Action& action);

}  // namespace banlieue::roles::vm
