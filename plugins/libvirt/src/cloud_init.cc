#include "plugins/libvirt/src/cloud_init.h"

#include <cstdio>

namespace banlieue::libvirt {
namespace {

// A YAML double-quoted scalar (JSON string syntax is valid YAML), so no value can start a
// new key or document whatever characters it holds.
std::string quoted(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\x%02x", static_cast<unsigned>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string networkConfig(const MachineSpec& m) {
  std::string out = "version: 2\nethernets:\n";
  for (size_t i = 0; i < m.nics.size(); ++i) {
    const NicSpec& nic = m.nics[i];
    out += "  " + quoted("nic" + std::to_string(i)) + ":\n";
    out += "    match:\n      macaddress: " + quoted(nic.mac) + "\n";
    if (!nic.static_address) {
      out += "    dhcp4: true\n";
      continue;
    }
    const StaticAddress& st = *nic.static_address;
    out += "    dhcp4: false\n";
    out += "    addresses: [" + quoted(st.address + "/" + std::to_string(st.prefix)) + "]\n";
    if (!st.gateway.empty()) {
      out += "    routes:\n      - to: \"0.0.0.0/0\"\n        via: " + quoted(st.gateway) + "\n";
    }
    if (!st.nameservers.empty() || !st.domain.empty()) {
      out += "    nameservers:\n";
      if (!st.nameservers.empty()) {
        out += "      addresses: [";
        for (size_t j = 0; j < st.nameservers.size(); ++j) {
          out += (j ? ", " : "") + quoted(st.nameservers[j]);
        }
        out += "]\n";
      }
      if (!st.domain.empty()) out += "      search: [" + quoted(st.domain) + "]\n";
    }
  }
  return out;
}

}  // namespace

std::vector<IsoFile> noCloudFiles(const MachineSpec& m) {
  std::vector<IsoFile> files;
  std::string meta = "instance-id: " + quoted(m.uid) + "\nlocal-hostname: " + quoted(m.name) + "\n";
  files.push_back({"meta-data", meta});
  files.push_back({"user-data", m.user_data ? *m.user_data : std::string("#cloud-config\n{}\n")});
  bool any_static = false;
  for (const auto& nic : m.nics) any_static = any_static || nic.static_address.has_value();
  if (any_static) files.push_back({"network-config", networkConfig(m)});
  return files;
}

std::string buildSeedIso(const MachineSpec& machine) {
  return buildIso9660("cidata", noCloudFiles(machine));
}

}  // namespace banlieue::libvirt
