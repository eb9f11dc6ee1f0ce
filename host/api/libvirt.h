// infrastructure.banlieue.io/v1beta2 LibvirtMachine and LibvirtMachineTemplate (CAPI v1beta2
// InfraMachine contract). The libvirt plugin parses the same field names from the object JSON.
#pragma once

#include "host/api/common.h"
#include "host/api/machine_template.h"

namespace banlieue::api {

struct LibvirtBootSource {
  std::string kind = "backingVolume";
  std::string volume;
  static const Fields<LibvirtBootSource>& describe();
};

struct LibvirtDisk {
  std::string name;
  int32_t size_gib = 0;
  std::string bus = "virtio";
  static const Fields<LibvirtDisk>& describe();
};

struct LibvirtNetworkSource {
  std::string kind = "network";
  std::string name;
  static const Fields<LibvirtNetworkSource>& describe();
};

struct LibvirtNetworkDevice {
  std::string name;
  LibvirtNetworkSource source;
  std::string model;
  std::string mac_address;
  IpamSpec ipam;
  static const Fields<LibvirtNetworkDevice>& describe();
};

struct LibvirtMachineSpec {
  std::string provider_id;
  std::string failure_domain;
  std::optional<LocalObjectReference> provider_ref;  // absent on Cluster API copies until adopted
  std::string pool;
  std::string domain_name;
  LibvirtBootSource boot_source;
  int32_t vcpus = 0;
  int32_t memory_mib = 0;
  std::string firmware = "efi";
  std::string machine_type;
  bool tpm_enabled = false;
  std::vector<LibvirtDisk> disks;
  std::vector<LibvirtNetworkDevice> network;
  std::string user_data;
  std::string desired_power_state = "PoweredOn";
  std::string restart_requested_at;
  std::string resize_policy = "Restart";
  static const Fields<LibvirtMachineSpec>& describe();
};

struct LibvirtMachineStatus {
  std::optional<InitializationStatus> initialization;
  std::string failure_domain;
  std::vector<MachineAddress> addresses;
  std::string domain_uuid;
  std::string address_source;
  std::optional<bool> guest_installed;
  std::vector<std::string> tpm_endorsement_certificates;
  std::string observed_power_state;
  std::optional<RestartRecord> last_restart;
  std::string operation_token;
  std::vector<Condition> conditions;
  int64_t observed_generation = 0;
  static const Fields<LibvirtMachineStatus>& describe();
};

using LibvirtMachine = Resource<LibvirtMachineSpec, LibvirtMachineStatus>;
using LibvirtMachineTemplate = Resource<MachineTemplateSpec<LibvirtMachineSpec>, NoStatus>;

}  // namespace banlieue::api
