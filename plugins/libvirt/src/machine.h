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

sdk::Status finalizeMachine(MachineContext& ctx, const sdk::Call& call,
                            const sdk::ReconcileRequest& request, sdk::Reply& reply);

}  // namespace banlieue::libvirt
