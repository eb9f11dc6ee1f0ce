// VSphereMachine.spec as the controller resolved it (banlieue-spec.md 3.7), and the
// guestinfo extraConfig a clone carries (4.4.3), computed without I/O.
#pragma once

#include <rapidjson/document.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace banlieue::vsphere {

struct MachineDisk {
  std::string name;
  int64_t size_gib = 0;
};

struct StaticIp {
  std::string address;
  int prefix = 0;
  std::string gateway;
  std::vector<std::string> nameservers;
  std::string domain;
};

struct MachineNic {
  std::string name;
  std::string port_group;
  std::optional<StaticIp> static_ip;
};

struct MachineSpec {
  std::string template_name;
  std::string template_folder;
  std::string datacenter;
  std::string cluster;
  std::string datastore;
  std::string folder;
  std::string resource_pool;
  std::string failure_domain;
  int64_t num_cpus = 0;
  int64_t memory_mib = 0;
  std::vector<MachineDisk> disks;
  std::vector<MachineNic> network;
  std::string user_data;
  std::string user_data_format;                   // cloud-config or ignition
  std::string desired_power_state = "PoweredOn";  // PoweredOn | PoweredOff | Suspended

  // Throws sdk::Error(INVALID_ARGUMENT, "InvalidSpec") naming the first bad field.
  static MachineSpec parse(const rapidjson::Value* spec);
};

// The guestinfo keys and values the VM must carry (hostname, static network, userdata,
// metadata); `name` is the VSphereMachine's name.
std::map<std::string, std::string> guestInfo(const MachineSpec& spec, const std::string& name);

std::string base64(const std::string& bytes);

}  // namespace banlieue::vsphere
