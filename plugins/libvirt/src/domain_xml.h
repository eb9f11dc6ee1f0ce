// libvirt XML the plugin writes (domains, volumes, snapshots) and the few facts it reads back
// (volume format, capabilities, a domain's volumes, a snapshot's time and memory). Pure functions,
// unit-tested without a connection.
#pragma once

#include "plugins/libvirt/src/machine_spec.h"

#include <optional>
#include <string>
#include <string_view>
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

// Facts read back from libvirt's XML, with an XML parser: an element counts only where libvirt
// puts it, never inside a comment, CDATA or another tool's <metadata>. XML that does not parse
// gives nothing (no types, false, nullopt, no volumes).

// Domain types the host offers for hvm guests of `arch`, from virConnectGetCapabilities XML
// (capabilities/guest[os_type=hvm]/arch[@name]/domain/@type), each once, in order.
std::vector<std::string> guestDomainTypes(std::string_view capabilities_xml, std::string_view arch);

// Whether the host CPU has hardware virtualisation a nested guest can use (a vmx or svm
// feature of capabilities/host/cpu).
bool hostCpuVirtualization(std::string_view capabilities_xml);

// What virConnectGetDomainCapabilities offers: a TPM (devices/tpm supported='yes'), EFI
// firmware (os/enum[@name=firmware] lists efi) and secure boot (os/loader/enum[@name=secure]
// lists yes).
struct DomainCapabilities {
  bool tpm = false;
  bool efi = false;
  bool secure_boot = false;
};
DomainCapabilities readDomainCapabilities(std::string_view domain_capabilities_xml);

// The format of a volume itself (volume/target/format/@type, not its backing store's), from
// virStorageVolGetXMLDesc; nullopt when it declares none.
std::optional<std::string> declaredVolumeFormat(std::string_view volume_xml);

// The pool volumes a domain's disks use (domain/devices/disk/source with pool and volume).
struct PoolVolume {
  std::string pool;
  std::string volume;
};
std::vector<PoolVolume> domainPoolVolumes(std::string_view domain_xml);

// What a resize changes, as a domain's XML has it: the vCPUs it runs (vcpu's `current`
// attribute, else its count), its memory in MiB (domain/memory in any of libvirt's units) and its
// disks' pool volumes. Read from the persistent definition it says what the next boot gets, from
// the live XML what the guest has now. nullopt when the XML has no domain element.
struct DomainHardware {
  std::string type;  // domain/@type: kvm, qemu, test
  int vcpus = 0;
  int64_t memory_mib = 0;
  std::vector<PoolVolume> volumes;
};
std::optional<DomainHardware> domainHardware(std::string_view domain_xml);

// The <disk> element of `domain_xml` whose source is `volume` of `pool`, serialized on its own
// (what virDomainAttachDeviceFlags takes); nullopt when the domain has no such disk.
std::optional<std::string> diskElementFor(std::string_view domain_xml, std::string_view pool,
                                          std::string_view volume);

// A snapshot to take (virDomainSnapshotCreateXML): its name and description only, so libvirt
// chooses what it holds from the domain's state: a shut-off domain's disks, or a running
// domain's disks and memory (a full system checkpoint), both as internal qcow2 snapshots.
std::string snapshotXml(std::string_view name, std::string_view description);

// What a snapshot's XML (virDomainSnapshotGetXMLDesc) says about it: when it was taken
// (domainsnapshot/creationTime, seconds since the epoch; -1 when absent) and whether it holds
// the guest's memory (memory/@snapshot internal or external; without that element, a snapshot
// taken in a running, paused or suspended state). nullopt when there is no domainsnapshot.
struct SnapshotFacts {
  int64_t creation_time = -1;
  bool memory = false;
};
std::optional<SnapshotFacts> snapshotFacts(std::string_view snapshot_xml);

}  // namespace banlieue::libvirt
