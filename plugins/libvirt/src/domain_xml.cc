#include "plugins/libvirt/src/domain_xml.h"

#include <pugixml.hpp>

#include <algorithm>
#include <sstream>

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
  // SeaBIOS writes to the serial port too, so `banlieue vm console` shows a BIOS domain's boot
  // (libvirt turns this into QEMU's graphics=off; OVMF writes to the serial port by itself).
  if (!efi) x += "    <bios useserial='yes'/>\n";
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

// libvirt's XML as a document; empty (so every lookup finds nothing) when it does not parse.
// Only elements count: comments, processing instructions and the DOCTYPE are not loaded, and
// text in CDATA stays text.
pugi::xml_document parse(std::string_view xml) {
  pugi::xml_document doc;
  if (!doc.load_buffer(xml.data(), xml.size(), pugi::parse_default, pugi::encoding_utf8)) {
    doc.reset();
  }
  return doc;
}

bool hasValue(const pugi::xml_node& parent, std::string_view value) {
  for (const auto& v : parent.children("value")) {
    if (v.text().as_string() == value) return true;
  }
  return false;
}

pugi::xml_node enumNamed(const pugi::xml_node& parent, std::string_view name) {
  for (const auto& e : parent.children("enum")) {
    if (e.attribute("name").as_string() == name) return e;
  }
  return {};
}

}  // namespace

std::vector<std::string> guestDomainTypes(std::string_view capabilities_xml,
                                          std::string_view arch) {
  std::vector<std::string> types;
  const pugi::xml_document doc = parse(capabilities_xml);
  for (const auto& guest : doc.child("capabilities").children("guest")) {
    if (std::string_view(guest.child("os_type").text().as_string()) != "hvm") continue;
    for (const auto& a : guest.children("arch")) {
      if (a.attribute("name").as_string() != arch) continue;
      for (const auto& domain : a.children("domain")) {
        std::string type = domain.attribute("type").as_string();
        if (!type.empty() && std::find(types.begin(), types.end(), type) == types.end()) {
          types.push_back(std::move(type));
        }
      }
    }
  }
  return types;
}

bool hostCpuVirtualization(std::string_view capabilities_xml) {
  const pugi::xml_document doc = parse(capabilities_xml);
  for (const auto& feature :
       doc.child("capabilities").child("host").child("cpu").children("feature")) {
    std::string_view name = feature.attribute("name").as_string();
    if (name == "vmx" || name == "svm") return true;
  }
  return false;
}

DomainCapabilities readDomainCapabilities(std::string_view domain_capabilities_xml) {
  const pugi::xml_document doc = parse(domain_capabilities_xml);
  const pugi::xml_node root = doc.child("domainCapabilities");
  const pugi::xml_node os = root.child("os");
  DomainCapabilities caps;
  caps.tpm = std::string_view(
                 root.child("devices").child("tpm").attribute("supported").as_string()) == "yes";
  caps.efi = hasValue(enumNamed(os, "firmware"), "efi");
  caps.secure_boot = hasValue(enumNamed(os.child("loader"), "secure"), "yes");
  return caps;
}

std::optional<std::string> declaredVolumeFormat(std::string_view volume_xml) {
  const pugi::xml_document doc = parse(volume_xml);
  const pugi::xml_attribute type =
      doc.child("volume").child("target").child("format").attribute("type");
  if (!type) return std::nullopt;
  return std::string(type.as_string());
}

std::vector<PoolVolume> domainPoolVolumes(std::string_view domain_xml) {
  std::vector<PoolVolume> volumes;
  const pugi::xml_document doc = parse(domain_xml);
  for (const auto& disk : doc.child("domain").child("devices").children("disk")) {
    const pugi::xml_node source = disk.child("source");
    const pugi::xml_attribute pool = source.attribute("pool");
    const pugi::xml_attribute volume = source.attribute("volume");
    if (pool && volume) volumes.push_back({pool.as_string(), volume.as_string()});
  }
  return volumes;
}

namespace {

// libvirt's memory units (formatdomain.html#memory-allocation): bytes up to TiB, decimal and
// binary; KiB when none is given.
std::optional<int64_t> bytesPerUnit(std::string_view unit) {
  static const std::pair<std::string_view, int64_t> kUnits[] = {
      {"b", 1},
      {"bytes", 1},
      {"KB", 1000},
      {"k", 1024},
      {"KiB", 1024},
      {"MB", 1000 * 1000},
      {"M", 1024 * 1024},
      {"MiB", 1024 * 1024},
      {"GB", 1000 * 1000 * 1000},
      {"G", 1024 * 1024 * 1024},
      {"GiB", 1024 * 1024 * 1024},
      {"TB", int64_t{1000} * 1000 * 1000 * 1000},
      {"T", int64_t{1024} * 1024 * 1024 * 1024},
      {"TiB", int64_t{1024} * 1024 * 1024 * 1024},
  };
  if (unit.empty()) return 1024;
  for (const auto& [name, bytes] : kUnits) {
    if (unit == name) return bytes;
  }
  return std::nullopt;
}

}  // namespace

std::optional<DomainHardware> domainHardware(std::string_view domain_xml) {
  const pugi::xml_document doc = parse(domain_xml);
  const pugi::xml_node domain = doc.child("domain");
  if (!domain) return std::nullopt;
  DomainHardware hw;
  hw.type = domain.attribute("type").as_string();
  const pugi::xml_node vcpu = domain.child("vcpu");
  hw.vcpus = vcpu.attribute("current") ? vcpu.attribute("current").as_int() : vcpu.text().as_int();
  const pugi::xml_node memory = domain.child("memory");
  if (auto per_unit = bytesPerUnit(memory.attribute("unit").as_string()); per_unit) {
    hw.memory_mib = memory.text().as_llong() * *per_unit / (1024LL * 1024);
  }
  hw.volumes = domainPoolVolumes(domain_xml);
  return hw;
}

std::optional<std::string> diskElementFor(std::string_view domain_xml, std::string_view pool,
                                          std::string_view volume) {
  const pugi::xml_document doc = parse(domain_xml);
  for (const auto& disk : doc.child("domain").child("devices").children("disk")) {
    const pugi::xml_node source = disk.child("source");
    if (pool == source.attribute("pool").as_string() &&
        volume == source.attribute("volume").as_string()) {
      std::ostringstream out;
      disk.print(out, "  ", pugi::format_default | pugi::format_no_declaration);
      return out.str();
    }
  }
  return std::nullopt;
}

std::string snapshotXml(std::string_view name, std::string_view description) {
  std::string x = "<domainsnapshot>\n  <name>" + xmlEscape(name) + "</name>\n";
  if (!description.empty()) x += "  <description>" + xmlEscape(description) + "</description>\n";
  return x + "</domainsnapshot>\n";
}

std::optional<SnapshotFacts> snapshotFacts(std::string_view snapshot_xml) {
  const pugi::xml_document doc = parse(snapshot_xml);
  const pugi::xml_node root = doc.child("domainsnapshot");
  if (!root) return std::nullopt;
  SnapshotFacts facts;
  if (const pugi::xml_node created = root.child("creationTime")) {
    facts.creation_time = created.text().as_llong(-1);
  }
  if (const pugi::xml_attribute memory = root.child("memory").attribute("snapshot")) {
    std::string_view location = memory.as_string();
    facts.memory = location == "internal" || location == "external";
  } else {
    std::string_view state = root.child("state").text().as_string();
    facts.memory = state == "running" || state == "blocked" || state == "paused" ||
                   state == "pmsuspended" || state == "shutdown";
  }
  return facts;
}

}  // namespace banlieue::libvirt
