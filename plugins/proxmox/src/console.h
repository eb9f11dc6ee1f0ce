// console_open (ABI 1.3) for ProxmoxMachines: the guest's serial console through PVE's own
// path, as its web UI's xterm.js takes it (docs/adr/0040, 0042). The guest must run and have
// serial0 as a socket (what `qm terminal` reaches); then POST .../termproxy?serial=serial0
// starts a termproxy session (a port and a VNC ticket valid for 40 s), GET .../vncwebsocket
// upgrades to a websocket with the Provider's own API credentials and the same TLS settings as
// every call, and the first message, "<user>:<ticket>\n", is answered "OK". From then on input
// goes out as "0:<len>:<bytes>" and output comes back raw. The ticket and the credentials are
// never logged nor put in a message.
#pragma once

#include "plugins/proxmox/src/pve_client.h"

#include <banlieue/sdk/provider.h>

#include <memory>
#include <mutex>
#include <set>
#include <string>

namespace banlieue::proxmox {

// The serial ports this Provider holds a console of. QEMU's serial socket serves one client at
// a time (a second `qm terminal` waits, silent, until the first leaves), so a second console of
// the same guest is refused with ConsoleBusy instead of opening onto nothing. Consoles are
// closed before their instance goes (ABI rule), so a console may hold a reference to this.
class ConsoleSessions {
 public:
  bool claim(const std::string& port) {
    std::lock_guard lock(mutex_);
    return open_.insert(port).second;
  }
  void release(const std::string& port) {
    std::lock_guard lock(mutex_);
    open_.erase(port);
  }

 private:
  std::mutex mutex_;
  std::set<std::string> open_;  // "<node>/<vmid>/serial0"
};

sdk::Status openMachineConsole(const PveClient& client, ConsoleSessions& sessions,
                               const sdk::Call& call, const sdk::ConsoleRequest& request,
                               std::unique_ptr<sdk::Console>& out, sdk::Reply& reply);

}  // namespace banlieue::proxmox
