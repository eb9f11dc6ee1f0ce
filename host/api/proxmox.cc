#include "host/api/proxmox.h"

#include "host/api/infra_cluster.h"
#include "host/api/infra_fields.h"
#include "host/api/machine_template_impl.h"

namespace banlieue::api {

const Fields<ProxmoxDisk>& ProxmoxDisk::describe() {
  using T = ProxmoxDisk;
  static const Fields<T> f =
      Fields<T>("A blank data disk")
          .field("name", &T::name, infra::diskName())
          .field("sizeGiB", &T::size_gib, infra::diskSize())
          .field("storage", &T::storage, {.description = "Default: spec.storage"});
  return f;
}

const Fields<ProxmoxNetworkDevice>& ProxmoxNetworkDevice::describe() {
  using T = ProxmoxNetworkDevice;
  static const Fields<T> f =
      Fields<T>("A network interface of the guest")
          .field("name", &T::name, infra::interfaceName())
          .field("bridge", &T::bridge,
                 {.description = "Node bridge the interface joins, e.g. vmbr0",
                  .required = true,
                  .min_length = 1})
          .field("vlan", &T::vlan,
                 {.description = "VLAN tag; untagged when absent", .minimum = 1, .maximum = 4094})
          .field("model", &T::model,
                 {.description = "NIC model the guest sees",
                  .enum_values = {"virtio", "e1000", "rtl8139", "vmxnet3"},
                  .default_json = "\"virtio\""})
          .field("macAddress", &T::mac_address, infra::macAddress())
          .field("ipam", &T::ipam, infra::ipam());
  return f;
}

const Fields<ProxmoxMachineSpec>& ProxmoxMachineSpec::describe() {
  using T = ProxmoxMachineSpec;
  static const Fields<T> f =
      Fields<T>("A Proxmox VE guest, fully resolved by the controller")
          .field("providerID", &T::provider_id, infra::providerId("proxmox://<node>/<vmid>"))
          .field("failureDomain", &T::failure_domain, infra::failureDomain())
          .field("providerRef", &T::provider_ref, infra::providerRef())
          .field("node", &T::node,
                 {.description = "PVE node (the failure domain's raw node); filled from the "
                                 "failure domain when left out",
                  .min_length = 1})
          .field("templateVmid", &T::template_vmid,
                 {.description = "VMID of the template to clone",
                  .required = true,
                  .minimum = 100,
                  .maximum = 999999999})
          .field("cloneMode", &T::clone_mode,
                 {.description = "Full copies the template's disks onto storage; Linked shares "
                                 "them copy-on-write on the template's own storage",
                  .enum_values = {"Full", "Linked"},
                  .default_json = "\"Full\""})
          .field("storage", &T::storage,
                 {.description = "PVE storage for the clone's disks; filled from the storage "
                                 "class when left out",
                  .min_length = 1})
          .field("cores", &T::cores, infra::cpus())
          .field("memoryMiB", &T::memory_mib, infra::memoryMiB())
          .field("firmware", &T::firmware, infra::firmware())
          .field("tpmEnabled", &T::tpm_enabled, infra::tpmEnabled())
          .field("osDiskSizeGiB", &T::os_disk_size_gib,
                 {.description = "Grow the template's OS disk to this size in GiB",
                  .minimum = 1,
                  .maximum = 65536})
          .field("dataDisks", &T::data_disks,
                 {.description = "Blank disks added after the OS disk",
                  .max_items = 31,
                  .map_keys = {"name"}})
          .field("network", &T::network,
                 {.description = "Network interfaces", .max_items = 16, .map_keys = {"name"}})
          .field("seedIsoStorage", &T::seed_iso_storage,
                 {.description = "Storage for the cloud-init seed ISO"})
          .field("userData", &T::user_data, infra::userData())
          .field("desiredPowerState", &T::desired_power_state, infra::desiredPowerState())
          .field("restartRequestedAt", &T::restart_requested_at, infra::restartRequestedAt())
          .field("resizePolicy", &T::resize_policy, infra::resizePolicy());
  return f;
}

const Fields<ProxmoxMachineStatus>& ProxmoxMachineStatus::describe() {
  using T = ProxmoxMachineStatus;
  static const Fields<T> f =
      Fields<T>("The guest as the Proxmox provider last saw it")
          .field("initialization", &T::initialization, infra::initialization())
          .field("failureDomain", &T::failure_domain, infra::statusFailureDomain())
          .field("addresses", &T::addresses, infra::addresses())
          .field("vmid", &T::vmid, {.description = "PVE VMID of the guest"})
          .field("node", &T::node, {.description = "PVE node the guest runs on"})
          .field("observedPowerState", &T::observed_power_state, infra::observedPowerState())
          .field("lastRestart", &T::last_restart, infra::lastRestart())
          .field("operationToken", &T::operation_token, infra::operationToken())
          .field("conditions", &T::conditions, infra::conditions())
          .field("observedGeneration", &T::observed_generation, infra::observedGeneration());
  return f;
}

BANLIEUE_API_CODEC(ProxmoxMachine);
BANLIEUE_API_CODEC(ProxmoxMachineTemplate);

std::vector<KindInfo> proxmoxKinds() {
  KindInfo machine{.group = kInfraGroup,
                   .version = kInfraVersion,
                   .kind = "ProxmoxMachine",
                   .plural = "proxmoxmachines",
                   .short_names = {"pxm"},
                   .description = "A Proxmox VE guest (CAPI v1beta2 InfraMachine)",
                   .columns = infra::machineColumns({{"Node", "string", ".spec.node", "", 1}}),
                   .spec_schema = &schemaOf<ProxmoxMachineSpec>,
                   .status_schema = &schemaOf<ProxmoxMachineStatus>,
                   .spec_required = true,
                   .crd_labels = infra::crdLabels()};
  KindInfo machine_template{.group = kInfraGroup,
                            .version = kInfraVersion,
                            .kind = "ProxmoxMachineTemplate",
                            .plural = "proxmoxmachinetemplates",
                            .short_names = {"pxmt"},
                            .description = "A ProxmoxMachine template for CAPI MachineDeployments",
                            .columns = {ageColumn()},
                            .spec_schema = &schemaOf<MachineTemplateSpec<ProxmoxMachineSpec>>,
                            .spec_required = true,
                            .crd_labels = infra::crdLabels()};
  return {machine, machine_template,
          infraClusterKind("ProxmoxCluster", "proxmoxclusters", "pxc", "Proxmox VE")};
}

}  // namespace banlieue::api
