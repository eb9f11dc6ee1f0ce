#include "host/api/libvirt.h"

#include "host/api/infra_cluster.h"
#include "host/api/infra_fields.h"
#include "host/api/machine_template_impl.h"

namespace banlieue::api {

const Fields<LibvirtBootSource>& LibvirtBootSource::describe() {
  using T = LibvirtBootSource;
  static const Fields<T> f =
      Fields<T>(
          "backingVolume: a qcow2 overlay over the image; installMedia: an empty disk and "
          "the image as a CD-ROM")
          .field("kind", &T::kind,
                 {.description = "How the image becomes the machine's OS disk",
                  .enum_values = {"backingVolume", "installMedia"},
                  .default_json = "\"backingVolume\""})
          .field("volume", &T::volume,
                 {.description = "Volume path or name in the pool",
                  .required = true,
                  .min_length = 1});
  return f;
}

const Fields<LibvirtDisk>& LibvirtDisk::describe() {
  using T = LibvirtDisk;
  static const Fields<T> f = Fields<T>("A disk of the domain")
                                 .field("name", &T::name, infra::diskName())
                                 .field("sizeGiB", &T::size_gib, infra::diskSize())
                                 .field("bus", &T::bus,
                                        {.description = "Disk bus the guest sees",
                                         .enum_values = {"virtio", "scsi", "sata"},
                                         .default_json = "\"virtio\""});
  return f;
}

const Fields<LibvirtNetworkSource>& LibvirtNetworkSource::describe() {
  using T = LibvirtNetworkSource;
  static const Fields<T> f =
      Fields<T>("What the interface is plugged into")
          .field("kind", &T::kind,
                 {.description = "A libvirt network, or a host bridge",
                  .enum_values = {"network", "bridge"},
                  .default_json = "\"network\""})
          .field(
              "name", &T::name,
              {.description = "Name of the network or bridge", .required = true, .min_length = 1});
  return f;
}

const Fields<LibvirtNetworkDevice>& LibvirtNetworkDevice::describe() {
  using T = LibvirtNetworkDevice;
  static const Fields<T> f =
      Fields<T>("A network interface of the domain")
          .field("name", &T::name, infra::interfaceName())
          .field("source", &T::source,
                 {.description = "Network or bridge the interface joins", .required = true})
          .field("model", &T::model, {.description = "NIC model; empty means virtio"})
          .field("macAddress", &T::mac_address, infra::macAddress())
          .field("ipam", &T::ipam, infra::ipam());
  return f;
}

const Fields<LibvirtMachineSpec>& LibvirtMachineSpec::describe() {
  using T = LibvirtMachineSpec;
  static const Fields<T> f =
      Fields<T>("A libvirt domain, fully resolved by the controller")
          .field("providerID", &T::provider_id,
                 infra::providerId("libvirt://<provider-name>/<domain-uuid>"))
          .field("failureDomain", &T::failure_domain, infra::failureDomain())
          .field("providerRef", &T::provider_ref, infra::providerRef())
          .field("pool", &T::pool,
                 {.description = "Storage pool for the machine's volumes; filled from the "
                                 "storage class when left out",
                  .min_length = 1})
          .field("domainName", &T::domain_name,
                 {.description = "Domain name; <namespace>-<name> of this object when left out, "
                                 "since libvirt names are flat",
                  .min_length = 1})
          .field("bootSource", &T::boot_source,
                 {.description = "The image the domain boots from", .required = true})
          .field("vcpus", &T::vcpus, infra::cpus())
          .field("memoryMiB", &T::memory_mib, infra::memoryMiB())
          .field("firmware", &T::firmware, infra::firmware())
          .field("machineType", &T::machine_type,
                 {.description = "q35, pc, ...; empty: libvirt's default"})
          .field("tpmEnabled", &T::tpm_enabled, {.description = "Attach an swtpm TPM 2.0"})
          .field("disks", &T::disks,
                 {.description = "Disks; the first is the OS disk",
                  .required = true,
                  .min_items = 1,
                  .max_items = 32,
                  .map_keys = {"name"}})
          .field("network", &T::network,
                 {.description = "Network interfaces", .max_items = 16, .map_keys = {"name"}})
          .field("userData", &T::user_data, infra::userData())
          .field("desiredPowerState", &T::desired_power_state, infra::desiredPowerState())
          .field("restartRequestedAt", &T::restart_requested_at, infra::restartRequestedAt())
          .field("resizePolicy", &T::resize_policy, infra::resizePolicy());
  return f;
}

const Fields<LibvirtMachineStatus>& LibvirtMachineStatus::describe() {
  using T = LibvirtMachineStatus;
  static const Fields<T> f =
      Fields<T>("The domain as the libvirt provider last saw it")
          .field("initialization", &T::initialization, infra::initialization())
          .field("failureDomain", &T::failure_domain, infra::statusFailureDomain())
          .field("addresses", &T::addresses, infra::addresses())
          .field("domainUuid", &T::domain_uuid, {.description = "libvirt's UUID of the domain"})
          .field("addressSource", &T::address_source,
                 {.description = "Where the addresses were learnt",
                  .enum_values = {"guestAgent", "dhcpLease", "arpTable"}})
          .field("guestInstalled", &T::guest_installed,
                 {.description = "The guest finished installing from install media"})
          .field("tpmEndorsementCertificates", &T::tpm_endorsement_certificates,
                 infra::tpmEndorsementCertificates())
          .field("observedPowerState", &T::observed_power_state, infra::observedPowerState())
          .field("lastRestart", &T::last_restart, infra::lastRestart())
          .field("operationToken", &T::operation_token, infra::operationToken())
          .field("conditions", &T::conditions, infra::conditions())
          .field("observedGeneration", &T::observed_generation, infra::observedGeneration());
  return f;
}

BANLIEUE_API_CODEC(LibvirtMachine);
BANLIEUE_API_CODEC(LibvirtMachineTemplate);

std::vector<KindInfo> libvirtKinds() {
  KindInfo machine{
      .group = kInfraGroup,
      .version = kInfraVersion,
      .kind = "LibvirtMachine",
      .plural = "libvirtmachines",
      .short_names = {"lvm"},
      .description = "A libvirt domain (CAPI v1beta2 InfraMachine)",
      .columns = infra::machineColumns({{"Domain", "string", ".spec.domainName", "", 1}}),
      .spec_schema = &schemaOf<LibvirtMachineSpec>,
      .status_schema = &schemaOf<LibvirtMachineStatus>,
      .spec_required = true,
      .crd_labels = infra::crdLabels()};
  KindInfo machine_template{.group = kInfraGroup,
                            .version = kInfraVersion,
                            .kind = "LibvirtMachineTemplate",
                            .plural = "libvirtmachinetemplates",
                            .short_names = {"lvmt"},
                            .description = "A LibvirtMachine template for CAPI MachineDeployments",
                            .columns = {ageColumn()},
                            .spec_schema = &schemaOf<MachineTemplateSpec<LibvirtMachineSpec>>,
                            .spec_required = true,
                            .crd_labels = infra::crdLabels()};
  return {machine, machine_template,
          infraClusterKind("LibvirtCluster", "libvirtclusters", "lvc", "libvirt")};
}

}  // namespace banlieue::api
