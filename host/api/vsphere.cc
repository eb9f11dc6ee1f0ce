#include "host/api/vsphere.h"

#include "host/api/infra_fields.h"
#include "host/api/machine_template_impl.h"

namespace banlieue::api {

const Fields<VSphereDisk>& VSphereDisk::describe() {
  using T = VSphereDisk;
  static const Fields<T> f =
      Fields<T>("A disk of the VM")
          .field("name", &T::name, infra::diskName())
          .field("sizeGiB", &T::size_gib, infra::diskSize())
          .field("provisioning", &T::provisioning,
                 {.description = "thin allocates on write; thick and eagerZeroed up front",
                  .enum_values = enums::kDiskProvisioning,
                  .default_json = "\"thin\""});
  return f;
}

const Fields<VSphereNetworkDevice>& VSphereNetworkDevice::describe() {
  using T = VSphereNetworkDevice;
  static const Fields<T> f =
      Fields<T>("A network adapter of the VM")
          .field("name", &T::name, infra::interfaceName())
          .field("portGroup", &T::port_group,
                 {.description = "Port group or distributed port group name", .required = true})
          .field("macAddress", &T::mac_address, infra::macAddress())
          .field("ipam", &T::ipam, infra::ipam());
  return f;
}

const Fields<VSphereMachineSpec>& VSphereMachineSpec::describe() {
  using T = VSphereMachineSpec;
  static const Fields<T> f =
      Fields<T>("A VM on vSphere, fully resolved by the controller")
          .field("providerID", &T::provider_id, infra::providerId("vsphere://<instance-uuid>"))
          .field("failureDomain", &T::failure_domain, infra::failureDomain())
          .field("providerRef", &T::provider_ref, infra::providerRef())
          .field("template", &T::template_,
                 {.description = "Template display name", .required = true, .min_length = 1})
          .field("templateFolder", &T::template_folder,
                 {.description = "The zone's template folder (every zone's template has the "
                                 "same name)"})
          .field("datacenter", &T::datacenter,
                 {.description = "Datacenter of the failure domain; filled from the failure "
                                 "domain when left out",
                  .min_length = 1})
          .field("cluster", &T::cluster,
                 {.description = "Compute cluster of the failure domain; filled from the failure "
                                 "domain when left out",
                  .min_length = 1})
          .field("datastore", &T::datastore,
                 {.description = "Datastore or datastore cluster (member with most free space); "
                                 "filled from the storage class when left out",
                  .min_length = 1})
          .field("folder", &T::folder, {.description = "Clone destination folder"})
          .field("resourcePool", &T::resource_pool, {.description = "Default: the cluster root"})
          .field("numCpus", &T::num_cpus, infra::cpus())
          .field("memoryMiB", &T::memory_mib, infra::memoryMiB())
          .field("firmware", &T::firmware,
                 {.description = "bios, efi or efi-secure",
                  .required = true,
                  .enum_values = enums::kFirmware})
          .field("tpmEnabled", &T::tpm_enabled, infra::tpmEnabled())
          .field("disks", &T::disks,
                 {.description = "Disks; the first is the template's OS disk",
                  .required = true,
                  .min_items = 1,
                  .max_items = 32,
                  .map_keys = {"name"}})
          .field("network", &T::network,
                 {.description = "Network adapters",
                  .required = true,
                  .min_items = 1,
                  .max_items = 16,
                  .map_keys = {"name"}})
          .field("userData", &T::user_data, infra::userData())
          .field("desiredPowerState", &T::desired_power_state, infra::desiredPowerState())
          .field("restartRequestedAt", &T::restart_requested_at, infra::restartRequestedAt())
          .field("resizePolicy", &T::resize_policy, infra::resizePolicy())
          .field("createdBy", &T::created_by,
                 {.description = "Who asked for the VM, from its banlieue.io/created-by "
                                 "annotation"});
  return f;
}

const Fields<VSphereMachineStatus>& VSphereMachineStatus::describe() {
  using T = VSphereMachineStatus;
  static const Fields<T> f =
      Fields<T>("The VM as the vSphere provider last saw it")
          .field("initialization", &T::initialization, infra::initialization())
          .field("failureDomain", &T::failure_domain, infra::statusFailureDomain())
          .field("addresses", &T::addresses, infra::addresses())
          .field("vmRef", &T::vm_ref, {.description = "Managed object reference (vm-NNN)"})
          .field("instanceUuid", &T::instance_uuid,
                 {.description = "vSphere instance UUID; providerID is made from it"})
          .field("observedPowerState", &T::observed_power_state, infra::observedPowerState())
          .field("lastRestart", &T::last_restart, infra::lastRestart())
          .field("tpmAttached", &T::tpm_attached,
                 {.description = "The VM has a virtual TPM device"})
          .field("guestInstalled", &T::guest_installed,
                 {.description = "Sticky once the guest announced its installation"})
          .field("tpmEndorsementCertificates", &T::tpm_endorsement_certificates,
                 infra::tpmEndorsementCertificates())
          .field("operationToken", &T::operation_token, infra::operationToken())
          .field("conditions", &T::conditions, infra::conditions())
          .field("observedGeneration", &T::observed_generation, infra::observedGeneration());
  return f;
}

BANLIEUE_API_CODEC(VSphereMachine);
BANLIEUE_API_CODEC(VSphereMachineTemplate);

std::vector<KindInfo> vsphereKinds() {
  KindInfo machine{
      .group = kInfraGroup,
      .version = kInfraVersion,
      .kind = "VSphereMachine",
      .plural = "vspheremachines",
      .short_names = {"vsm"},
      .description = "A VM on vSphere (CAPI v1beta2 InfraMachine)",
      .columns = infra::machineColumns({{"Cluster", "string", ".spec.cluster", "", 1}}),
      .spec_schema = &schemaOf<VSphereMachineSpec>,
      .status_schema = &schemaOf<VSphereMachineStatus>,
      .spec_required = true,
      .crd_labels = infra::crdLabels()};
  KindInfo machine_template{.group = kInfraGroup,
                            .version = kInfraVersion,
                            .kind = "VSphereMachineTemplate",
                            .plural = "vspheremachinetemplates",
                            .short_names = {"vsmt"},
                            .description = "A VSphereMachine template for CAPI MachineDeployments",
                            .columns = {ageColumn()},
                            .spec_schema = &schemaOf<MachineTemplateSpec<VSphereMachineSpec>>,
                            .spec_required = true,
                            .crd_labels = infra::crdLabels()};
  KindInfo cluster = infraClusterKind("VSphereCluster", "vsphereclusters", "vsc", "vSphere");
  return {machine, machine_template, cluster};
}

}  // namespace banlieue::api
