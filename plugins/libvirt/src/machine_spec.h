// LibvirtMachine as the plugin reads it (field names from the CRD, banlieue-spec §3.9), parsed
// and checked without I/O so validate() and reconcile() reject the same things the same way.
#pragma once

#include <banlieue/sdk/json.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace banlieue::libvirt {

inline constexpr std::string_view kMachineKind = "LibvirtMachine";

struct DiskSpec {
  std::string name;
  int64_t size_gib = 0;
  std::string bus = "virtio";  // virtio | scsi | sata
};

struct StaticAddress {
  std::string address;
  int prefix = 0;
  std::string gateway;
  std::vector<std::string> nameservers;
  std::string domain;
};

struct NicSpec {
  std::string name;
  std::string source_kind = "network";  // network | bridge
  std::string source_name;
  std::string model = "virtio";
  std::string mac;  // always set after parse: given, or derived from the uid and index
  std::optional<StaticAddress> static_address;
};

enum class PowerState { kPoweredOn, kPoweredOff, kSuspended };

std::string powerStateName(PowerState state);

struct MachineSpec {
  std::string name;  // metadata.name
  std::string namespace_;
  std::string uid;          // metadata.uid
  std::string domain_name;  // spec.domainName, default <namespace>-<name>
  std::string domain_uuid;  // the uid when it is a UUID, else one derived from it
  std::string pool;
  std::string boot_kind = "backingVolume";  // backingVolume | installMedia
  std::string boot_volume;
  int vcpus = 1;
  int64_t memory_mib = 0;
  std::string firmware = "efi";  // bios | efi | efi-secure
  std::string machine_type;      // empty: libvirt's default
  bool tpm = false;
  std::vector<DiskSpec> disks;  // disks[0] is the root disk
  std::vector<NicSpec> nics;
  std::optional<std::string> user_data;  // rendered cloud-init user-data
  PowerState desired_power = PowerState::kPoweredOn;
  // How long a graceful shutdown may take before the domain is destroyed. Annotation
  // libvirt.banlieue.io/shutdown-timeout-seconds (the CRD has no field for it), default 120 s.
  std::chrono::seconds shutdown_timeout{120};

  // Names of the volumes this machine owns in its pool, derived from the domain name so a
  // retried create and a delete after a lost status find them again.
  std::string rootVolumeName() const { return domain_name + "-root.qcow2"; }
  std::string dataVolumeName(const DiskSpec& disk) const {
    return domain_name + "-disk-" + disk.name + ".qcow2";
  }
  std::string seedVolumeName() const { return domain_name + "-cidata.iso"; }
  bool needsSeed() const;
};

// Parses and validates spec + metadata of a LibvirtMachine object. Throws sdk::Error with
// INVALID_ARGUMENT, reason InvalidSpec, and a message naming the field.
MachineSpec parseMachine(const rapidjson::Value& object);

// Libvirt volume names the plugin creates: [A-Za-z0-9._-], at most 200 characters, not . or ..
bool isSafeVolumeName(std::string_view name);

// A UUID string (8-4-4-4-12 hex) for the domain: the object's uid when it is one, else a
// name-based one, so the same object always maps to the same domain UUID.
std::string domainUuidFor(std::string_view uid);

// The providerID of the machine whose domain has this UUID ("libvirt://<uuid>"): reconcile
// reports it, and the runtime hands it back in spec.providerID to name the backend VM.
std::string providerIdFor(std::string_view domain_uuid);

// The domain UUID a providerID names; nullopt when it is not "libvirt://<uuid>".
std::optional<std::string> domainUuidOfProviderId(std::string_view provider_id);

}  // namespace banlieue::libvirt
