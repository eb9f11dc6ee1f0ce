// The Provider and ProxmoxMachine fields the plugin reads, parsed from the JSON the host sends
// (field names as in deploy/crds; plugins never include host code). Parsing throws
// std::invalid_argument naming the field that is wrong.
#pragma once

#include <banlieue/sdk/json.h>

#include <optional>
#include <string>
#include <vector>

namespace banlieue::proxmox {

struct StorageClass {
  std::string name;     // the Provider's class name
  std::string storage;  // target.storage: a PVE storage id
};

struct NetworkClass {
  std::string name;
  std::string bridge;  // target.bridge
  std::optional<int> vlan;
};

struct ProviderSpec {
  std::string name;
  std::vector<StorageClass> storage_classes;
  std::vector<NetworkClass> network_classes;
  std::vector<std::string> features;

  static ProviderSpec parse(const rapidjson::Value* provider);
};

struct StaticIp {
  std::string address;
  int prefix = 0;
  std::string gateway;
  std::vector<std::string> nameservers;
};

struct Nic {
  std::string name;
  std::string bridge;
  std::optional<int> vlan;
  std::string model = "virtio";
  std::string mac_address;
  std::optional<StaticIp> static_ip;
};

struct DataDisk {
  std::string name;
  int size_gib = 0;
  std::string storage;
};

struct MachineSpec {
  std::string failure_domain;
  std::string node;
  int template_vmid = 0;
  // A linked clone shares the template's disks copy-on-write on the template's storage
  // (`storage` then only takes the disks the plugin adds); a full clone copies them onto it.
  bool linked_clone = false;
  std::string storage;
  int cores = 1;
  int memory_mib = 0;
  std::string firmware = "efi";
  bool tpm_enabled = false;
  std::optional<int> os_disk_size_gib;
  std::vector<DataDisk> data_disks;
  std::vector<Nic> network;
  std::string seed_iso_storage;
  std::string user_data;
  std::string desired_power_state = "PoweredOn";

  static MachineSpec parse(const rapidjson::Value* spec);
};

}  // namespace banlieue::proxmox
