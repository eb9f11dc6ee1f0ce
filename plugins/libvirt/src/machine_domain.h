// The domain a LibvirtMachine's spec.providerID names, for the slots that act on a machine
// reconcile made (snapshots, the console).
#pragma once

#include "plugins/libvirt/src/libvirt_handles.h"

#include <optional>
#include <string>

namespace banlieue::libvirt {

// nullopt when that domain is gone. Throws FAILED_PRECONDITION "MachineNotProvisioned" (naming
// `waiting`, e.g. "its snapshots") when the machine has no providerID yet, INVALID_ARGUMENT for
// a providerID that is not libvirt://<uuid>, and FAILED_PRECONDITION "ProviderIDMismatch" when
// the UUID is not the one reconcile derives from the machine's uid: another VM's domain.
std::optional<Domain> machineDomain(virConnectPtr conn, const std::string& provider_id,
                                    const std::string& machine_uid, const std::string& waiting);

}  // namespace banlieue::libvirt
