// libvirt XML the plugin writes (domains, volumes) and the few facts it reads back (volume
// format, capabilities). Pure string functions, unit-tested without a connection.
#pragma once

#include "plugins/libvirt/src/machine_spec.h"

#include <optional>
#include <string>
#include <vector>

namespace banlieue::libvirt {

std::string xmlEscape(std::string_view text);

// Where each disk of the domain comes from, resolved by the reconciler.
struct DomainPlan {
  std::string domain_type = "kvm";  // kvm | qemu | test (from the host's capabilities)
  std::string arch = "x86_64";
  std::string root_volume;                // in machine.pool
  std::vector<std::string> data_volumes;  // machine.disks[1..], same order
  std::optional<std::string> seed_volume;
  std::optional<std::string> install_media_volume;  // installMedia: the ISO in machine.pool
};

// The domain definition. Disks reference pool volumes (<source pool volume>) so the XML is the
// same on any host; NICs carry the machine's stable MACs; the guest agent channel is always
// present (addresses and shutdown go through it when the guest runs one).
std::string domainXml(const MachineSpec& machine, const DomainPlan& plan);

struct VolumeSpec {
  std::string name;
  uint64_t capacity_bytes = 0;
  std::string format = "qcow2";  // qcow2 | raw
  std::string backing_path;      // empty: no backing store
  std::string backing_format;    // declared, never probed (a probed format is a security hole)
};

std::string volumeXml(const VolumeSpec& volume);

// Value of attribute `attr` on the first <element ...> inside the first <section>...</section>
// (or anywhere when section is empty). Enough for libvirt's own canonical output.
std::optional<std::string> xmlAttribute(std::string_view xml, std::string_view section,
                                        std::string_view element, std::string_view attr);

// Text of the first <element>...</element> inside <section> (or anywhere).
std::optional<std::string> xmlText(std::string_view xml, std::string_view section,
                                   std::string_view element);

// Domain types the host offers for hvm guests of `arch`, from virConnectGetCapabilities XML.
std::vector<std::string> guestDomainTypes(std::string_view capabilities_xml, std::string_view arch);

}  // namespace banlieue::libvirt
