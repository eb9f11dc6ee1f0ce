#include "host/roles/controller/scheduler.h"

#include "host/roles/controller/label_selector.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>

namespace banlieue::controller {
namespace {

bool contains(const std::vector<std::string>& values, const std::string& value) {
  return std::find(values.begin(), values.end(), value) != values.end();
}

const api::ImageProviderStatus* imageRow(const api::VMImage& image, const api::Provider& provider) {
  for (const auto& row : image.status.per_provider) {
    if (row.provider_name == provider.metadata.name &&
        row.provider_namespace == provider.metadata.namespace_)
      return &row;
  }
  return nullptr;
}

// An image row with zones is ready where the zone the VM would use says so (imageZoneFor); a
// row without zones (a template the backend resolves cluster-wide) is ready everywhere the row
// is.
bool imageReadyIn(const api::ImageProviderStatus& row, const std::string& failure_domain,
                  const std::string& target) {
  if (row.zones.empty()) return row.ready;
  const auto* zone = imageZoneFor(row, failure_domain, target);
  return zone != nullptr && zone->ready;
}

std::vector<std::string> requiredFeatures(const api::VMClass& vm_class) {
  std::vector<std::string> features = vm_class.spec.features;
  if (vm_class.spec.tpm_enabled && !contains(features, "vtpm")) features.emplace_back("vtpm");
  return features;
}

enum class Rejection { kNone, kSelector, kImage, kCapability, kFirmware };

struct Check {
  Rejection kind = Rejection::kNone;
  std::string text;
};

// Filters 4-7: what the class asks of a failure domain (storage and network classes, features,
// firmware), whatever the VM.
Check classCheck(const api::VMClass& vm_class, const api::ProviderFailureDomain& fd) {
  const auto& spec = vm_class.spec;
  for (const auto& disk : spec.hardware.disks) {
    if (!contains(fd.attributes.available_storage_classes, disk.storage_class))
      return {Rejection::kCapability, "storage class '" + disk.storage_class + "' not available"};
  }
  if (spec.network) {
    for (const auto& nic : spec.network->interfaces) {
      if (!contains(fd.attributes.available_network_classes, nic.network_class))
        return {Rejection::kCapability, "network class '" + nic.network_class + "' not available"};
    }
  }
  for (const auto& feature : requiredFeatures(vm_class)) {
    if (!contains(fd.attributes.features, feature))
      return {Rejection::kCapability, "feature '" + feature + "' not available"};
  }
  if (spec.firmware == "efi-secure" && !contains(fd.attributes.features, "efiSecureBoot"))
    return {Rejection::kFirmware,
            "efi-secure firmware requested but 'efiSecureBoot' feature absent"};
  return {};
}

std::string rawAttribute(const api::ProviderFailureDomain& fd, const char* key) {
  auto it = fd.attributes.raw.find(key);
  return it == fd.attributes.raw.end() ? std::string() : it->second;
}

// The backend id of the VM's first disk in the failure domain (libvirt: its pool), which the
// image's per-target rows are keyed by; empty for a class without disks.
std::string rootDiskTarget(const api::VMClass& vm_class, const api::Provider& provider,
                           const api::ProviderFailureDomain& fd) {
  const auto& disks = vm_class.spec.hardware.disks;
  if (disks.empty()) return {};
  return storageBackendId(provider, disks.front().storage_class, rawAttribute(fd, "datacenter"),
                          rawAttribute(fd, "cluster"));
}

// Filters 2-7 for one failure domain.
Check checkFailureDomain(const SchedulingInput& input, const api::Provider& provider,
                         const api::ProviderFailureDomain& fd) {
  const auto& vm = *input.vm;
  if (vm.spec.placement.failure_domain_selector &&
      !selectorMatches(*vm.spec.placement.failure_domain_selector, fd.labels))
    return {Rejection::kSelector, "failureDomainSelector did not match"};
  const auto* row = imageRow(*input.image, provider);
  if (row == nullptr || !imageReadyIn(*row, fd.name, rootDiskTarget(*input.vm_class, provider, fd)))
    return {Rejection::kImage,
            "image " + input.image->metadata.name + " not ready" +
                (row != nullptr && !row->zones.empty() ? " in this failure domain"
                                                       : " on this provider")};
  return classCheck(*input.vm_class, fd);
}

struct Candidate {
  const api::Provider* provider;
  const api::ProviderFailureDomain* fd;
};

const api::ProviderFailureDomain* findFailureDomain(const api::Provider& provider,
                                                    const std::string& name) {
  for (const auto& fd : provider.status.failure_domains)
    if (fd.name == name) return &fd;
  return nullptr;
}

// How many siblings matching `term` sit in failure domains with each topologyKey value.
std::map<std::string, int> occupiedValues(const SchedulingInput& input,
                                          const api::AntiAffinityTerm& term) {
  std::map<std::string, int> values;
  for (const auto& sibling : input.siblings) {
    if (sibling.metadata.name == input.vm->metadata.name) continue;  // never itself
    if (!sibling.status.scheduled || !selectorMatches(term.label_selector, sibling.metadata.labels))
      continue;
    const auto& placed = *sibling.status.scheduled;
    for (const auto& provider : input.providers) {
      if (provider.metadata.name != placed.provider_name) continue;
      const auto* fd = findFailureDomain(provider, placed.failure_domain);
      if (fd == nullptr) continue;
      auto label = fd->labels.find(term.topology_key);
      if (label != fd->labels.end()) ++values[label->second];
    }
  }
  return values;
}

// Matching siblings sharing the failure domain's topology value (0: none, or no such label).
int colocated(const api::ProviderFailureDomain& fd, const std::string& topology_key,
              const std::map<std::string, int>& occupied) {
  auto label = fd.labels.find(topology_key);
  if (label == fd.labels.end()) return 0;
  auto count = occupied.find(label->second);
  return count == occupied.end() ? 0 : count->second;
}

// Effective backend target of a class mapping in a zone: an exact (datacenter, cluster)
// per-zone entry, else the default; the first value in key order names the backend object.
template <class Capability>
std::string backendIdFor(const std::vector<Capability>& capabilities, const std::string& name,
                         const std::string& datacenter, const std::string& cluster) {
  for (const auto& capability : capabilities) {
    if (capability.name != name) continue;
    const api::StringMap* target = &capability.target;
    for (const auto& zone : capability.per_zone) {
      if (zone.datacenter == datacenter && zone.cluster == cluster) target = &zone.target;
    }
    if (!target->empty()) return target->begin()->second;
  }
  return name;
}

Placement makePlacement(const SchedulingInput& input, const Candidate& chosen) {
  const auto& provider = *chosen.provider;
  const auto& fd = *chosen.fd;
  Placement placement;
  placement.provider_name = provider.metadata.name;
  placement.provider_namespace = provider.metadata.namespace_;
  placement.provider_class = provider.spec.provider_class_ref.name;
  placement.failure_domain = fd.name;
  placement.failure_domain_labels = fd.labels;
  placement.failure_domain_raw = fd.attributes.raw;
  auto raw = [&](const char* key) {
    auto it = fd.attributes.raw.find(key);
    return it == fd.attributes.raw.end() ? std::string() : it->second;
  };
  std::string datacenter = raw("datacenter");
  std::string cluster = raw("cluster");
  std::vector<api::StorageClassCapability> no_storage;
  std::vector<api::NetworkClassCapability> no_network;
  const auto& storage =
      provider.spec.capabilities ? provider.spec.capabilities->storage_classes : no_storage;
  const auto& network =
      provider.spec.capabilities ? provider.spec.capabilities->network_classes : no_network;
  for (const auto& disk : input.vm_class->spec.hardware.disks) {
    placement.resolved_storage.push_back(
        {disk.storage_class, backendIdFor(storage, disk.storage_class, datacenter, cluster)});
  }
  if (input.vm_class->spec.network) {
    for (const auto& nic : input.vm_class->spec.network->interfaces) {
      placement.resolved_networks.push_back(
          {nic.network_class, backendIdFor(network, nic.network_class, datacenter, cluster)});
    }
  }
  return placement;
}

std::optional<Candidate> existingPlacement(const SchedulingInput& input,
                                           const std::vector<const api::Provider*>& selected) {
  const auto& scheduled = input.vm->status.scheduled;
  if (!scheduled) return std::nullopt;
  for (const auto* provider : selected) {
    if (provider->metadata.name != scheduled->provider_name) continue;
    const auto* fd = findFailureDomain(*provider, scheduled->failure_domain);
    if (fd == nullptr) return std::nullopt;
    const auto& selector = input.vm->spec.placement.failure_domain_selector;
    if (selector && !selectorMatches(*selector, fd->labels)) return std::nullopt;
    return Candidate{provider, fd};
  }
  return std::nullopt;
}

}  // namespace

std::string joinCapped(const std::vector<std::string>& reasons, size_t limit) {
  std::string out;
  for (size_t i = 0; i < reasons.size() && i < limit; ++i) {
    if (i > 0) out += "; ";
    out += reasons[i];
  }
  if (reasons.size() > limit) out += "; … and " + std::to_string(reasons.size() - limit) + " more";
  return out;
}

SchedulingResult schedule(const SchedulingInput& input) {
  const auto& vm = *input.vm;
  SchedulingResult result;

  // Filter 1, in a stable order so messages and the tie-break never depend on list order.
  // A Provider being deleted is removing its machines (docs/adr/0024): it takes no VM, and a
  // VM placed on it moves like any other placement change.
  std::vector<const api::Provider*> selected;
  std::vector<std::string> deleting;
  size_t in_namespace = 0;
  for (const auto& provider : input.providers) {
    if (provider.metadata.namespace_ != vm.metadata.namespace_) continue;
    ++in_namespace;
    const auto& selector = vm.spec.placement.provider_selector;
    if (selector && !selectorMatches(*selector, provider.metadata.labels)) continue;
    if (!provider.metadata.deletion_timestamp.empty()) {
      deleting.push_back(provider.metadata.name);
      continue;
    }
    selected.push_back(&provider);
  }
  std::sort(selected.begin(), selected.end(),
            [](const auto* a, const auto* b) { return a->metadata.name < b->metadata.name; });
  if (selected.empty()) {
    result.reason = reasons::kNoProviderMatched;
    if (deleting.empty()) {
      // Where it looked, what it found and what it asked for: enough to fix either side.
      const auto& selector = vm.spec.placement.provider_selector;
      std::string held = in_namespace == 0 ? "no Providers"
                         : in_namespace == 1
                             ? "1 Provider, without those labels"
                             : std::to_string(in_namespace) + " Providers, none with those labels";
      result.message = "no Provider in namespace " + vm.metadata.namespace_ +
                       (selector ? " matches providerSelector " + selectorText(*selector) : "") +
                       ": the namespace holds " + held +
                       (selector ? "" : " (the VM has no providerSelector, so any would do)");
    } else {
      std::sort(deleting.begin(), deleting.end());
      std::string names;
      for (const auto& name : deleting) names += (names.empty() ? "" : ", ") + name;
      result.message = "no Provider in namespace " + vm.metadata.namespace_ +
                       " can take VMs: " + names + " being deleted";
    }
    return result;
  }

  if (auto kept = existingPlacement(input, selected)) {
    result.scheduled = true;
    result.placement = makePlacement(input, *kept);
    result.placement.kept = true;
    return result;
  }

  // Filters 2-7.
  std::vector<Candidate> survivors;
  std::vector<std::string> rejections;
  bool only_image_rejections = true;
  bool firmware_rejection = false;
  for (const auto* provider : selected) {
    if (provider->status.failure_domains.empty()) {
      rejections.push_back(provider->metadata.name + ": no failure domains reported");
      only_image_rejections = false;
      continue;
    }
    std::vector<const api::ProviderFailureDomain*> ordered;
    for (const auto& fd : provider->status.failure_domains) ordered.push_back(&fd);
    std::sort(ordered.begin(), ordered.end(),
              [](const auto* a, const auto* b) { return a->name < b->name; });
    for (const auto* fd : ordered) {
      Check check = checkFailureDomain(input, *provider, *fd);
      if (check.kind == Rejection::kNone) {
        survivors.push_back({provider, fd});
        continue;
      }
      rejections.push_back(provider->metadata.name + "/" + fd->name + ": " + check.text);
      only_image_rejections = only_image_rejections && check.kind == Rejection::kImage;
      firmware_rejection = firmware_rejection || check.kind == Rejection::kFirmware;
    }
  }
  if (survivors.empty()) {
    std::string detail = joinCapped(rejections);
    if (only_image_rejections) {
      result.reason = reasons::kImageNotReady;
      result.message = "image not ready on any candidate provider: " + detail;
    } else if (firmware_rejection) {
      result.reason = reasons::kFirmwareUnsupported;
      result.message =
          "efi-secure firmware requires the efiSecureBoot feature; none of the candidate "
          "failure domains advertise it: " +
          detail;
    } else {
      result.reason = reasons::kNoFailureDomainMatched;
      result.message = "no failure domain matched all constraints: " + detail;
    }
    return result;
  }

  // Filter 8 (required) and the preferred ranking.
  std::vector<int> preferred_violations(survivors.size(), 0);
  for (const auto& term : vm.spec.placement.anti_affinity) {
    auto occupied = occupiedValues(input, term);
    if (term.mode == "preferred") {
      for (size_t i = 0; i < survivors.size(); ++i)
        preferred_violations[i] += colocated(*survivors[i].fd, term.topology_key, occupied);
      continue;
    }
    std::vector<Candidate> kept;
    std::vector<int> kept_violations;
    for (size_t i = 0; i < survivors.size(); ++i) {
      if (colocated(*survivors[i].fd, term.topology_key, occupied) > 0) continue;
      kept.push_back(survivors[i]);
      kept_violations.push_back(preferred_violations[i]);
    }
    if (kept.empty()) {
      result.reason = reasons::kAntiAffinityUnsatisfied;
      result.message =
          "required anti-affinity rule on topologyKey=" + term.topology_key + " left no candidates";
      return result;
    }
    survivors = std::move(kept);
    preferred_violations = std::move(kept_violations);
  }

  size_t best = 0;
  for (size_t i = 1; i < survivors.size(); ++i) {
    auto rank = [&](size_t k) {
      return std::make_tuple(preferred_violations[k], survivors[k].provider->metadata.name,
                             survivors[k].fd->name);
    };
    if (rank(i) < rank(best)) best = i;
  }
  result.scheduled = true;
  result.placement = makePlacement(input, survivors[best]);
  return result;
}

std::string storageBackendId(const api::Provider& provider, const std::string& storage_class,
                             const std::string& datacenter, const std::string& cluster) {
  if (!provider.spec.capabilities) return storage_class;
  return backendIdFor(provider.spec.capabilities->storage_classes, storage_class, datacenter,
                      cluster);
}

const api::ImageZone* imageZoneFor(const api::ImageProviderStatus& row,
                                   const std::string& failure_domain, const std::string& target) {
  const api::ImageZone* ready = nullptr;
  const api::ImageZone* any = nullptr;
  for (const auto& zone : row.zones) {
    if (zone.failureDomainName() != failure_domain) continue;
    if (!target.empty() && zone.target == target) return &zone;
    if (ready == nullptr && zone.ready) ready = &zone;
    if (any == nullptr) any = &zone;
  }
  return ready != nullptr ? ready : any;
}

std::string classUnsatisfiedBy(const api::VMClass& vm_class, const api::ProviderFailureDomain& fd) {
  return classCheck(vm_class, fd).text;
}

}  // namespace banlieue::controller
