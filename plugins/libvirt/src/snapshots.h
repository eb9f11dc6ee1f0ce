// snapshot (ABI 1.2) for LibvirtMachine: libvirt's own snapshots of the machine's domain,
// internal qcow2 snapshots that live in the domain's volumes (so finalize, which deletes those
// volumes and undefines the domain with its snapshot metadata, leaves none behind). Every call
// re-reads libvirt: create finds a snapshot of its name before taking one, delete of what is
// gone is OK.
#pragma once

#include "plugins/libvirt/src/connection.h"

#include <banlieue/sdk/provider.h>

namespace banlieue::libvirt {

// create, list, revert or delete on the domain request.provider_id names. Synchronous: OK or an
// error, never IN_PROGRESS.
sdk::Status snapshotMachine(Connection& connection, const sdk::Call& call,
                            const sdk::SnapshotRequest& request, sdk::Reply& reply);

}  // namespace banlieue::libvirt
