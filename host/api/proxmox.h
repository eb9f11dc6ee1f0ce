// infrastructure.banlieue.io/v1beta2 ProxmoxMachine and ProxmoxMachineTemplate (CAPI v1beta2
// InfraMachine contract).
#pragma once

#include "host/api/common.h"
#include "host/api/machine_template.h"

namespace banlieue::api {

struct ProxmoxDisk {
  std::string name;
  int32_t size_gib = 0;
  std::string storage;
  static const Fields<ProxmoxDisk>& describe();
};

struct ProxmoxNetworkDevice {
  std::string name;
  std::string bridge;
  std::optional<int32_t> vlan;
  std::string model = "virtio";
  std::string mac_address;
  IpamSpec ipam;
  static const Fields<ProxmoxNetworkDevice>& describe();
};

struct ProxmoxMachineSpec {
  std::string provider_id;
  std::string failure_domain;
  std::optional<LocalObjectReference> provider_ref;  // absent on Cluster API copies until adopted
  std::string node;
  int32_t template_vmid = 0;
  std::string clone_mode = "Full";
  std::string storage;
  int32_t cores = 0;
  int32_t memory_mib = 0;
  std::string firmware = "efi";
  bool tpm_enabled = false;
  std::optional<int32_t> os_disk_size_gib;
  std::vector<ProxmoxDisk> data_disks;
  std::vector<ProxmoxNetworkDevice> network;
  std::string seed_iso_storage;
  std::string user_data;
  std::string desired_power_state = "PoweredOn";
  std::string restart_requested_at;
  std::string resize_policy = "Restart";
  static const Fields<ProxmoxMachineSpec>& describe();
};

struct ProxmoxMachineStatus {
  std::optional<InitializationStatus> initialization;
  std::string failure_domain;
  std::vector<MachineAddress> addresses;
  std::optional<int32_t> vmid;
  std::string node;
  std::string observed_power_state;
  std::optional<RestartRecord> last_restart;
  std::string operation_token;
  std::vector<Condition> conditions;
  int64_t observed_generation = 0;
  static const Fields<ProxmoxMachineStatus>& describe();
};

using ProxmoxMachine = Resource<ProxmoxMachineSpec, ProxmoxMachineStatus>;
using ProxmoxMachineTemplate = Resource<MachineTemplateSpec<ProxmoxMachineSpec>, NoStatus>;

}  // namespace banlieue::api
