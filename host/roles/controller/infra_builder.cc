#include "host/roles/controller/infra_builder.h"

#include "host/api/codec.h"
#include "host/api/libvirt.h"
#include "host/api/proxmox.h"
#include "host/api/vsphere.h"
#include "host/common/fnv_hash.h"

#include <banlieue/sdk/json.h>

#include <cctype>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <string_view>

namespace banlieue::controller {
namespace {

namespace json = sdk::json;
using Alloc = rapidjson::Document::AllocatorType;

Status buildError(const std::string& message) {
  return error(Code::kInvalidArgument, "InfraBuildFailed", message);
}

std::string rawOf(const Placement& placement, const char* key) {
  auto it = placement.failure_domain_raw.find(key);
  return it == placement.failure_domain_raw.end() ? std::string() : it->second;
}

int32_t cpusOf(const InfraBuildInput& in) {
  const auto& override = in.vm->spec.hardware_override;
  return override && override->cpus ? *override->cpus : in.vm_class->spec.hardware.cpus;
}

int32_t memoryOf(const InfraBuildInput& in) {
  const auto& override = in.vm->spec.hardware_override;
  return override && override->memory_mib ? *override->memory_mib
                                          : in.vm_class->spec.hardware.memory_mib;
}

int32_t diskSize(const InfraBuildInput& in, const api::ClassDisk& disk) {
  if (in.vm->spec.hardware_override) {
    for (const auto& o : in.vm->spec.hardware_override->disk_overrides)
      if (o.name == disk.name) return o.size_gib;
  }
  return disk.size_gib;
}

std::string resolvedStorage(const InfraBuildInput& in, size_t index) {
  const auto& storage = in.placement->resolved_storage;
  return index < storage.size() ? storage[index].backend_id : std::string();
}

std::string resolvedNetwork(const InfraBuildInput& in, size_t index) {
  const auto& networks = in.placement->resolved_networks;
  return index < networks.size() ? networks[index].backend_id : std::string();
}

std::vector<api::ClassInterface> interfacesOf(const InfraBuildInput& in) {
  return in.vm_class->spec.network ? in.vm_class->spec.network->interfaces
                                   : std::vector<api::ClassInterface>{};
}

// The Provider's network class entry effective in the placement's zone.
const api::NetworkClassCapability* networkCapability(const InfraBuildInput& in,
                                                     const std::string& name) {
  if (!in.provider->spec.capabilities) return nullptr;
  for (const auto& c : in.provider->spec.capabilities->network_classes)
    if (c.name == name) return &c;
  return nullptr;
}

api::StringMap zoneTarget(const api::NetworkClassCapability& capability,
                          const std::string& datacenter, const std::string& cluster) {
  for (const auto& zone : capability.per_zone)
    if (zone.datacenter == datacenter && zone.cluster == cluster) return zone.target;
  return capability.target;
}

std::optional<api::Subnet> zoneSubnet(const api::NetworkClassCapability& capability,
                                      const std::string& datacenter, const std::string& cluster) {
  for (const auto& zone : capability.per_zone_subnet)
    if (zone.datacenter == datacenter && zone.cluster == cluster) return zone.subnet;
  return capability.subnet;
}

// Per-interface IPAM: the VM's static override, completed from the zone's subnet; otherwise the
// class's pool; otherwise DHCP.
StatusOr<api::IpamSpec> ipamFor(const InfraBuildInput& in, const api::ClassInterface& nic) {
  if (nic.ipam.static_ && nic.ipam.pool)
    return buildError("VMClass " + in.vm_class->metadata.name + " interface " + nic.name +
                      ": ipam sets both static and pool");
  api::IpamSpec ipam;
  for (const auto& override : in.vm->spec.network_overrides) {
    if (override.name != nic.name) continue;
    api::StaticIpamConfig config = override.static_;
    if (const auto* capability = networkCapability(in, nic.network_class)) {
      if (auto subnet = zoneSubnet(*capability, rawOf(*in.placement, "datacenter"),
                                   rawOf(*in.placement, "cluster"))) {
        if (config.gateway.empty()) config.gateway = subnet->gateway;
        if (config.nameservers.empty()) config.nameservers = subnet->nameservers;
        if (config.domain.empty()) config.domain = subnet->domain;
      }
    }
    ipam.static_ = config;
    return ipam;
  }
  if (nic.ipam.pool) ipam.pool = nic.ipam.pool;
  return ipam;
}

const api::ImageProviderStatus* imageRow(const InfraBuildInput& in) {
  for (const auto& row : in.image->status.per_provider)
    if (row.provider_name == in.provider->metadata.name &&
        row.provider_namespace == in.provider->metadata.namespace_)
      return &row;
  return nullptr;
}

// The zone row the VM boots from: its failure domain's row for the pool of its first disk
// (per-target imports, docs/adr/0053), else a Ready row of its failure domain.
const api::ImageZone* imageZone(const InfraBuildInput& in) {
  const auto* row = imageRow(in);
  if (row == nullptr) return nullptr;
  return imageZoneFor(*row, in.placement->failure_domain, resolvedStorage(in, 0));
}

// The backend reference of the image for this Provider and zone: the zone's entry (per-zone
// and per-target imports) wins over the row's (a template the backend resolves everywhere).
StatusOr<std::string> imageRef(const InfraBuildInput& in) {
  if (const auto* zone = imageZone(in); zone != nullptr && !zone->resolved_ref.empty())
    return zone->resolved_ref;
  if (const auto* row = imageRow(in); row != nullptr && !row->resolved_ref.empty())
    return row->resolved_ref;
  return buildError("VMImage " + in.image->metadata.name + " has no resolvedRef for provider " +
                    in.provider->metadata.name + " (zone " + in.placement->failure_domain + ")");
}

bool installsImmediately(const api::VMImage& image) {
  return !image.spec.template_ || image.spec.template_->install_mode == "immediate";
}

// A restart request travels to the machine only until a machine has answered it (the VM's
// status.lastRestart, mirrored from the machine): a machine made later, after a swap, must not
// restart for a request an earlier machine answered.
std::string unansweredRestart(const api::VirtualMachine& vm) {
  const std::string& request = vm.spec.restart_requested_at;
  const auto& answered = vm.status.last_restart;
  if (request.empty() || (answered && answered->requested_at == request)) return {};
  return request;
}

template <class Spec>
void fillCommon(const InfraBuildInput& in, Spec& spec) {
  spec.failure_domain = in.placement->failure_domain;
  spec.provider_ref = api::LocalObjectReference{.name = in.provider->metadata.name};
  spec.desired_power_state = in.vm->spec.desired_power_state;
  spec.restart_requested_at = unansweredRestart(*in.vm);
  spec.resize_policy = in.vm->spec.resize_policy;
}

// Encodes a typed machine and keeps apiVersion, kind and spec (the metadata is set by the caller,
// the status belongs to the provider runtime).
template <class Machine>
rapidjson::Document encodeMachine(const Machine& machine) {
  auto document = json::parse(api::toJson(machine), "infra object");
  document.RemoveMember("status");
  document.RemoveMember("metadata");
  return document;
}

StatusOr<rapidjson::Document> buildLibvirt(const InfraBuildInput& in) {
  api::LibvirtMachine m;
  fillCommon(in, m.spec);
  auto ref = imageRef(in);
  if (!ref.ok()) return ref.status();
  m.spec.pool = resolvedStorage(in, 0);
  // libvirt domain names are flat per host; the CRD documents <namespace>-<vm>.
  m.spec.domain_name = in.vm->metadata.namespace_ + "-" + in.vm->metadata.name;
  m.spec.boot_source.kind = installsImmediately(*in.image) ? "backingVolume" : "installMedia";
  m.spec.boot_source.volume = *ref;
  m.spec.vcpus = cpusOf(in);
  m.spec.memory_mib = memoryOf(in);
  m.spec.firmware = in.vm_class->spec.firmware;
  m.spec.tpm_enabled = in.vm_class->spec.tpm_enabled;
  for (const auto& disk : in.vm_class->spec.hardware.disks)
    m.spec.disks.push_back({.name = disk.name, .size_gib = diskSize(in, disk)});
  auto nics = interfacesOf(in);
  for (size_t i = 0; i < nics.size(); ++i) {
    auto ipam = ipamFor(in, nics[i]);
    if (!ipam.ok()) return ipam.status();
    api::LibvirtNetworkDevice device;
    device.name = nics[i].name;
    device.source.name = resolvedNetwork(in, i);
    // The mapping's target key says which kind of libvirt source the backend id names.
    if (const auto* capability = networkCapability(in, nics[i].network_class)) {
      auto target = zoneTarget(*capability, rawOf(*in.placement, "datacenter"),
                               rawOf(*in.placement, "cluster"));
      if (target.count("bridge") > 0 && target.count("network") == 0) device.source.kind = "bridge";
    }
    device.ipam = std::move(*ipam);
    m.spec.network.push_back(std::move(device));
  }
  m.api_version = in.kind.api_version;
  m.kind = in.kind.kind;
  return encodeMachine(m);
}

StatusOr<rapidjson::Document> buildVSphere(const InfraBuildInput& in) {
  api::VSphereMachine m;
  fillCommon(in, m.spec);
  for (const char* key : {"datacenter", "cluster"}) {
    if (rawOf(*in.placement, key).empty())
      return buildError("failure domain " + in.placement->failure_domain +
                        " missing raw attribute '" + key + "'");
  }
  m.spec.datacenter = rawOf(*in.placement, "datacenter");
  m.spec.cluster = rawOf(*in.placement, "cluster");
  auto ref = imageRef(in);
  if (!ref.ok()) return ref.status();
  m.spec.template_ = *ref;
  if (const auto* zone = imageZone(in)) m.spec.template_folder = zone->template_folder;
  m.spec.folder = in.vm->spec.folder.empty() ? m.spec.template_folder : in.vm->spec.folder;
  m.spec.datastore = resolvedStorage(in, 0);
  m.spec.num_cpus = cpusOf(in);
  m.spec.memory_mib = memoryOf(in);
  m.spec.firmware = in.vm_class->spec.firmware;
  m.spec.tpm_enabled = in.vm_class->spec.tpm_enabled;
  for (const auto& disk : in.vm_class->spec.hardware.disks) {
    m.spec.disks.push_back(
        {.name = disk.name, .size_gib = diskSize(in, disk), .provisioning = disk.provisioning});
  }
  auto nics = interfacesOf(in);
  for (size_t i = 0; i < nics.size(); ++i) {
    auto ipam = ipamFor(in, nics[i]);
    if (!ipam.ok()) return ipam.status();
    m.spec.network.push_back(
        {.name = nics[i].name, .port_group = resolvedNetwork(in, i), .ipam = std::move(*ipam)});
  }
  auto created_by = in.vm->metadata.annotations.find("banlieue.io/created-by");
  if (created_by != in.vm->metadata.annotations.end()) m.spec.created_by = created_by->second;
  m.api_version = in.kind.api_version;
  m.kind = in.kind.kind;
  return encodeMachine(m);
}

StatusOr<rapidjson::Document> buildProxmox(const InfraBuildInput& in) {
  api::ProxmoxMachine m;
  fillCommon(in, m.spec);
  m.spec.node = rawOf(*in.placement, "node");
  if (m.spec.node.empty())
    return buildError("failure domain " + in.placement->failure_domain +
                      " missing raw attribute 'node'");
  auto ref = imageRef(in);
  if (!ref.ok()) return ref.status();
  int32_t vmid = 0;
  auto [end, ec] = std::from_chars(ref->data(), ref->data() + ref->size(), vmid);
  if (ec != std::errc() || end != ref->data() + ref->size() || vmid <= 0)
    return buildError("VMImage " + in.image->metadata.name + " resolvedRef '" + *ref +
                      "' is not a Proxmox VMID");
  m.spec.template_vmid = vmid;
  m.spec.storage = resolvedStorage(in, 0);
  m.spec.cores = cpusOf(in);
  m.spec.memory_mib = memoryOf(in);
  m.spec.firmware = in.vm_class->spec.firmware;
  m.spec.tpm_enabled = in.vm_class->spec.tpm_enabled;
  const auto& disks = in.vm_class->spec.hardware.disks;
  if (!disks.empty()) m.spec.os_disk_size_gib = diskSize(in, disks[0]);
  for (size_t i = 1; i < disks.size(); ++i) {
    m.spec.data_disks.push_back({.name = disks[i].name,
                                 .size_gib = diskSize(in, disks[i]),
                                 .storage = resolvedStorage(in, i)});
  }
  auto nics = interfacesOf(in);
  for (size_t i = 0; i < nics.size(); ++i) {
    auto ipam = ipamFor(in, nics[i]);
    if (!ipam.ok()) return ipam.status();
    api::ProxmoxNetworkDevice device;
    device.name = nics[i].name;
    device.bridge = resolvedNetwork(in, i);
    if (const auto* capability = networkCapability(in, nics[i].network_class)) {
      auto target = zoneTarget(*capability, rawOf(*in.placement, "datacenter"),
                               rawOf(*in.placement, "cluster"));
      if (auto bridge = target.find("bridge"); bridge != target.end())
        device.bridge = bridge->second;
      if (auto vlan = target.find("vlan"); vlan != target.end()) {
        int32_t tag = 0;
        auto [vend, verr] =
            std::from_chars(vlan->second.data(), vlan->second.data() + vlan->second.size(), tag);
        if (verr != std::errc() || vend != vlan->second.data() + vlan->second.size())
          return buildError("Provider " + in.provider->metadata.name + " network class " +
                            nics[i].network_class + ": vlan '" + vlan->second +
                            "' is not a number");
        device.vlan = tag;
      }
    }
    device.ipam = std::move(*ipam);
    m.spec.network.push_back(std::move(device));
  }
  if (in.provider->spec.capabilities) {
    for (const auto& storage : in.provider->spec.capabilities->storage_classes) {
      if (storage.name == "seed-iso" && !storage.target.empty())
        m.spec.seed_iso_storage = storage.target.begin()->second;
    }
  }
  m.api_version = in.kind.api_version;
  m.kind = in.kind.kind;
  return encodeMachine(m);
}

void addString(rapidjson::Value& object, const char* key, const std::string& value, Alloc& a) {
  if (!value.empty()) object.AddMember(rapidjson::StringRef(key), json::stringValue(value, a), a);
}

// IpamSpec has no codec of its own; it is encoded inside a machine that carries it.
rapidjson::Value ipamJson(const api::IpamSpec& ipam, Alloc& a) {
  api::LibvirtMachine holder;
  holder.spec.network.push_back({.name = "nic", .ipam = ipam});
  auto doc = json::parse(api::toJson(holder), "ipam");
  const auto* encoded = json::find(&doc, "spec.network");
  if (encoded == nullptr || !encoded->IsArray() || encoded->Empty() ||
      !(*encoded)[0].HasMember("ipam"))
    return rapidjson::Value(rapidjson::kObjectType);
  return rapidjson::Value((*encoded)[0]["ipam"], a);
}

// The machine spec banlieue gives kinds it has no builder for (third-party providers read it):
// providerRef, failureDomain, desiredPowerState, restartRequestedAt (while unanswered),
// resizePolicy (when not Restart), cpus,
// memoryMiB, firmware, tpmEnabled,
// image {name, ref}, disks [{name, sizeGiB, storageClass, backendId}] and
// network [{name, networkClass, backendId, ipam}].
StatusOr<rapidjson::Document> buildGeneric(const InfraBuildInput& in) {
  rapidjson::Document doc(rapidjson::kObjectType);
  auto& a = doc.GetAllocator();
  addString(doc, "apiVersion", in.kind.api_version, a);
  addString(doc, "kind", in.kind.kind, a);
  rapidjson::Value spec(rapidjson::kObjectType);
  rapidjson::Value provider_ref(rapidjson::kObjectType);
  addString(provider_ref, "name", in.provider->metadata.name, a);
  spec.AddMember("providerRef", provider_ref, a);
  addString(spec, "failureDomain", in.placement->failure_domain, a);
  addString(spec, "desiredPowerState", in.vm->spec.desired_power_state, a);
  if (auto restart = unansweredRestart(*in.vm); !restart.empty()) {
    addString(spec, "restartRequestedAt", restart, a);
  }
  // Only when not the default: a CRD written before the field (which may prune it) keeps
  // settling for every VM that does not ask for it.
  if (in.vm->spec.resize_policy != "Restart") {
    addString(spec, "resizePolicy", in.vm->spec.resize_policy, a);
  }
  spec.AddMember("cpus", cpusOf(in), a);
  spec.AddMember("memoryMiB", memoryOf(in), a);
  addString(spec, "firmware", in.vm_class->spec.firmware, a);
  if (in.vm_class->spec.tpm_enabled) spec.AddMember("tpmEnabled", true, a);
  rapidjson::Value image(rapidjson::kObjectType);
  addString(image, "name", in.image->metadata.name, a);
  if (auto ref = imageRef(in); ref.ok()) addString(image, "ref", *ref, a);
  spec.AddMember("image", image, a);
  rapidjson::Value disks(rapidjson::kArrayType);
  const auto& class_disks = in.vm_class->spec.hardware.disks;
  for (size_t i = 0; i < class_disks.size(); ++i) {
    rapidjson::Value disk(rapidjson::kObjectType);
    addString(disk, "name", class_disks[i].name, a);
    disk.AddMember("sizeGiB", diskSize(in, class_disks[i]), a);
    addString(disk, "storageClass", class_disks[i].storage_class, a);
    addString(disk, "backendId", resolvedStorage(in, i), a);
    disks.PushBack(disk, a);
  }
  spec.AddMember("disks", disks, a);
  rapidjson::Value network(rapidjson::kArrayType);
  auto nics = interfacesOf(in);
  for (size_t i = 0; i < nics.size(); ++i) {
    auto ipam = ipamFor(in, nics[i]);
    if (!ipam.ok()) return ipam.status();
    rapidjson::Value nic(rapidjson::kObjectType);
    addString(nic, "name", nics[i].name, a);
    addString(nic, "networkClass", nics[i].network_class, a);
    addString(nic, "backendId", resolvedNetwork(in, i), a);
    nic.AddMember("ipam", ipamJson(*ipam, a), a);
    network.PushBack(nic, a);
  }
  spec.AddMember("network", network, a);
  doc.AddMember("spec", spec, a);
  return doc;
}

}  // namespace

std::string MachineKind::group() const {
  auto slash = api_version.find('/');
  return slash == std::string::npos ? std::string() : api_version.substr(0, slash);
}

std::string ownedByLabelValue(const std::string& vm_name) {
  constexpr size_t kMaxLabelValue = 63;
  if (vm_name.size() <= kMaxLabelValue) return vm_name;
  const uint64_t hash = common::fnv1a64(vm_name);  // the same in every process and version
  std::string head = vm_name.substr(0, kMaxLabelValue - 17);
  // A label value ends with an alphanumeric; VM names may have '-' or '.' anywhere.
  while (!head.empty() && !std::isalnum(static_cast<unsigned char>(head.back()))) head.pop_back();
  char suffix[18];
  std::snprintf(suffix, sizeof(suffix), "-%016llx", static_cast<unsigned long long>(hash));
  return head + suffix;
}

StatusOr<rapidjson::Document> buildInfraObject(const InfraBuildInput& in) {
  StatusOr<rapidjson::Document> built = buildError("unreachable");
  const bool in_tree_group = in.kind.group() == "infrastructure.banlieue.io";
  if (in_tree_group && in.kind.kind == "LibvirtMachine") {
    built = buildLibvirt(in);
  } else if (in_tree_group && in.kind.kind == "VSphereMachine") {
    built = buildVSphere(in);
  } else if (in_tree_group && in.kind.kind == "ProxmoxMachine") {
    built = buildProxmox(in);
  } else {
    built = buildGeneric(in);
  }
  if (!built.ok()) return built.status();
  rapidjson::Document doc = std::move(built).value();
  auto& a = doc.GetAllocator();

  const auto& vm = *in.vm;
  rapidjson::Value metadata(rapidjson::kObjectType);
  addString(metadata, "name", vm.metadata.name, a);
  addString(metadata, "namespace", vm.metadata.namespace_, a);
  rapidjson::Value labels(rapidjson::kObjectType);
  api::StringMap all_labels = vm.metadata.labels;
  all_labels[kProviderLabel] = in.provider->metadata.name;
  all_labels[kOwnedByLabel] = ownedByLabelValue(vm.metadata.name);
  for (const auto& [key, value] : all_labels)
    labels.AddMember(json::stringValue(key, a), json::stringValue(value, a), a);
  metadata.AddMember("labels", labels, a);
  rapidjson::Value owners(rapidjson::kArrayType);
  owners.PushBack(vmControllerReference(vm, a), a);
  metadata.AddMember("ownerReferences", owners, a);
  rapidjson::Value annotations(rapidjson::kObjectType);
  if (in.user_data) {
    // The rendered text stays in its Secret (docs/adr/0026); the object only names it.
    annotations.AddMember(rapidjson::StringRef(kUserDataSecretAnnotation),
                          json::stringValue(in.user_data->secret, a), a);
    annotations.AddMember(rapidjson::StringRef(kUserDataRevisionAnnotation),
                          json::stringValue(in.user_data->revision, a), a);
  }
  metadata.AddMember("annotations", annotations, a);
  // The hash covers everything above and the spec; it is added last so it does not hash itself.
  doc.AddMember("metadata", metadata, a);
  std::string hash =
      std::to_string(common::fnv1a64(json::serialize(doc), common::kFnv1a64TruncatedBasis));
  doc["metadata"]["annotations"].AddMember(rapidjson::StringRef(kAppliedHashAnnotation),
                                           json::stringValue(hash, a), a);
  if (!in.finalizers.empty()) {
    rapidjson::Value finalizers(rapidjson::kArrayType);
    for (const auto& f : in.finalizers) finalizers.PushBack(json::stringValue(f, a), a);
    doc["metadata"].AddMember("finalizers", finalizers, a);
  }
  return doc;
}

std::vector<std::string> infraFinalizers(const rapidjson::Value* provider_class,
                                         const rapidjson::Value* live) {
  auto isProviders = [](std::string_view f) {
    return f.starts_with(kProviderFinalizerPrefix) && f != kProviderFinalizerPrefix;
  };
  std::vector<std::string> out;
  if (live == nullptr) {
    // Only a provider's own name: a class status naming anything else would hold every
    // deletion for a finalizer no provider removes.
    std::string published = json::stringOr(provider_class, "status.plugin.machineFinalizer");
    if (isProviders(published)) out.push_back(std::move(published));
    return out;
  }
  if (const auto* have = json::find(live, "metadata.finalizers"); have && have->IsArray()) {
    for (const auto& f : have->GetArray()) {
      if (f.IsString() && isProviders(f.GetString())) out.emplace_back(f.GetString());
    }
  }
  return out;
}

rapidjson::Value vmControllerReference(const api::VirtualMachine& vm,
                                       rapidjson::Document::AllocatorType& a) {
  rapidjson::Value owner(rapidjson::kObjectType);
  addString(owner, "apiVersion", "banlieue.io/v1alpha1", a);
  addString(owner, "kind", "VirtualMachine", a);
  addString(owner, "name", vm.metadata.name, a);
  addString(owner, "uid", vm.metadata.uid, a);
  owner.AddMember("controller", true, a);
  owner.AddMember("blockOwnerDeletion", true, a);
  return owner;
}

bool jsonContains(const rapidjson::Value& have, const rapidjson::Value& want) {
  if (want.IsObject()) {
    if (!have.IsObject()) return false;
    for (const auto& member : want.GetObject()) {
      auto it = have.FindMember(member.name);
      if (it == have.MemberEnd() || !jsonContains(it->value, member.value)) return false;
    }
    return true;
  }
  if (want.IsArray()) {
    if (!have.IsArray() || have.Size() != want.Size()) return false;
    for (rapidjson::SizeType i = 0; i < want.Size(); ++i)
      if (!jsonContains(have[i], want[i])) return false;
    return true;
  }
  return have == want;
}

bool infraUpToDate(const rapidjson::Value& desired, const rapidjson::Value& live) {
  const auto* want_spec = json::find(&desired, "spec");
  const auto* have_spec = json::find(&live, "spec");
  if (want_spec == nullptr || have_spec == nullptr || !jsonContains(*have_spec, *want_spec))
    return false;
  const auto* want_labels = json::find(&desired, "metadata.labels");
  const auto* have_labels = json::find(&live, "metadata.labels");
  if (want_labels != nullptr &&
      (have_labels == nullptr || !jsonContains(*have_labels, *want_labels)))
    return false;
  const auto* want_annotations = json::find(&desired, "metadata.annotations");
  const auto* have_annotations = json::find(&live, "metadata.annotations");
  return want_annotations != nullptr && have_annotations != nullptr &&
         jsonContains(*have_annotations, *want_annotations);
}

}  // namespace banlieue::controller
