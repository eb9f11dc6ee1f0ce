#include "plugins/libvirt/src/machine_spec.h"

#include <banlieue/sdk/machine_inputs.h>
#include <banlieue/sdk/status.h>

#include <cctype>
#include <cstdio>
#include <functional>
#include <set>

namespace banlieue::libvirt {
namespace {

namespace json = banlieue::sdk::json;
using banlieue::sdk::Code;
using banlieue::sdk::Error;

[[noreturn]] void invalid(const std::string& message) {
  throw Error(Code::kInvalidArgument, "InvalidSpec", "LibvirtMachine " + message);
}

bool isUuid(std::string_view s) {
  if (s.size() != 36) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? s[i] != '-' : std::isxdigit(static_cast<unsigned char>(s[i])) == 0) return false;
  }
  return true;
}

// 64-bit FNV-1a: stable across runs and builds (std::hash is not).
uint64_t fnv1a(std::string_view s, uint64_t seed = 0xcbf29ce484222325ull) {
  uint64_t h = seed;
  for (char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

bool isMac(std::string_view s) {
  if (s.size() != 17) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i % 3 == 2 ? s[i] != ':' : std::isxdigit(static_cast<unsigned char>(s[i])) == 0) {
      return false;
    }
  }
  return true;
}

bool isIpv4(std::string_view s) {
  int parts = 0;
  size_t i = 0;
  while (i <= s.size()) {
    size_t j = s.find('.', i);
    if (j == std::string_view::npos) j = s.size();
    std::string_view part = s.substr(i, j - i);
    if (part.empty() || part.size() > 3) return false;
    int value = 0;
    for (char c : part) {
      if (std::isdigit(static_cast<unsigned char>(c)) == 0) return false;
      value = value * 10 + (c - '0');
    }
    if (value > 255) return false;
    ++parts;
    i = j + 1;
    if (j == s.size()) break;
  }
  return parts == 4;
}

bool isDnsLabelish(std::string_view s) {
  if (s.empty() || s.size() > 63) return false;
  for (char c : s) {
    if (!(std::islower(static_cast<unsigned char>(c)) ||
          std::isdigit(static_cast<unsigned char>(c)) || c == '-')) {
      return false;
    }
  }
  return true;
}

StaticAddress parseStatic(const rapidjson::Value* st, const std::string& where) {
  StaticAddress out;
  out.address = json::stringOr(st, "address");
  if (!isIpv4(out.address)) invalid(where + ".address must be an IPv4 address");
  auto prefix = json::integer(st, "prefix");
  if (!prefix || *prefix < 1 || *prefix > 32) invalid(where + ".prefix must be 1..32");
  out.prefix = static_cast<int>(*prefix);
  out.gateway = json::stringOr(st, "gateway");
  if (!out.gateway.empty() && !isIpv4(out.gateway)) {
    invalid(where + ".gateway must be an IPv4 address");
  }
  if (const auto* ns = json::member(st, "nameservers"); ns != nullptr && ns->IsArray()) {
    for (const auto& n : ns->GetArray()) {
      if (!n.IsString() || !isIpv4(n.GetString())) {
        invalid(where + ".nameservers must be IPv4 addresses");
      }
      out.nameservers.emplace_back(n.GetString());
    }
  }
  out.domain = json::stringOr(st, "domain");
  return out;
}

}  // namespace

std::string powerStateName(PowerState state) {
  switch (state) {
    case PowerState::kPoweredOn: return "PoweredOn";
    case PowerState::kPoweredOff: return "PoweredOff";
    case PowerState::kSuspended: return "Suspended";
  }
  return "PoweredOn";
}

bool isSafeVolumeName(std::string_view name) {
  if (name.empty() || name.size() > 200 || name == "." || name == "..") return false;
  for (char c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) {
      return false;
    }
  }
  return true;
}

std::string domainUuidFor(std::string_view uid) {
  if (isUuid(uid)) {
    std::string lower(uid);
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return lower;
  }
  uint64_t a = fnv1a(uid);
  uint64_t b = fnv1a(uid, a ^ 0x9e3779b97f4a7c15ull);
  // Version 8 (custom) and the RFC 4122 variant bits.
  a = (a & ~0xF000ull) | 0x8000ull;
  b = (b & 0x3FFFFFFFFFFFFFFFull) | 0x8000000000000000ull;
  char out[37];
  std::snprintf(out, sizeof(out), "%08x-%04x-%04x-%04x-%012llx", static_cast<unsigned>(a >> 32),
                static_cast<unsigned>((a >> 16) & 0xFFFF), static_cast<unsigned>(a & 0xFFFF),
                static_cast<unsigned>(b >> 48),
                static_cast<unsigned long long>(b & 0xFFFFFFFFFFFFull));
  return out;
}

namespace {
constexpr std::string_view kProviderIdScheme = "libvirt://";
}  // namespace

std::string providerIdFor(std::string_view domain_uuid) {
  return std::string(kProviderIdScheme) + std::string(domain_uuid);
}

std::optional<std::string> domainUuidOfProviderId(std::string_view provider_id) {
  if (provider_id.substr(0, kProviderIdScheme.size()) != kProviderIdScheme) return std::nullopt;
  std::string_view uuid = provider_id.substr(kProviderIdScheme.size());
  if (!isUuid(uuid)) return std::nullopt;
  return domainUuidFor(uuid);  // lower case, as libvirt prints it
}

bool MachineSpec::needsSeed() const {
  if (user_data) return true;
  for (const auto& nic : nics) {
    if (nic.static_address) return true;
  }
  return false;
}

MachineSpec parseMachine(const rapidjson::Value& object) {
  MachineSpec m;
  m.name = json::stringOr(&object, "metadata.name");
  m.namespace_ = json::stringOr(&object, "metadata.namespace");
  m.uid = json::stringOr(&object, "metadata.uid");
  if (m.name.empty()) invalid("metadata.name is required");
  if (m.uid.empty()) invalid("metadata.uid is required");
  const rapidjson::Value* spec = json::member(&object, "spec");
  if (spec == nullptr || !spec->IsObject()) invalid("spec is required");

  m.domain_name = json::stringOr(spec, "domainName");
  if (m.domain_name.empty()) {
    m.domain_name = m.namespace_.empty() ? m.name : m.namespace_ + "-" + m.name;
  }
  // Volume names derive from the domain name, so it must be safe as a volume name prefix.
  if (!isSafeVolumeName(m.domain_name) || m.domain_name.size() > 160) {
    invalid("spec.domainName '" + m.domain_name + "' must be 1-160 characters of [A-Za-z0-9._-]");
  }
  m.domain_uuid = domainUuidFor(m.uid);
  sdk::requireCloudConfig(spec, "LibvirtMachine");

  m.boot_kind = json::stringOr(spec, "bootSource.kind", "backingVolume");
  if (m.boot_kind != "backingVolume" && m.boot_kind != "installMedia") {
    invalid("spec.bootSource.kind must be backingVolume or installMedia, not '" + m.boot_kind +
            "'");
  }
  m.boot_volume = json::stringOr(spec, "bootSource.volume");
  if (m.boot_volume.empty()) invalid("spec.bootSource.volume is required");

  auto vcpus = json::integer(spec, "vcpus").value_or(1);
  if (vcpus < 1 || vcpus > 256) invalid("spec.vcpus must be 1..256");
  m.vcpus = static_cast<int>(vcpus);
  auto memory = json::integer(spec, "memoryMiB");
  if (!memory || *memory < 16 || *memory > (int64_t{16} << 20)) {
    invalid("spec.memoryMiB must be 16..16777216");
  }
  m.memory_mib = *memory;

  std::string firmware = json::stringOr(spec, "firmware", "efi");
  for (char& c : firmware) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (firmware == "efisecure") firmware = "efi-secure";
  if (firmware != "bios" && firmware != "efi" && firmware != "efi-secure") {
    invalid("spec.firmware must be bios, efi or efi-secure");
  }
  m.firmware = firmware;
  m.machine_type = json::stringOr(spec, "machineType");
  m.tpm = json::boolean(spec, "tpmEnabled");

  const rapidjson::Value* disks = json::member(spec, "disks");
  if (disks == nullptr || !disks->IsArray() || disks->Empty() || disks->Size() > 32) {
    invalid("spec.disks must list 1..32 disks (the first is the root disk)");
  }
  std::set<std::string> disk_names;
  for (rapidjson::SizeType i = 0; i < disks->Size(); ++i) {
    const auto& d = (*disks)[i];
    std::string where = "spec.disks[" + std::to_string(i) + "]";
    DiskSpec disk;
    disk.name = json::stringOr(&d, "name");
    if (!isDnsLabelish(disk.name)) invalid(where + ".name must match [a-z0-9-]{1,63}");
    if (!disk_names.insert(disk.name).second) invalid(where + ".name '" + disk.name + "' repeats");
    auto size = json::integer(&d, "sizeGiB");
    if (!size || *size < 1 || *size > 65536) invalid(where + ".sizeGiB must be 1..65536");
    disk.size_gib = *size;
    disk.bus = json::stringOr(&d, "bus", "virtio");
    if (disk.bus != "virtio" && disk.bus != "scsi" && disk.bus != "sata") {
      invalid(where + ".bus must be virtio, scsi or sata");
    }
    m.disks.push_back(disk);
  }

  if (const auto* nets = json::member(spec, "network"); nets != nullptr) {
    if (!nets->IsArray() || nets->Size() > 16) invalid("spec.network must list 0..16 interfaces");
    for (rapidjson::SizeType i = 0; i < nets->Size(); ++i) {
      const auto& n = (*nets)[i];
      std::string where = "spec.network[" + std::to_string(i) + "]";
      NicSpec nic;
      nic.name = json::stringOr(&n, "name", "nic" + std::to_string(i));
      nic.source_kind = json::stringOr(&n, "source.kind", "network");
      if (nic.source_kind != "network" && nic.source_kind != "bridge") {
        invalid(where + ".source.kind must be network or bridge");
      }
      nic.source_name = json::stringOr(&n, "source.name");
      if (nic.source_name.empty()) invalid(where + ".source.name is required");
      nic.model = json::stringOr(&n, "model", "virtio");
      nic.mac = json::stringOr(&n, "macAddress");
      if (nic.mac.empty()) {
        // Locally administered range libvirt itself uses (52:54:00), stable per object and NIC.
        uint64_t h = fnv1a(m.uid + "/" + std::to_string(i));
        char mac[18];
        std::snprintf(mac, sizeof(mac), "52:54:00:%02x:%02x:%02x",
                      static_cast<unsigned>((h >> 16) & 0xff),
                      static_cast<unsigned>((h >> 8) & 0xff), static_cast<unsigned>(h & 0xff));
        nic.mac = mac;
      } else if (!isMac(nic.mac)) {
        invalid(where + ".macAddress must look like 52:54:00:12:34:56");
      }
      for (char& c : nic.mac) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (const auto* st = json::find(&n, "ipam.static"); st != nullptr && st->IsObject()) {
        if (json::find(&n, "ipam.pool") != nullptr) {
          invalid(where + ".ipam sets both static and pool");
        }
        nic.static_address = parseStatic(st, where + ".ipam.static");
      }
      m.nics.push_back(nic);
    }
  }

  if (const auto* ud = json::member(spec, "userData"); ud != nullptr && !ud->IsNull()) {
    if (!ud->IsString()) invalid("spec.userData must be the rendered user-data text");
    m.user_data = std::string(ud->GetString(), ud->GetStringLength());
  }

  std::string power = json::stringOr(spec, "desiredPowerState", "PoweredOn");
  if (power == "PoweredOn") {
    m.desired_power = PowerState::kPoweredOn;
  } else if (power == "PoweredOff") {
    m.desired_power = PowerState::kPoweredOff;
  } else if (power == "Suspended") {
    m.desired_power = PowerState::kSuspended;
  } else {
    invalid("spec.desiredPowerState must be PoweredOn, PoweredOff or Suspended");
  }

  if (const auto* annotations = json::find(&object, "metadata.annotations");
      annotations != nullptr && annotations->IsObject()) {
    auto it = annotations->FindMember("libvirt.banlieue.io/shutdown-timeout-seconds");
    if (it != annotations->MemberEnd()) {
      long seconds = -1;
      if (it->value.IsString()) {
        try {
          seconds = std::stol(it->value.GetString());
        } catch (...) {
          seconds = -1;
        }
      }
      if (seconds < 0 || seconds > 3600) {
        invalid("annotation libvirt.banlieue.io/shutdown-timeout-seconds must be 0..3600");
      }
      m.shutdown_timeout = std::chrono::seconds(seconds);
    }
  }
  // The place last: a spec that is also invalid says InvalidSpec, which no placement cures.
  m.pool = sdk::requirePlace(spec, "pool", "LibvirtMachine");
  return m;
}

}  // namespace banlieue::libvirt
