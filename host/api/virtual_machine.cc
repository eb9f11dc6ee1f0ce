#include "host/api/virtual_machine.h"

#include "host/api/declare.h"
#include "host/api/infra_fields.h"

namespace banlieue::api {

const Fields<AntiAffinityTerm>& AntiAffinityTerm::describe() {
  using T = AntiAffinityTerm;
  static const Fields<T> f =
      Fields<T>("Keep this VM apart from VMs matching labelSelector across topologyKey")
          .field("topologyKey", &T::topology_key,
                 {.description = "Failure-domain label whose values must differ",
                  .required = true,
                  .min_length = 1})
          .field("labelSelector", &T::label_selector,
                 {.description = "Sibling VMs in the same namespace to keep apart from",
                  .required = true})
          .field("mode", &T::mode,
                 {.description = "required refuses a placement that breaks the rule; preferred "
                                 "only ranks placements by it",
                  .enum_values = {"required", "preferred"},
                  .default_json = "\"required\""});
  return f;
}

const Fields<Placement>& Placement::describe() {
  using T = Placement;
  static const Fields<T> f =
      Fields<T>("Where the VM may run; candidate Providers come from the VM's namespace")
          .field("providerSelector", &T::provider_selector,
                 {.description = "Labels of the Providers the VM may run on"})
          .field("failureDomainSelector", &T::failure_domain_selector,
                 {.description = "Labels of the failure domains the VM may run in"})
          .field("antiAffinity", &T::anti_affinity,
                 {.description = "Rules that spread this VM away from its siblings"});
  return f;
}

const Fields<UserDataSource>& UserDataSource::describe() {
  using T = UserDataSource;
  static const Fields<T> f =
      Fields<T>(
          "Guest user data; exactly one of secretRef, configMapRef (default key "
          "user-data). A Secret is used only when labelled banlieue.io/user-data=true")
          .field("secretRef", &T::secret_ref,
                 {.description = "Secret key holding the user data; the Secret must be labelled "
                                 "banlieue.io/user-data=true"})
          .field("configMapRef", &T::config_map_ref,
                 {.description = "ConfigMap key holding the user data"})
          .exactlyOneOf({"secretRef", "configMapRef"});
  return f;
}

const Fields<NetworkOverride>& NetworkOverride::describe() {
  using T = NetworkOverride;
  static const Fields<T> f =
      Fields<T>("Per-VM addressing of the VMClass interface with the same name")
          .field("name", &T::name,
                 {.description = "Interface name in the VMClass's network.interfaces",
                  .required = true,
                  .min_length = 1})
          .field("static", &T::static_,
                 {.description = "This VM's own address on that interface", .required = true});
  return f;
}

const Fields<DiskOverride>& DiskOverride::describe() {
  using T = DiskOverride;
  static const Fields<T> f =
      Fields<T>("A bigger size for one of the VMClass's disks")
          .field("name", &T::name,
                 {.description = "Disk name in the VMClass's hardware.disks",
                  .required = true,
                  .min_length = 1})
          .field("sizeGiB", &T::size_gib,
                 {.description = "New size in GiB; never smaller than the class's",
                  .required = true,
                  .minimum = 1,
                  .maximum = 65536});
  return f;
}

const Fields<HardwareOverride>& HardwareOverride::describe() {
  using T = HardwareOverride;
  static const Fields<T> f =
      Fields<T>("Per-VM hardware on top of the VMClass; providers refuse shrinking")
          .field(
              "cpus", &T::cpus,
              {.description = "Virtual CPUs instead of the class's", .minimum = 1, .maximum = 256})
          .field("memoryMiB", &T::memory_mib,
                 {.description = "Memory in MiB instead of the class's",
                  .minimum = 128,
                  .maximum = 4194304})
          .field("diskOverrides", &T::disk_overrides,
                 {.description = "Per-disk size changes, by disk name", .map_keys = {"name"}});
  return f;
}

const Fields<VirtualMachineSpec>& VirtualMachineSpec::describe() {
  using T = VirtualMachineSpec;
  static const Fields<T> f =
      Fields<T>("The desired virtual machine")
          .field("classRef", &T::class_ref,
                 {.description = "The cluster-scoped VMClass", .required = true})
          .field("imageRef", &T::image_ref,
                 {.description = "The cluster-scoped VMImage", .required = true})
          .field("placement", &T::placement,
                 {.description = "Constraints on the Provider and failure domain the VM lands on",
                  .default_json = "{}"})
          .field("desiredPowerState", &T::desired_power_state,
                 {.description = "Power state banlieue keeps the VM in",
                  .enum_values = enums::kPowerState,
                  .default_json = "\"PoweredOn\""})
          .field("resizePolicy", &T::resize_policy, infra::resizePolicy())
          .field("restartRequestedAt", &T::restart_requested_at,
                 {.description =
                      "A restart request: a new value (banlieue vm restart writes the current "
                      "time) asks for one restart of the running VM, a graceful shutdown then a "
                      "start; the same value again does nothing. status.lastRestart answers it"})
          .field(
              "userData", &T::user_data,
              {.description = "Cloud-init user data for the guest, from one Secret or ConfigMap"})
          .field("migrationPolicy", &T::migration_policy,
                 {.description = "What happens when the placement no longer holds",
                  .enum_values = {"automatic", "manual", "never"},
                  .default_json = "\"automatic\""})
          .field("paused", &T::paused, {.description = "Stop reconciling this VM"})
          .field("networkOverrides", &T::network_overrides,
                 {.description = "Static addresses for this VM, per class interface",
                  .map_keys = {"name"}})
          .field("hardwareOverride", &T::hardware_override,
                 {.description = "CPU, memory and disk sizes that differ from the VMClass"})
          .field("folder", &T::folder, {.description = "Backend destination folder (vSphere)"});
  return f;
}

const Fields<ResolvedMapping>& ResolvedMapping::describe() {
  using T = ResolvedMapping;
  static const Fields<T> f =
      Fields<T>("A storage or network class and what it means on the chosen Provider")
          .field("className", &T::class_name,
                 {.description = "Class name as the VMClass uses it", .required = true})
          .field("backendId", &T::backend_id,
                 {.description = "The backend's own identifier for it (datastore, pool, "
                                 "network); empty when the backend uses the class name"});
  return f;
}

const Fields<ScheduledPlacement>& ScheduledPlacement::describe() {
  using T = ScheduledPlacement;
  static const Fields<T> f =
      Fields<T>("The scheduler's decision")
          .field("providerName", &T::provider_name,
                 {.description = "Provider in the VM's namespace that runs the VM"})
          .field("providerClass", &T::provider_class,
                 {.description = "That Provider's ProviderClass (its backend)"})
          .field("failureDomain", &T::failure_domain,
                 {.description = "Failure domain of the Provider the VM runs in"})
          .field("resolvedStorage", &T::resolved_storage,
                 {.description = "Each disk's storage class resolved on the Provider",
                  .map_keys = {"className"}})
          .field("resolvedNetworks", &T::resolved_networks,
                 {.description = "Each interface's network class resolved on the Provider",
                  .map_keys = {"className"}})
          .field("scheduledAt", &T::scheduled_at,
                 {.description = "When this placement was chosen", .format = "date-time"});
  return f;
}

const Fields<HeldAddress>& HeldAddress::describe() {
  using T = HeldAddress;
  static const Fields<T> f =
      Fields<T>("An address reserved for one of the VM's interfaces")
          .field("interface", &T::interface,
                 {.description = "Interface name in the VMClass", .required = true})
          .field("networkClass", &T::network_class,
                 {.description = "Network class of that interface"})
          .field("address", &T::address,
                 {.description = "The reserved address, in CIDR form", .required = true});
  return f;
}

const Fields<VirtualMachineStatus>& VirtualMachineStatus::describe() {
  using T = VirtualMachineStatus;
  static const Fields<T> f =
      Fields<T>("Observed state, written by banlieue.io/controller")
          .field("scheduled", &T::scheduled,
                 {.description = "Where the scheduler placed the VM; empty until it is placed"})
          .field("infrastructureRef", &T::infrastructure_ref,
                 {.description = "The backend-specific machine object made for this VM"})
          .field("initialization", &T::initialization,
                 {.description = "Whether the backend has finished creating the machine"})
          .field("addresses", &T::addresses,
                 {.description = "Addresses the guest reports, copied from the machine object"})
          .field("observedPowerState", &T::observed_power_state,
                 {.description = "Power state the backend last reported",
                  .enum_values = enums::kPowerState})
          .field("lastRestart", &T::last_restart,
                 {.description = "The last restart request the backend acted on, and when "
                                 "(copied from the machine object)"})
          .field("tpmEndorsementCertificates", &T::tpm_endorsement_certificates,
                 {.description = "PEM endorsement certificates of the VM's virtual TPM"})
          .field("heldAddresses", &T::held_addresses,
                 {.description = "Addresses reserved for the VM's interfaces from an IPAM pool",
                  .map_keys = {"interface"}})
          .field("conditions", &T::conditions,
                 conditionsSpec("Ready, Scheduled and the other observations of the VM"))
          .field("observedGeneration", &T::observed_generation,
                 {.description = "metadata.generation this status was computed from"});
  return f;
}

const Fields<PoolMemberTemplate>& PoolMemberTemplate::describe() {
  using T = PoolMemberTemplate;
  static const Fields<T> f =
      Fields<T>("What each pool member is made from")
          .field("labels", &T::labels, {.description = "Labels every member carries"})
          .field("annotations", &T::annotations,
                 {.description = "Annotations every member carries"})
          .field("spec", &T::spec,
                 {.description = "The VirtualMachine spec of every member", .required = true});
  return f;
}

const Fields<PoolAddressing>& PoolAddressing::describe() {
  using T = PoolAddressing;
  static const Fields<T> f =
      Fields<T>("Static addresses handed to members in list order")
          .field("interface", &T::interface,
                 {.description = "Class interface the addresses are for", .required = true})
          .field("pool", &T::pool,
                 {.description = "Single IPv4 addresses, low-high ranges or CIDRs",
                  .required = true,
                  .min_items = 1})
          .field("prefix", &T::prefix,
                 {.description = "Network prefix length of every address",
                  .required = true,
                  .minimum = 0,
                  .maximum = 32})
          .field("gateway", &T::gateway, {.description = "Default gateway of the members"})
          .field("nameservers", &T::nameservers, {.description = "DNS servers of the members"})
          .field("domain", &T::domain, {.description = "DNS search domain of the members"});
  return f;
}

const Fields<VirtualMachinePoolSpec>& VirtualMachinePoolSpec::describe() {
  using T = VirtualMachinePoolSpec;
  static const Fields<T> f =
      Fields<T>("A warm pool of single-use VirtualMachines")
          .field("warmReplicas", &T::warm_replicas,
                 {.description = "Unclaimed ready members to keep", .required = true, .minimum = 0})
          .field("maxReplicas", &T::max_replicas,
                 {.description = "Cap on all members, claimed ones included", .minimum = 0})
          .field("maxSurge", &T::max_surge,
                 {.description = "Members provisioning at the same time, at most",
                  .minimum = 1,
                  .default_json = "2"})
          .field("template", &T::template_,
                 {.description = "Labels, annotations and spec of each member", .required = true})
          .field("addressing", &T::addressing,
                 {.description = "Static addresses for members; DHCP or the class's when absent"})
          .field("readiness", &T::readiness,
                 {.description = "The condition that makes a member available",
                  .required = true,
                  .enum_values = {"GuestReady", "InfrastructureReady"}})
          .field("provisioningTimeoutSeconds", &T::provisioning_timeout_seconds,
                 {.description = "A member not available after this long is replaced",
                  .minimum = 1,
                  .default_json = "1800"})
          .field("maxIdleSeconds", &T::max_idle_seconds,
                 {.description = "An unclaimed member older than this is replaced; absent: never",
                  .minimum = 1})
          .field("recycleOnImageChange", &T::recycle_on_image_change,
                 {.description = "Replace unclaimed members when the image's content changes",
                  .default_json = "true"});
  return f;
}

const Fields<VirtualMachinePoolStatus>& VirtualMachinePoolStatus::describe() {
  using T = VirtualMachinePoolStatus;
  static const Fields<T> f =
      Fields<T>("Member counts, written by banlieue.io/controller")
          .field("replicas", &T::replicas,
                 {.description = "All members that are not being deleted, claimed ones included"})
          .field("warmReplicas", &T::warm_replicas,
                 {.description = "Unclaimed members, available or provisioning: the count "
                                 "spec.warmReplicas asks for and kubectl scale reads"})
          .field("selector", &T::selector,
                 {.description = "Label selector of the unclaimed members, as text"})
          .field("available", &T::available,
                 {.description = "Unclaimed members that meet spec.readiness"})
          .field("provisioning", &T::provisioning,
                 {.description = "Unclaimed members not yet available"})
          .field("claimed", &T::claimed, {.description = "Members bound to a claim"})
          .field("imageRevision", &T::image_revision,
                 {.description = "Content revision of the template's image that members use"})
          .field("conditions", &T::conditions, conditionsSpec("Warm and Capacity"))
          .field("observedGeneration", &T::observed_generation,
                 {.description = "metadata.generation this status was computed from"});
  return f;
}

const Fields<ClaimSubject>& ClaimSubject::describe() {
  using T = ClaimSubject;
  static const Fields<T> f =
      Fields<T>("Who the member is bound to")
          .field("id", &T::id,
                 {.description = "Identity of the subject within its issuer",
                  .required = true,
                  .min_length = 1})
          .field("issuer", &T::issuer,
                 {.description = "Who vouches for the id, e.g. a CI system's URL",
                  .required = true,
                  .min_length = 1});
  return f;
}

const Fields<VirtualMachineClaimSpec>& VirtualMachineClaimSpec::describe() {
  using T = VirtualMachineClaimSpec;
  static const Fields<T> f =
      Fields<T>("A claim on one member of a VirtualMachinePool in the same namespace")
          .field("poolRef", &T::pool_ref,
                 {.description = "The VirtualMachinePool to take a member from", .required = true})
          .field("subject", &T::subject,
                 {.description = "Who the member is handed to", .required = true});
  return f;
}

const Fields<VirtualMachineClaimStatus>& VirtualMachineClaimStatus::describe() {
  using T = VirtualMachineClaimStatus;
  static const Fields<T> f =
      Fields<T>("The bound member as it is now, written by banlieue.io/controller")
          .field("memberRef", &T::member_ref, {.description = "The bound VirtualMachine"})
          .field("addresses", &T::addresses, {.description = "The bound member's addresses"})
          .field(
              "observedPowerState", &T::observed_power_state,
              {.description = "The bound member's power state", .enum_values = enums::kPowerState})
          .field("tpmEndorsementCertificates", &T::tpm_endorsement_certificates,
                 {.description = "PEM endorsement certificates of the member's virtual TPM"})
          .field("conditions", &T::conditions, conditionsSpec("Bound and Ready"))
          .field("observedGeneration", &T::observed_generation,
                 {.description = "metadata.generation this status was computed from"});
  return f;
}

BANLIEUE_API_CODEC(VirtualMachine);
BANLIEUE_API_CODEC(VirtualMachinePool);
BANLIEUE_API_CODEC(VirtualMachineClaim);

std::vector<KindInfo> virtualMachineKinds() {
  KindInfo vm{
      .group = kGroup,
      .version = kVersion,
      .kind = "VirtualMachine",
      .plural = "virtualmachines",
      .short_names = {"bvm"},
      .description = "A virtual machine on whichever backend banlieue schedules it to",
      .columns =
          {{"Class", "string", ".spec.classRef.name", "The VMClass"},
           {"Image", "string", ".spec.imageRef.name", "The VMImage"},
           {"Provider", "string", ".status.scheduled.providerName", "Provider the VM is placed on"},
           {"Failure-Domain", "string", ".status.scheduled.failureDomain",
            "Failure domain the VM is placed in"},
           {"Power", "string", ".status.observedPowerState", "Power state the backend reports"},
           readyColumn(),
           reasonColumn(),
           {"IP", "string", ".status.addresses[0].address", "First address the guest reports"},
           ageColumn()},
      .spec_schema = &schemaOf<VirtualMachineSpec>,
      .status_schema = &schemaOf<VirtualMachineStatus>,
      .spec_required = true};
  KindInfo pool{
      .group = kGroup,
      .version = kVersion,
      .kind = "VirtualMachinePool",
      .plural = "virtualmachinepools",
      .short_names = {"bvmpool"},
      .description = "Warm, single-use VirtualMachines handed out through claims",
      .columns = {{"Warm", "integer", ".spec.warmReplicas", "Unclaimed ready members to keep"},
                  {"Available", "integer", ".status.available",
                   "Unclaimed members ready to be claimed"},
                  {"Provisioning", "integer", ".status.provisioning",
                   "Unclaimed members not yet ready"},
                  {"Claimed", "integer", ".status.claimed", "Members bound to a claim"},
                  ageColumn()},
      .spec_schema = &schemaOf<VirtualMachinePoolSpec>,
      .status_schema = &schemaOf<VirtualMachinePoolStatus>,
      // `kubectl scale bvmpool` sets warmReplicas, the unclaimed members to keep.
      .scale = ScalePaths{.spec_replicas = ".spec.warmReplicas",
                          .status_replicas = ".status.warmReplicas",
                          .label_selector = ".status.selector"},
      .spec_required = true};
  KindInfo claim{.group = kGroup,
                 .version = kVersion,
                 .kind = "VirtualMachineClaim",
                 .plural = "virtualmachineclaims",
                 .short_names = {"bvmclaim"},
                 .description = "A claim on one member of a VirtualMachinePool",
                 .columns = {{"Pool", "string", ".spec.poolRef.name"},
                             {"Member", "string", ".status.memberRef.name"},
                             {"Bound", "string", ".status.conditions[?(@.type==\"Bound\")].status"},
                             ageColumn()},
                 .spec_schema = &schemaOf<VirtualMachineClaimSpec>,
                 .status_schema = &schemaOf<VirtualMachineClaimStatus>,
                 .spec_required = true};
  return {vm, pool, claim};
}

}  // namespace banlieue::api
