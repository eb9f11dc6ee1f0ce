#include "plugins/libvirt/src/machine_domain.h"

#include "plugins/libvirt/src/machine_spec.h"

namespace banlieue::libvirt {

std::optional<Domain> machineDomain(virConnectPtr conn, const std::string& provider_id,
                                    const std::string& machine_uid, const std::string& waiting) {
  if (provider_id.empty()) {
    throw sdk::Error(sdk::Code::kFailedPrecondition, "MachineNotProvisioned",
                     "the LibvirtMachine has no domain yet (no spec.providerID): " + waiting +
                         " wait for its first reconcile");
  }
  auto uuid = domainUuidOfProviderId(provider_id);
  if (!uuid) {
    throw sdk::Error(sdk::Code::kInvalidArgument, "InvalidProviderID",
                     "spec.providerID '" + provider_id + "' is not libvirt://<domain uuid>");
  }
  // Reconcile gives the domain the UUID derived from the machine's uid. Any other UUID is
  // another VM.
  if (!machine_uid.empty() && domainUuidFor(machine_uid) != *uuid) {
    throw sdk::Error(sdk::Code::kFailedPrecondition, "ProviderIDMismatch",
                     "spec.providerID '" + provider_id +
                         "' names a domain that is not this LibvirtMachine's (uid " + machine_uid +
                         ")");
  }
  return findDomainByUuid(conn, *uuid);
}

}  // namespace banlieue::libvirt
