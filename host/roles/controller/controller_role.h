#pragma once

#include "host/app/command.h"

namespace banlieue::roles::controller {

// `banlieue controller`: schedules VirtualMachines onto Providers and runs their infra CRs,
// behind Lease leader election (docs/adr/0010).
void registerControllerCommand(CLI::App& app, app::Action& action);

}  // namespace banlieue::roles::controller
