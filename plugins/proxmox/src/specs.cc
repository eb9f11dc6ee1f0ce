#include "plugins/proxmox/src/specs.h"

#include <banlieue/sdk/machine_inputs.h>

#include <stdexcept>

namespace banlieue::proxmox {
namespace {

namespace json = sdk::json;

std::string requiredString(const rapidjson::Value* object, const char* key, const std::string& at) {
  auto value = json::string(object, key);
  if (!value || value->empty()) throw std::invalid_argument(at + key + " is required");
  return std::string(*value);
}

std::optional<int> optionalInt(const rapidjson::Value* object, const char* key,
                               const std::string& at, int min, int max) {
  const rapidjson::Value* v = json::member(object, key);
  if (v == nullptr || v->IsNull()) return std::nullopt;
  int64_t n = 0;
  if (v->IsInt64()) {
    n = v->GetInt64();
  } else if (v->IsString()) {  // target maps are map<string,string>: "vlan": "20"
    try {
      size_t used = 0;
      n = std::stoll(v->GetString(), &used);
      if (used != v->GetStringLength()) throw std::invalid_argument("trailing");
    } catch (const std::exception&) {
      throw std::invalid_argument(at + key + " must be an integer, not '" + v->GetString() + "'");
    }
  } else {
    throw std::invalid_argument(at + key + " must be an integer");
  }
  if (n < min || n > max) {
    throw std::invalid_argument(at + key + " must be between " + std::to_string(min) + " and " +
                                std::to_string(max) + ", not " + std::to_string(n));
  }
  return static_cast<int>(n);
}

const rapidjson::Value* array(const rapidjson::Value* object, const char* key,
                              const std::string& at) {
  const rapidjson::Value* v = json::member(object, key);
  if (v == nullptr || v->IsNull()) return nullptr;
  if (!v->IsArray()) throw std::invalid_argument(at + key + " must be a list");
  return v;
}

}  // namespace

ProviderSpec ProviderSpec::parse(const rapidjson::Value* provider) {
  ProviderSpec spec;
  spec.name = json::stringOr(provider, "metadata.name");
  const rapidjson::Value* caps = json::find(provider, "spec.capabilities");
  if (const auto* list = array(caps, "storageClasses", "spec.capabilities.")) {
    for (rapidjson::SizeType i = 0; i < list->Size(); ++i) {
      const std::string at = "spec.capabilities.storageClasses[" + std::to_string(i) + "].";
      StorageClass sc;
      sc.name = requiredString(&(*list)[i], "name", at);
      sc.storage = requiredString(json::member(&(*list)[i], "target"), "storage", at + "target.");
      spec.storage_classes.push_back(std::move(sc));
    }
  }
  if (const auto* list = array(caps, "networkClasses", "spec.capabilities.")) {
    for (rapidjson::SizeType i = 0; i < list->Size(); ++i) {
      const std::string at = "spec.capabilities.networkClasses[" + std::to_string(i) + "].";
      NetworkClass nc;
      nc.name = requiredString(&(*list)[i], "name", at);
      const rapidjson::Value* target = json::member(&(*list)[i], "target");
      nc.bridge = requiredString(target, "bridge", at + "target.");
      nc.vlan = optionalInt(target, "vlan", at + "target.", 1, 4094);
      spec.network_classes.push_back(std::move(nc));
    }
  }
  if (const auto* list = array(caps, "features", "spec.capabilities.")) {
    for (const auto& f : list->GetArray()) {
      if (f.IsString()) spec.features.emplace_back(f.GetString());
    }
  }
  return spec;
}

MachineSpec MachineSpec::parse(const rapidjson::Value* spec) {
  if (spec == nullptr || !spec->IsObject()) throw std::invalid_argument("spec is required");
  const std::string at = "spec.";
  MachineSpec m;
  m.failure_domain = json::stringOr(spec, "failureDomain");
  m.template_vmid = optionalInt(spec, "templateVmid", at, 100, 999999999).value_or(0);
  if (m.template_vmid == 0) throw std::invalid_argument("spec.templateVmid is required");
  const std::string clone_mode = json::stringOr(spec, "cloneMode", "Full");
  if (clone_mode != "Full" && clone_mode != "Linked") {
    throw std::invalid_argument("spec.cloneMode must be Full or Linked, not '" + clone_mode + "'");
  }
  m.linked_clone = clone_mode == "Linked";
  m.storage = json::stringOr(spec, "storage");  // the disks' default; required below
  m.cores = optionalInt(spec, "cores", at, 1, 512).value_or(0);
  if (m.cores == 0) throw std::invalid_argument("spec.cores is required");
  m.memory_mib = optionalInt(spec, "memoryMiB", at, 16, 8 * 1024 * 1024).value_or(0);
  if (m.memory_mib == 0) throw std::invalid_argument("spec.memoryMiB is required");
  m.firmware = json::stringOr(spec, "firmware", "efi");
  if (m.firmware != "efi" && m.firmware != "bios") {
    throw std::invalid_argument("spec.firmware must be efi or bios, not '" + m.firmware + "'");
  }
  m.tpm_enabled = json::boolean(spec, "tpmEnabled");
  m.os_disk_size_gib = optionalInt(spec, "osDiskSizeGiB", at, 1, 65536);
  if (const auto* list = array(spec, "dataDisks", at)) {
    for (rapidjson::SizeType i = 0; i < list->Size(); ++i) {
      const std::string d = "spec.dataDisks[" + std::to_string(i) + "].";
      DataDisk disk;
      disk.name = requiredString(&(*list)[i], "name", d);
      disk.size_gib = optionalInt(&(*list)[i], "sizeGiB", d, 1, 65536).value_or(0);
      if (disk.size_gib == 0) throw std::invalid_argument(d + "sizeGiB is required");
      disk.storage = json::stringOr(&(*list)[i], "storage", m.storage);
      m.data_disks.push_back(std::move(disk));
    }
  }
  if (const auto* list = array(spec, "network", at)) {
    if (list->Size() > 16) throw std::invalid_argument("spec.network has more than 16 NICs");
    for (rapidjson::SizeType i = 0; i < list->Size(); ++i) {
      const std::string n = "spec.network[" + std::to_string(i) + "].";
      const rapidjson::Value* item = &(*list)[i];
      Nic nic;
      nic.name = requiredString(item, "name", n);
      nic.bridge = requiredString(item, "bridge", n);
      nic.vlan = optionalInt(item, "vlan", n, 1, 4094);
      nic.model = json::stringOr(item, "model", "virtio");
      if (nic.model != "virtio" && nic.model != "e1000" && nic.model != "rtl8139" &&
          nic.model != "vmxnet3") {
        throw std::invalid_argument(n + "model '" + nic.model + "' is not a PVE NIC model");
      }
      nic.mac_address = json::stringOr(item, "macAddress");
      if (const rapidjson::Value* st = json::find(item, "ipam.static"); st && st->IsObject()) {
        StaticIp ip;
        ip.address = requiredString(st, "address", n + "ipam.static.");
        ip.prefix = optionalInt(st, "prefix", n + "ipam.static.", 0, 128).value_or(-1);
        if (ip.prefix < 0) throw std::invalid_argument(n + "ipam.static.prefix is required");
        ip.gateway = json::stringOr(st, "gateway");
        if (const auto* ns = array(st, "nameservers", n + "ipam.static.")) {
          for (const auto& s : ns->GetArray()) {
            if (s.IsString()) ip.nameservers.emplace_back(s.GetString());
          }
        }
        nic.static_ip = std::move(ip);
      }
      m.network.push_back(std::move(nic));
    }
  }
  m.seed_iso_storage = json::stringOr(spec, "seedIsoStorage");
  m.user_data = json::stringOr(spec, "userData");
  sdk::requireCloudConfig(spec, "ProxmoxMachine");
  m.desired_power_state = json::stringOr(spec, "desiredPowerState", "PoweredOn");
  if (m.desired_power_state != "PoweredOn" && m.desired_power_state != "PoweredOff" &&
      m.desired_power_state != "Suspended") {
    throw std::invalid_argument(
        "spec.desiredPowerState must be PoweredOn, PoweredOff or Suspended, not '" +
        m.desired_power_state + "'");
  }
  // The place last: a spec that is also invalid says InvalidSpec, which no placement cures.
  m.node = sdk::requirePlace(spec, "node", "ProxmoxMachine");
  sdk::requirePlace(spec, "storage", "ProxmoxMachine");
  return m;
}

}  // namespace banlieue::proxmox
