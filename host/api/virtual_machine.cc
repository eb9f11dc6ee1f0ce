#include "host/api/virtual_machine.h"

#include "host/api/declare.h"

namespace banlieue::api {

const Fields<AntiAffinityTerm>& AntiAffinityTerm::describe() {
  using T = AntiAffinityTerm;
  static const Fields<T> f =
      Fields<T>("Keep this VM apart from VMs matching labelSelector across topologyKey")
          .field("topologyKey", &T::topology_key,
                 {.description = "Failure-domain label whose values must differ",
                  .required = true,
                  .min_length = 1})
          .field("labelSelector", &T::label_selector, {.required = true})
          .field("mode", &T::mode,
                 {.enum_values = {"required", "preferred"}, .default_json = "\"required\""});
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
          .field("antiAffinity", &T::anti_affinity);
  return f;
}

const Fields<UserDataSource>& UserDataSource::describe() {
  using T = UserDataSource;
  static const Fields<T> f =
      Fields<T>(
          "Guest user data; exactly one of secretRef, configMapRef (default key "
          "user-data). A Secret is used only when labelled banlieue.io/user-data=true")
          .field("secretRef", &T::secret_ref)
          .field("configMapRef", &T::config_map_ref);
  return f;
}

const Fields<NetworkOverride>& NetworkOverride::describe() {
  using T = NetworkOverride;
  static const Fields<T> f =
      Fields<T>("Per-VM addressing of the VMClass interface with the same name")
          .field("name", &T::name, {.required = true, .min_length = 1})
          .field("static", &T::static_, {.required = true});
  return f;
}

const Fields<DiskOverride>& DiskOverride::describe() {
  using T = DiskOverride;
  static const Fields<T> f =
      Fields<T>()
          .field("name", &T::name, {.required = true, .min_length = 1})
          .field("sizeGiB", &T::size_gib, {.required = true, .minimum = 1, .maximum = 65536});
  return f;
}

const Fields<HardwareOverride>& HardwareOverride::describe() {
  using T = HardwareOverride;
  static const Fields<T> f =
      Fields<T>("Per-VM hardware on top of the VMClass; providers refuse shrinking")
          .field("cpus", &T::cpus, {.minimum = 1, .maximum = 256})
          .field("memoryMiB", &T::memory_mib, {.minimum = 128, .maximum = 4194304})
          .field("diskOverrides", &T::disk_overrides, {.map_keys = {"name"}});
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
          .field("placement", &T::placement, {.default_json = "{}"})
          .field("desiredPowerState", &T::desired_power_state,
                 {.enum_values = enums::kPowerState, .default_json = "\"PoweredOn\""})
          .field("userData", &T::user_data)
          .field("migrationPolicy", &T::migration_policy,
                 {.description = "What happens when the placement no longer holds",
                  .enum_values = {"automatic", "manual", "never"},
                  .default_json = "\"automatic\""})
          .field("paused", &T::paused, {.description = "Stop reconciling this VM"})
          .field("networkOverrides", &T::network_overrides, {.map_keys = {"name"}})
          .field("hardwareOverride", &T::hardware_override)
          .field("folder", &T::folder, {.description = "Backend destination folder (vSphere)"});
  return f;
}

const Fields<ResolvedMapping>& ResolvedMapping::describe() {
  using T = ResolvedMapping;
  static const Fields<T> f = Fields<T>()
                                 .field("className", &T::class_name, {.required = true})
                                 .field("backendId", &T::backend_id);
  return f;
}

const Fields<ScheduledPlacement>& ScheduledPlacement::describe() {
  using T = ScheduledPlacement;
  static const Fields<T> f =
      Fields<T>("The scheduler's decision")
          .field("providerName", &T::provider_name)
          .field("providerClass", &T::provider_class)
          .field("failureDomain", &T::failure_domain)
          .field("resolvedStorage", &T::resolved_storage, {.map_keys = {"className"}})
          .field("resolvedNetworks", &T::resolved_networks, {.map_keys = {"className"}})
          .field("scheduledAt", &T::scheduled_at, {.format = "date-time"});
  return f;
}

const Fields<HeldAddress>& HeldAddress::describe() {
  using T = HeldAddress;
  static const Fields<T> f = Fields<T>()
                                 .field("interface", &T::interface, {.required = true})
                                 .field("networkClass", &T::network_class)
                                 .field("address", &T::address, {.required = true});
  return f;
}

const Fields<VirtualMachineStatus>& VirtualMachineStatus::describe() {
  using T = VirtualMachineStatus;
  static const Fields<T> f =
      Fields<T>("Observed state, written by banlieue.io/controller")
          .field("scheduled", &T::scheduled)
          .field("infrastructureRef", &T::infrastructure_ref)
          .field("initialization", &T::initialization)
          .field("addresses", &T::addresses)
          .field("observedPowerState", &T::observed_power_state,
                 {.enum_values = enums::kPowerState})
          .field("tpmEndorsementCertificates", &T::tpm_endorsement_certificates)
          .field("heldAddresses", &T::held_addresses, {.map_keys = {"interface"}})
          .field("conditions", &T::conditions, conditionsSpec())
          .field("observedGeneration", &T::observed_generation);
  return f;
}

const Fields<PoolMemberTemplate>& PoolMemberTemplate::describe() {
  using T = PoolMemberTemplate;
  static const Fields<T> f = Fields<T>("What each pool member is made from")
                                 .field("labels", &T::labels)
                                 .field("annotations", &T::annotations)
                                 .field("spec", &T::spec, {.required = true});
  return f;
}

const Fields<PoolAddressing>& PoolAddressing::describe() {
  using T = PoolAddressing;
  static const Fields<T> f =
      Fields<T>("Static addresses handed to members in list order")
          .field("interface", &T::interface, {.required = true})
          .field("pool", &T::pool,
                 {.description = "Single IPv4 addresses, low-high ranges or CIDRs",
                  .required = true,
                  .min_items = 1})
          .field("prefix", &T::prefix, {.required = true, .minimum = 0, .maximum = 32})
          .field("gateway", &T::gateway)
          .field("nameservers", &T::nameservers)
          .field("domain", &T::domain);
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
          .field("maxSurge", &T::max_surge, {.minimum = 1, .default_json = "2"})
          .field("template", &T::template_, {.required = true})
          .field("addressing", &T::addressing)
          .field("readiness", &T::readiness,
                 {.description = "The condition that makes a member available",
                  .required = true,
                  .enum_values = {"GuestReady", "InfrastructureReady"}})
          .field("provisioningTimeoutSeconds", &T::provisioning_timeout_seconds,
                 {.minimum = 1, .default_json = "1800"})
          .field("maxIdleSeconds", &T::max_idle_seconds, {.minimum = 1})
          .field("recycleOnImageChange", &T::recycle_on_image_change, {.default_json = "true"});
  return f;
}

const Fields<VirtualMachinePoolStatus>& VirtualMachinePoolStatus::describe() {
  using T = VirtualMachinePoolStatus;
  static const Fields<T> f = Fields<T>()
                                 .field("replicas", &T::replicas)
                                 .field("available", &T::available)
                                 .field("provisioning", &T::provisioning)
                                 .field("claimed", &T::claimed)
                                 .field("imageRevision", &T::image_revision)
                                 .field("conditions", &T::conditions, conditionsSpec())
                                 .field("observedGeneration", &T::observed_generation);
  return f;
}

const Fields<ClaimSubject>& ClaimSubject::describe() {
  using T = ClaimSubject;
  static const Fields<T> f = Fields<T>("Who the member is bound to")
                                 .field("id", &T::id, {.required = true, .min_length = 1})
                                 .field("issuer", &T::issuer, {.required = true, .min_length = 1});
  return f;
}

const Fields<VirtualMachineClaimSpec>& VirtualMachineClaimSpec::describe() {
  using T = VirtualMachineClaimSpec;
  static const Fields<T> f =
      Fields<T>("A claim on one member of a VirtualMachinePool in the same namespace")
          .field("poolRef", &T::pool_ref, {.required = true})
          .field("subject", &T::subject, {.required = true});
  return f;
}

const Fields<VirtualMachineClaimStatus>& VirtualMachineClaimStatus::describe() {
  using T = VirtualMachineClaimStatus;
  static const Fields<T> f =
      Fields<T>()
          .field("memberRef", &T::member_ref, {.description = "The bound VirtualMachine"})
          .field("addresses", &T::addresses)
          .field("observedPowerState", &T::observed_power_state,
                 {.enum_values = enums::kPowerState})
          .field("tpmEndorsementCertificates", &T::tpm_endorsement_certificates)
          .field("conditions", &T::conditions, conditionsSpec())
          .field("observedGeneration", &T::observed_generation);
  return f;
}

BANLIEUE_API_CODEC(VirtualMachine);
BANLIEUE_API_CODEC(VirtualMachinePool);
BANLIEUE_API_CODEC(VirtualMachineClaim);

std::vector<KindInfo> virtualMachineKinds() {
  KindInfo vm{.group = kGroup,
              .version = kVersion,
              .kind = "VirtualMachine",
              .plural = "virtualmachines",
              .short_names = {"vm"},
              .description = "A virtual machine on whichever backend banlieue schedules it to",
              .columns = {{"Class", "string", ".spec.classRef.name"},
                          {"Image", "string", ".spec.imageRef.name"},
                          {"Provider", "string", ".status.scheduled.providerName"},
                          {"FailureDomain", "string", ".status.scheduled.failureDomain", "", 1},
                          {"Power", "string", ".status.observedPowerState"},
                          readyColumn(),
                          ageColumn()},
              .spec_schema = &schemaOf<VirtualMachineSpec>,
              .status_schema = &schemaOf<VirtualMachineStatus>,
              .spec_required = true};
  KindInfo pool{.group = kGroup,
                .version = kVersion,
                .kind = "VirtualMachinePool",
                .plural = "virtualmachinepools",
                .short_names = {"vmpool"},
                .description = "Warm, single-use VirtualMachines handed out through claims",
                .columns = {{"Warm", "integer", ".spec.warmReplicas"},
                            {"Available", "integer", ".status.available"},
                            {"Provisioning", "integer", ".status.provisioning"},
                            {"Claimed", "integer", ".status.claimed"},
                            ageColumn()},
                .spec_schema = &schemaOf<VirtualMachinePoolSpec>,
                .status_schema = &schemaOf<VirtualMachinePoolStatus>,
                .spec_required = true};
  KindInfo claim{.group = kGroup,
                 .version = kVersion,
                 .kind = "VirtualMachineClaim",
                 .plural = "virtualmachineclaims",
                 .short_names = {"vmclaim"},
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
