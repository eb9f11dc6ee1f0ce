#include "plugins/libvirt/src/domain_xml.h"

namespace banlieue::libvirt {

std::string xmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '\'': out += "&apos;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

namespace {

std::string attr(std::string_view name, std::string_view value) {
  return " " + std::string(name) + "='" + xmlEscape(value) + "'";
}

// Device names per bus: virtio disks are vdX, scsi and sata disks sdX.
std::string targetDev(const std::string& bus, int& vd, int& sd) {
  std::string prefix = bus == "virtio" ? "vd" : "sd";
  int& counter = bus == "virtio" ? vd : sd;
  int n = counter++;
  std::string suffix;
  do {
    suffix.insert(suffix.begin(), static_cast<char>('a' + n % 26));
    n = n / 26 - 1;
  } while (n >= 0);
  return prefix + suffix;
}

std::string volumeDisk(const std::string& device, const std::string& pool,
                       const std::string& volume, const std::string& format, const std::string& dev,
                       const std::string& bus, bool readonly, std::optional<int> boot_order) {
  std::string x = "    <disk type='volume'" + attr("device", device) + ">\n";
  x += "      <driver name='qemu'" + attr("type", format) + "/>\n";
  x += "      <source" + attr("pool", pool) + attr("volume", volume) + "/>\n";
  x += "      <target" + attr("dev", dev) + attr("bus", bus) + "/>\n";
  if (readonly) x += "      <readonly/>\n";
  if (boot_order) x += "      <boot order='" + std::to_string(*boot_order) + "'/>\n";
  x += "    </disk>\n";
  return x;
}

}  // namespace

std::string domainXml(const MachineSpec& m, const DomainPlan& plan) {
  std::string x = "<domain" + attr("type", plan.domain_type) + ">\n";
  x += "  <name>" + xmlEscape(m.domain_name) + "</name>\n";
  x += "  <uuid>" + xmlEscape(m.domain_uuid) + "</uuid>\n";
  x += "  <metadata>\n    <banlieue:machine xmlns:banlieue='https://banlieue.io/libvirt/1'" +
       attr("namespace", m.namespace_) + attr("name", m.name) + attr("uid", m.uid) + "/>\n";
  x += "  </metadata>\n";
  x += "  <memory unit='MiB'>" + std::to_string(m.memory_mib) + "</memory>\n";
  x += "  <vcpu placement='static'>" + std::to_string(m.vcpus) + "</vcpu>\n";
  bool efi = m.firmware != "bios";
  bool secure = m.firmware == "efi-secure";
  x += std::string("  <os") + (efi ? " firmware='efi'" : "") + ">\n";
  x += "    <type" + attr("arch", plan.arch) +
       (m.machine_type.empty() ? std::string() : attr("machine", m.machine_type)) + ">hvm</type>\n";
  if (secure) x += "    <loader secure='yes'/>\n";
  x += "  </os>\n";
  x += "  <features>\n    <acpi/>\n    <apic/>\n";
  if (secure) x += "    <smm state='on'/>\n";
  x += "  </features>\n";
  if (plan.domain_type == "kvm") x += "  <cpu mode='host-passthrough'/>\n";
  x += "  <clock offset='utc'/>\n";
  x += "  <on_poweroff>destroy</on_poweroff>\n  <on_reboot>restart</on_reboot>\n";
  x += "  <on_crash>destroy</on_crash>\n";
  x += "  <devices>\n";
  int vd = 0;
  int sd = 0;
  const DiskSpec& root = m.disks.front();
  x += volumeDisk("disk", m.pool, plan.root_volume, "qcow2", targetDev(root.bus, vd, sd), root.bus,
                  false, 1);
  bool scsi = root.bus == "scsi";
  for (size_t i = 1; i < m.disks.size() && i - 1 < plan.data_volumes.size(); ++i) {
    const DiskSpec& d = m.disks[i];
    scsi = scsi || d.bus == "scsi";
    x += volumeDisk("disk", m.pool, plan.data_volumes[i - 1], "qcow2", targetDev(d.bus, vd, sd),
                    d.bus, false, std::nullopt);
  }
  if (plan.install_media_volume) {
    x += volumeDisk("cdrom", m.pool, *plan.install_media_volume, "raw", targetDev("sata", vd, sd),
                    "sata", true, 2);
  }
  if (plan.seed_volume) {
    x += volumeDisk("cdrom", m.pool, *plan.seed_volume, "raw", targetDev("sata", vd, sd), "sata",
                    true, std::nullopt);
  }
  if (scsi) x += "    <controller type='scsi' model='virtio-scsi'/>\n";
  for (const auto& nic : m.nics) {
    x += "    <interface" + attr("type", nic.source_kind) + ">\n";
    x += "      <mac" + attr("address", nic.mac) + "/>\n";
    x += "      <source" +
         attr(nic.source_kind == "bridge" ? "bridge" : "network", nic.source_name) + "/>\n";
    x += "      <model" + attr("type", nic.model) + "/>\n";
    x += "    </interface>\n";
  }
  x += "    <serial type='pty'/>\n    <console type='pty'/>\n";
  x += "    <channel type='unix'>\n      <target type='virtio' name='org.qemu.guest_agent.0'/>\n";
  x += "    </channel>\n";
  if (m.tpm) {
    x += "    <tpm model='tpm-crb'>\n      <backend type='emulator' version='2.0'/>\n    </tpm>\n";
  }
  x += "  </devices>\n</domain>\n";
  return x;
}

std::string volumeXml(const VolumeSpec& v) {
  std::string x = "<volume>\n  <name>" + xmlEscape(v.name) + "</name>\n";
  x += "  <capacity unit='bytes'>" + std::to_string(v.capacity_bytes) + "</capacity>\n";
  x += "  <allocation unit='bytes'>0</allocation>\n";
  x += "  <target>\n    <format" + attr("type", v.format) + "/>\n  </target>\n";
  if (!v.backing_path.empty()) {
    x += "  <backingStore>\n    <path>" + xmlEscape(v.backing_path) + "</path>\n";
    x += "    <format" + attr("type", v.backing_format.empty() ? "raw" : v.backing_format) +
         "/>\n  </backingStore>\n";
  }
  x += "</volume>\n";
  return x;
}

namespace {

// The part of xml between <section ...> and </section>, or all of it.
std::string_view sectionOf(std::string_view xml, std::string_view section) {
  if (section.empty()) return xml;
  std::string open = "<" + std::string(section);
  size_t start = xml.find(open);
  while (start != std::string_view::npos) {
    char next = start + open.size() < xml.size() ? xml[start + open.size()] : '\0';
    if (next == '>' || next == ' ' || next == '/' || next == '\n') break;
    start = xml.find(open, start + 1);
  }
  if (start == std::string_view::npos) return {};
  size_t end = xml.find("</" + std::string(section) + ">", start);
  return xml.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
}

size_t findElement(std::string_view xml, std::string_view element, size_t from = 0) {
  std::string open = "<" + std::string(element);
  size_t at = xml.find(open, from);
  while (at != std::string_view::npos) {
    char next = at + open.size() < xml.size() ? xml[at + open.size()] : '\0';
    if (next == '>' || next == ' ' || next == '/' || next == '\n') return at;
    at = xml.find(open, at + 1);
  }
  return std::string_view::npos;
}

std::string unescape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '&') {
      out += s[i];
      continue;
    }
    size_t semi = s.find(';', i);
    std::string_view entity = s.substr(i, semi == std::string_view::npos ? 1 : semi - i + 1);
    if (entity == "&lt;") {
      out += '<';
    } else if (entity == "&gt;") {
      out += '>';
    } else if (entity == "&amp;") {
      out += '&';
    } else if (entity == "&apos;") {
      out += '\'';
    } else if (entity == "&quot;") {
      out += '"';
    } else {
      out += entity;
    }
    i += entity.size() - 1;
  }
  return out;
}

}  // namespace

std::optional<std::string> xmlAttribute(std::string_view xml, std::string_view section,
                                        std::string_view element, std::string_view name) {
  std::string_view scope = sectionOf(xml, section);
  size_t at = findElement(scope, element);
  if (at == std::string_view::npos) return std::nullopt;
  size_t end = scope.find('>', at);
  std::string_view tag =
      scope.substr(at, end == std::string_view::npos ? scope.size() - at : end - at);
  for (char quote : {'\'', '"'}) {
    std::string key = " " + std::string(name) + "=" + quote;
    size_t k = tag.find(key);
    if (k == std::string_view::npos) continue;
    size_t v = k + key.size();
    size_t close = tag.find(quote, v);
    if (close == std::string_view::npos) return std::nullopt;
    return unescape(tag.substr(v, close - v));
  }
  return std::nullopt;
}

std::optional<std::string> xmlText(std::string_view xml, std::string_view section,
                                   std::string_view element) {
  std::string_view scope = sectionOf(xml, section);
  size_t at = findElement(scope, element);
  if (at == std::string_view::npos) return std::nullopt;
  size_t start = scope.find('>', at);
  if (start == std::string_view::npos || scope[start - 1] == '/') return std::string();
  size_t end = scope.find("</" + std::string(element) + ">", start);
  if (end == std::string_view::npos) return std::nullopt;
  return unescape(scope.substr(start + 1, end - start - 1));
}

std::vector<std::string> guestDomainTypes(std::string_view caps, std::string_view arch) {
  std::vector<std::string> types;
  size_t guest = caps.find("<guest>");
  while (guest != std::string_view::npos) {
    size_t guest_end = caps.find("</guest>", guest);
    std::string_view g = caps.substr(
        guest, guest_end == std::string_view::npos ? std::string_view::npos : guest_end - guest);
    bool hvm = g.find("<os_type>hvm</os_type>") != std::string_view::npos;
    bool arch_match = xmlAttribute(g, "", "arch", "name") == std::string(arch);
    if (hvm && arch_match) {
      size_t at = findElement(g, "domain");
      while (at != std::string_view::npos) {
        if (auto type = xmlAttribute(g.substr(at), "", "domain", "type")) {
          bool seen = false;
          for (const auto& t : types) seen = seen || t == *type;
          if (!seen) types.push_back(*type);
        }
        at = findElement(g, "domain", at + 1);
      }
    }
    if (guest_end == std::string_view::npos) break;
    guest = caps.find("<guest>", guest_end);
  }
  return types;
}

}  // namespace banlieue::libvirt
