// The VirtualMachine scheduler: a pure function from (VM, class, image, Providers in the VM's
// namespace, sibling VMs) to one (Provider, failure domain) placement or a reasoned refusal.
// No I/O, no clock: the same inputs always give the same answer (docs/adr/0010).
//
// Filters, per Provider and per failure domain (first failing one is the candidate's reason):
//   1 placement.providerSelector on Provider labels (absent: every Provider)
//   2 placement.failureDomainSelector on failure-domain labels
//   3 the image is ready on that Provider (name and namespace) and in that failure domain
//   4 every disk's storage class is available in the failure domain
//   5 every interface's network class is available
//   6 every class feature (and `vtpm` when tpmEnabled) is offered
//   7 firmware efi-secure needs the `efiSecureBoot` feature
//   8 required anti-affinity: the failure domain's topologyKey value must differ from the values
//     of the failure domains where matching sibling VMs (never the VM itself) are placed
// Preferred anti-affinity ranks the survivors by how many matching siblings already share the
// topology value (fewest first, so replicas spread evenly); the tie-break is (Provider name,
// failure-domain name). A VM that is already placed keeps its placement while
// its Provider and failure domain still exist and still match the VM's own selectors, so
// capability churn (an image re-import, a class briefly withdrawn) never moves a running VM.
#pragma once

#include "host/api/provider.h"
#include "host/api/virtual_machine.h"
#include "host/api/vm_class.h"

#include <string>
#include <vector>

namespace banlieue::controller {

// Scheduled condition reasons (spec §3.12).
namespace reasons {
inline constexpr const char* kNoProviderMatched = "NoProviderMatched";
inline constexpr const char* kNoFailureDomainMatched = "NoFailureDomainMatched";
inline constexpr const char* kImageNotReady = "ImageNotReady";
inline constexpr const char* kFirmwareUnsupported = "FirmwareUnsupported";
inline constexpr const char* kAntiAffinityUnsatisfied = "AntiAffinityUnsatisfied";
}  // namespace reasons

// At most this many per-candidate reasons go into a refusal (status must stay far below etcd's
// object size limit however many Providers and failure domains exist).
inline constexpr size_t kMaxRejectionReasons = 10;

struct SchedulingInput {
  const api::VirtualMachine* vm = nullptr;
  const api::VMClass* vm_class = nullptr;
  const api::VMImage* image = nullptr;
  std::vector<api::Provider> providers;       // the VM's namespace
  std::vector<api::VirtualMachine> siblings;  // the VM's namespace; may include the VM itself
};

struct Placement {
  std::string provider_name;
  std::string provider_namespace;
  std::string provider_class;
  std::string failure_domain;
  std::vector<api::ResolvedMapping> resolved_storage;
  std::vector<api::ResolvedMapping> resolved_networks;
  api::StringMap failure_domain_labels;
  api::StringMap failure_domain_raw;
  bool kept = false;  // the VM's existing placement, kept rather than chosen anew
};

struct SchedulingResult {
  bool scheduled = false;
  Placement placement;  // when scheduled
  std::string reason;   // when not: a Scheduled=False reason
  std::string message;
};

SchedulingResult schedule(const SchedulingInput& input);

// The backend object a Provider's storage class names in the zone (datacenter, cluster): the
// class's per-zone target when one matches, else its default target, else the class name
// itself (what a VM's disk of that class is placed on).
std::string storageBackendId(const api::Provider& provider, const std::string& storage_class,
                             const std::string& datacenter, const std::string& cluster);

// Why a failure domain cannot host any VM of the class (a storage or network class, a feature
// or the firmware it lacks); empty when it can. The VM-specific filters (selectors, image) are
// not part of it.
std::string classUnsatisfiedBy(const api::VMClass& vm_class, const api::ProviderFailureDomain& fd);

// The zone row of an image's Provider row that a VM placed in `failure_domain` uses, its root
// disk on `target` (the backend id of its first disk's storage class there; libvirt: the pool):
// the row of that failure domain and target when there is one, else a Ready row of the failure
// domain, else any row of it; null when the failure domain has none. Rows of per-target imports
// name their failure domain in failureDomain (docs/adr/0053).
const api::ImageZone* imageZoneFor(const api::ImageProviderStatus& row,
                                   const std::string& failure_domain, const std::string& target);

// "a; b; c; … and M more" with at most `limit` entries.
std::string joinCapped(const std::vector<std::string>& reasons,
                       size_t limit = kMaxRejectionReasons);

}  // namespace banlieue::controller
