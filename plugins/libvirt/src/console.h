// console_open (ABI 1.3) for LibvirtMachine: the domain's serial console (its <serial
// type='pty'/>, which domain_xml.cc gives every domain) as a libvirt stream, opened with
// VIR_DOMAIN_CONSOLE_SAFE so a second session is refused (ConsoleBusy) rather than stealing the
// first. The stream is non-blocking; the connection's event loop (connection.cc) moves its data,
// and a read polls it until data comes or its wait runs out.
#pragma once

#include "plugins/libvirt/src/connection.h"

#include <banlieue/sdk/provider.h>

#include <memory>

namespace banlieue::libvirt {

sdk::Status openMachineConsole(Connection& connection, const sdk::Call& call,
                               const sdk::ConsoleRequest& request,
                               std::unique_ptr<sdk::Console>& out, sdk::Reply& reply);

}  // namespace banlieue::libvirt
