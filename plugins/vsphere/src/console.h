// The console slot (ABI 1.3, docs/adr/0040) for VSphereMachines. vSphere has no byte stream
// for a VM's console unless a serial port is backed by the network; what it has is a
// short-lived ticket for its graphical WebMKS console (VirtualMachine.AcquireTicket, ticketType
// "webmks"). So the plugin serves the "webmks" console kind, a ticket: console_open answers OK
// without a stream, with the URL a WebMKS client connects to (wss://<host>:<port>/ticket/
// <ticket>) in the reply. The ticket is a credential: it is never logged or put in a message.
// The "serial" kind is UNIMPLEMENTED (SerialConsoleUnavailable), naming `--url`.
#pragma once

#include "plugins/vsphere/src/vim.h"

#include <banlieue/sdk/provider.h>

#include <string>

namespace banlieue::vsphere {

// How long the plugin says a WebMKS ticket stays valid. vSphere's VirtualMachineTicket carries
// no expiry; its tickets are meant to be used at once (the vSphere Client connects the moment
// it has one) and are single-use, so the plugin promises no more than half a minute.
inline constexpr int kWebMksTicketSeconds = 30;

// A VirtualMachineTicket (vim25), as AcquireTicket returns it.
struct VmTicket {
  std::string ticket;
  std::string host;  // the ESXi host serving the console; may be absent
  int port = 0;      // absent: 443
  std::string ssl_thumbprint;
  std::string url;  // set by newer vCenters: the whole WebMKS URL
};

// Reads AcquireTicket's returnval. Exposed for the unit tests.
VmTicket parseVmTicket(const pugi::xml_node& returnval);
// The URL a WebMKS client connects to: the ticket's own url when vSphere gives one, else
// wss://<host>:<port>/ticket/<ticket>, with `fallback_host` (the vCenter's) when the ticket
// names no host. Empty when the ticket is empty.
std::string webMksUrl(const VmTicket& ticket, const std::string& fallback_host);

class ConsoleOpener {
 public:
  explicit ConsoleOpener(Vim& vim) : vim_(vim) {}

  sdk::Status open(const sdk::Call& call, const sdk::ConsoleRequest& request, sdk::Reply& reply);

 private:
  Vim& vim_;
};

}  // namespace banlieue::vsphere
