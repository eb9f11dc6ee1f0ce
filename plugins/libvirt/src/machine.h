// The LibvirtMachine lifecycle against one connection: volumes, seed ISO, define, power state,
// addresses, and a delete that is confirmed before it reports done. Every step re-reads the
// backend, so a retried or repeated call converges instead of duplicating (level-triggered).
#pragma once

#include "plugins/libvirt/src/connection.h"
#include "plugins/libvirt/src/machine_spec.h"

#include <banlieue/sdk/provider.h>

namespace banlieue::libvirt {

struct MachineContext {
  Connection& connection;
  std::string domain_type_override;  // Provider annotation libvirt.banlieue.io/domain-type
  std::string failure_domain;        // this host's failure domain name
};

sdk::Status reconcileMachine(MachineContext& ctx, const sdk::Call& call,
                             const sdk::ReconcileRequest& request, sdk::Reply& reply);

// What one reconcile pass found and did, as far as its reply's "settled" goes.
struct PassSummary {
  bool ok = false;                // the pass answers OK
  bool carried_token = false;     // the request carried an operation token
  bool defined_now = false;       // the domain was defined by this pass
  bool power_as_desired = false;  // the domain is in the spec's power state
  bool hardware_pending = false;  // the running guest lacks part of the spec (held or restarting)
  bool restarted = false;         // this pass restarted the guest (a request)
  bool running = false;
  bool agent_answered = false;  // the guest agent answered
  bool has_addresses = false;
};
// Whether the reply may say the machine is settled (docs/provider-contract.md, "Settled
// replies"): only a pass that found it at rest, not one that just made or changed something a
// later call must look at, and not while a running guest's agent and addresses are unknown
// (another call could report them).
bool atRest(const PassSummary& pass);

sdk::Status finalizeMachine(MachineContext& ctx, const sdk::Call& call,
                            const sdk::ReconcileRequest& request, sdk::Reply& reply);

}  // namespace banlieue::libvirt
