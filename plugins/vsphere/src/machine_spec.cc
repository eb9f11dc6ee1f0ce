#include "plugins/vsphere/src/machine_spec.h"

#include <banlieue/sdk/json.h>
#include <banlieue/sdk/machine_inputs.h>

namespace banlieue::vsphere {
namespace {

namespace json = sdk::json;

constexpr int64_t kMaxDiskGiB = int64_t{62} * 1024;  // vSphere's 62 TiB virtual disk limit

[[noreturn]] void invalidMachineSpec(const std::string& field, const std::string& what) {
  throw sdk::Error(sdk::Code::kInvalidArgument, "InvalidSpec",
                   "VSphereMachine spec." + field + " " + what);
}

std::string required(const rapidjson::Value* spec, const char* field) {
  std::string value = json::stringOr(spec, field);
  if (value.empty()) invalidMachineSpec(field, "is required");
  return value;
}

int64_t ranged(const rapidjson::Value* spec, const char* field, int64_t min, int64_t max) {
  auto value = json::integer(spec, field);
  if (!value) invalidMachineSpec(field, "is required and must be an integer");
  if (*value < min || *value > max) {
    invalidMachineSpec(field, "must be within " + std::to_string(min) + ".." + std::to_string(max));
  }
  return *value;
}

}  // namespace

MachineSpec MachineSpec::parse(const rapidjson::Value* spec) {
  if (spec == nullptr || !spec->IsObject()) invalidMachineSpec("", "is missing");
  MachineSpec m;
  m.template_name = required(spec, "template");
  m.template_folder = json::stringOr(spec, "templateFolder");
  m.folder = json::stringOr(spec, "folder");
  m.resource_pool = json::stringOr(spec, "resourcePool");
  m.failure_domain = json::stringOr(spec, "failureDomain");
  m.num_cpus = ranged(spec, "numCpus", 1, 256);
  m.memory_mib = ranged(spec, "memoryMiB", 128, 4194304);
  if (const auto* disks = json::member(spec, "disks"); disks != nullptr) {
    if (!disks->IsArray() || disks->Size() > 32)
      invalidMachineSpec("disks", "must be a list of at most 32");
    for (rapidjson::SizeType i = 0; i < disks->Size(); ++i) {
      std::string at = "disks[" + std::to_string(i) + "]";
      auto size = json::integer(&(*disks)[i], "sizeGiB");
      if (!size || *size < 1 || *size > kMaxDiskGiB)
        invalidMachineSpec(at + ".sizeGiB", "must be 1..63488");
      m.disks.push_back({json::stringOr(&(*disks)[i], "name"), *size});
    }
  }
  const auto* network = json::member(spec, "network");
  if (network == nullptr || !network->IsArray() || network->Size() < 1 || network->Size() > 16) {
    invalidMachineSpec("network", "must list 1..16 NICs");
  }
  for (rapidjson::SizeType i = 0; i < network->Size(); ++i) {
    const rapidjson::Value* nic = &(*network)[i];
    std::string at = "network[" + std::to_string(i) + "]";
    MachineNic n;
    n.name = json::stringOr(nic, "name");
    n.port_group = json::stringOr(nic, "portGroup");
    if (n.port_group.empty()) invalidMachineSpec(at + ".portGroup", "is required");
    if (const auto* s = json::find(nic, "ipam.static"); s != nullptr && s->IsObject()) {
      if (json::find(nic, "ipam.pool") != nullptr)
        invalidMachineSpec(at + ".ipam", "sets both static and pool");
      StaticIp ip;
      ip.address = json::stringOr(s, "address");
      if (ip.address.empty()) invalidMachineSpec(at + ".ipam.static.address", "is required");
      auto prefix = json::integer(s, "prefix");
      if (!prefix || *prefix < 0 || *prefix > 128)
        invalidMachineSpec(at + ".ipam.static.prefix", "must be 0..128");
      ip.prefix = static_cast<int>(*prefix);
      ip.gateway = json::stringOr(s, "gateway");
      ip.domain = json::stringOr(s, "domain");
      if (const auto* ns = json::member(s, "nameservers"); ns != nullptr && ns->IsArray()) {
        for (const auto& v : ns->GetArray()) {
          if (v.IsString()) ip.nameservers.emplace_back(v.GetString());
        }
      }
      n.static_ip = std::move(ip);
    }
    m.network.push_back(std::move(n));
  }
  m.user_data = json::stringOr(spec, "userData");
  m.user_data_format = sdk::userDataFormat(spec);
  if (m.user_data_format != sdk::kCloudConfig && m.user_data_format != sdk::kIgnition) {
    throw sdk::Error(sdk::Code::kInvalidArgument, sdk::kUserDataFormatUnsupported,
                     "VSphereMachine user data format '" + m.user_data_format +
                         "' is neither cloud-config nor ignition");
  }
  m.desired_power_state = json::stringOr(spec, "desiredPowerState", "PoweredOn");
  if (m.desired_power_state != "PoweredOn" && m.desired_power_state != "PoweredOff" &&
      m.desired_power_state != "Suspended") {
    invalidMachineSpec("desiredPowerState", "must be PoweredOn, PoweredOff or Suspended");
  }
  // The place last: a spec that is also invalid says InvalidSpec, which no placement cures.
  m.datacenter = sdk::requirePlace(spec, "datacenter", "VSphereMachine");
  m.cluster = sdk::requirePlace(spec, "cluster", "VSphereMachine");
  m.datastore = sdk::requirePlace(spec, "datastore", "VSphereMachine");
  return m;
}

std::string base64(const std::string& bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    uint32_t n = (static_cast<unsigned char>(bytes[i]) << 16) |
                 (static_cast<unsigned char>(bytes[i + 1]) << 8) |
                 static_cast<unsigned char>(bytes[i + 2]);
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += kAlphabet[(n >> 6) & 63];
    out += kAlphabet[n & 63];
  }
  if (i < bytes.size()) {
    uint32_t n = static_cast<unsigned char>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) n |= static_cast<unsigned char>(bytes[i + 1]) << 8;
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += i + 1 < bytes.size() ? kAlphabet[(n >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::map<std::string, std::string> guestInfo(const MachineSpec& spec, const std::string& name) {
  std::map<std::string, std::string> info;
  info["guestinfo.network.hostname"] = name;
  std::string fqdn = name;
  if (!spec.network.empty() && spec.network.front().static_ip) {
    const StaticIp& ip = *spec.network.front().static_ip;
    info["guestinfo.network.ip"] = ip.address;
    info["guestinfo.network.prefix"] = std::to_string(ip.prefix);
    if (!ip.gateway.empty()) info["guestinfo.network.gateway"] = ip.gateway;
    if (!ip.nameservers.empty()) {
      std::string joined;
      for (const auto& ns : ip.nameservers) joined += (joined.empty() ? "" : ",") + ns;
      info["guestinfo.network.dns"] = joined;
    }
    if (!ip.domain.empty()) {
      info["guestinfo.network.domain"] = ip.domain;
      fqdn = name + "." + ip.domain;  // no trailing dot without a domain (a quirk not copied)
    }
  }
  // Where each guest agent looks: cloud-init's VMware datasource, or Ignition's vmware provider.
  if (!spec.user_data.empty() && spec.user_data_format == sdk::kIgnition) {
    info["guestinfo.ignition.config.data"] = base64(spec.user_data);
    info["guestinfo.ignition.config.data.encoding"] = "base64";
  } else if (!spec.user_data.empty()) {
    info["guestinfo.userdata"] = base64(spec.user_data);
    info["guestinfo.userdata.encoding"] = "base64";
  }
  info["guestinfo.metadata"] = base64("instance-id: " + name + "\nlocal-hostname: " + fqdn + "\n");
  info["guestinfo.metadata.encoding"] = "base64";
  return info;
}

}  // namespace banlieue::vsphere
