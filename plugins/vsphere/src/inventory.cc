#include "plugins/vsphere/src/inventory.h"

#include "plugins/vsphere/src/naming.h"

#include <banlieue/sdk/status.h>

#include <algorithm>
#include <map>

namespace banlieue::vsphere {
namespace {

std::string key(const MoRef& ref) {
  return ref.type + ":" + ref.value;
}

bool reachable(const Inventory& inv, const Inventory::Cluster& cluster, const Target& target) {
  // The spec's order of keys: datastore first, then datastore cluster, then networks.
  if (auto it = target.find("datastore"); it != target.end()) {
    return std::any_of(cluster.datastores.begin(), cluster.datastores.end(), [&](const MoRef& r) {
      const auto* ds = inv.datastore(r);
      return ds != nullptr && ds->accessible && ds->name == it->second;
    });
  }
  if (auto it = target.find("datastoreCluster"); it != target.end()) {
    return std::any_of(cluster.datastores.begin(), cluster.datastores.end(), [&](const MoRef& r) {
      const auto* ds = inv.datastore(r);
      const auto* pod = ds != nullptr ? inv.storagePod(ds->parent) : nullptr;
      return pod != nullptr && ds->accessible && pod->name == it->second;
    });
  }
  auto network = [&](const std::string& name, bool distributed) {
    return std::any_of(cluster.networks.begin(), cluster.networks.end(), [&](const MoRef& r) {
      const auto* n = inv.network(r);
      return n != nullptr && n->name == name && n->distributed == distributed;
    });
  };
  if (auto it = target.find("portGroup"); it != target.end()) return network(it->second, false);
  if (auto it = target.find("distributedPortGroup"); it != target.end()) {
    return network(it->second, true);
  }
  return false;  // tags and unknown keys never match (not implemented)
}

}  // namespace

std::vector<PropertySpec> Inventory::propertySpecs() {
  return {
      {"Datacenter", {"name", "parent", "vmFolder"}},
      {"Folder", {"name", "parent"}},
      {"ClusterComputeResource", {"name", "parent", "datastore", "network", "resourcePool"}},
      {"Datastore", {"name", "parent", "summary.freeSpace", "summary.accessible"}},
      {"StoragePod", {"name", "parent"}},
      {"Network", {"name"}},
      {"DistributedVirtualPortgroup", {"name", "key", "config.distributedVirtualSwitch"}},
      {"DistributedVirtualSwitch", {"uuid"}},
  };
}

Inventory Inventory::fromObjects(const std::vector<ObjectContent>& objects) {
  Inventory inv;
  std::map<std::string, MoRef> parents;
  std::map<std::string, std::string> datacenter_names;
  for (const auto& o : objects) parents[key(o.obj)] = o.moref("parent");
  std::map<std::string, std::string> switch_uuids;
  for (const auto& o : objects) {
    if (o.obj.type == "Datacenter") datacenter_names[key(o.obj)] = o.text("name");
    if (o.node("uuid")) switch_uuids[o.obj.value] = o.text("uuid");
  }
  auto datacenterOf = [&](const MoRef& start) {
    MoRef at = start;
    for (int depth = 0; depth < 64 && !at.empty(); ++depth) {  // bounded: never trust a cycle
      if (auto it = datacenter_names.find(key(at)); it != datacenter_names.end()) return it->second;
      auto p = parents.find(key(at));
      if (p == parents.end()) break;
      at = p->second;
    }
    return std::string();
  };
  for (const auto& o : objects) {
    const std::string& type = o.obj.type;
    if (type == "Datacenter") {
      inv.datacenters.push_back({o.obj, o.text("name"), o.moref("vmFolder")});
    } else if (type == "ClusterComputeResource") {
      inv.clusters.push_back({o.obj, o.text("name"), datacenterOf(o.obj), o.morefs("datastore"),
                              o.morefs("network"), o.moref("resourcePool")});
    } else if (type == "Datastore") {
      bool accessible = !o.node("summary.accessible") || o.boolean("summary.accessible");
      inv.datastores.push_back({o.obj, o.text("name"), datacenterOf(o.obj), o.moref("parent"),
                                o.integer("summary.freeSpace").value_or(0), accessible});
    } else if (type == "StoragePod") {
      inv.storage_pods.push_back({o.obj, o.text("name")});
    } else if (type == "Network" || type == "DistributedVirtualPortgroup" ||
               type == "OpaqueNetwork") {
      Network n{o.obj, o.text("name"), type == "DistributedVirtualPortgroup", {}, {}};
      if (n.distributed) {
        n.portgroup_key = o.node("key") ? o.text("key") : o.obj.value;
        n.switch_uuid = switch_uuids[o.moref("config.distributedVirtualSwitch").value];
      }
      inv.networks.push_back(std::move(n));
    }
  }
  return inv;
}

Inventory Inventory::load(Vim& vim, Deadline deadline) {
  PropertyResult r = vim.retrieveFromContainer(vim.client().content(deadline).root_folder,
                                               propertySpecs(), deadline);
  return fromObjects(r.objects);
}

const Inventory::Datacenter* Inventory::datacenter(const std::string& name) const {
  for (const auto& dc : datacenters) {
    if (dc.name == name) return &dc;
  }
  return nullptr;
}

const Inventory::Cluster* Inventory::cluster(const std::string& dc, const std::string& name) const {
  for (const auto& c : clusters) {
    if (c.datacenter == dc && c.name == name) return &c;
  }
  return nullptr;
}

const Inventory::Datastore* Inventory::datastore(const MoRef& ref) const {
  for (const auto& ds : datastores) {
    if (ds.ref == ref) return &ds;
  }
  return nullptr;
}

const Inventory::Network* Inventory::network(const MoRef& ref) const {
  for (const auto& n : networks) {
    if (n.ref == ref) return &n;
  }
  return nullptr;
}

const Inventory::StoragePod* Inventory::storagePod(const MoRef& ref) const {
  if (ref.type != "StoragePod") return nullptr;
  for (const auto& p : storage_pods) {
    if (p.ref == ref) return &p;
  }
  return nullptr;
}

std::optional<Inventory::Datastore> Inventory::resolveDatastore(const Cluster& cluster,
                                                                const std::string& name) const {
  const Datastore* best = nullptr;
  for (const MoRef& r : cluster.datastores) {
    const Datastore* ds = datastore(r);
    if (ds == nullptr || !ds->accessible) continue;
    if (ds->name == name) return *ds;
    const StoragePod* pod = storagePod(ds->parent);
    if (pod != nullptr && pod->name == name &&
        (best == nullptr || ds->free_space > best->free_space)) {
      best = ds;
    }
  }
  if (best == nullptr) return std::nullopt;
  return *best;
}

std::optional<Inventory::Network> Inventory::resolveNetwork(const Cluster& cluster,
                                                            const std::string& name) const {
  for (const MoRef& r : cluster.networks) {
    const Network* n = network(r);
    if (n != nullptr && n->name == name) return *n;
  }
  return std::nullopt;
}

std::string networkBackingXml(const Inventory::Network& network) {
  XmlWriter w;
  if (network.distributed) {
    w.open("backing", "VirtualEthernetCardDistributedVirtualPortBackingInfo")
        .open("port")
        .text("switchUuid", network.switch_uuid)
        .text("portgroupKey", network.portgroup_key)
        .close("port")
        .close("backing");
  } else {
    w.open("backing", "VirtualEthernetCardNetworkBackingInfo")
        .text("deviceName", network.name)
        .moref("network", network.ref)
        .close("backing");
  }
  return w.str();
}

std::vector<FailureDomain> computeFailureDomains(const Inventory& inventory,
                                                 const ProviderSpec& spec) {
  std::vector<FailureDomain> fds;
  for (const auto& cluster : inventory.clusters) {
    FailureDomain fd;
    fd.datacenter = cluster.datacenter;
    fd.cluster = cluster.name;
    auto override = std::find_if(spec.name_overrides.begin(), spec.name_overrides.end(),
                                 [&](const NameOverride& o) {
                                   return o.datacenter == fd.datacenter && o.cluster == fd.cluster;
                                 });
    fd.name = override != spec.name_overrides.end()
                  ? collisionSafeName({override->name})
                  : collisionSafeName({spec.name, fd.datacenter, fd.cluster});
    if (fd.name.empty()) {
      throw sdk::Error(sdk::Code::kFailedPrecondition, "InvalidFailureDomainName",
                       "failure domain of " + fd.datacenter + "/" + fd.cluster +
                           " has an empty name after slugification");
    }
    for (const auto& c : spec.storage_classes) {
      if (const Target* t = c.targetFor(fd.datacenter, fd.cluster);
          t != nullptr && reachable(inventory, cluster, *t)) {
        fd.storage_classes.push_back(c.name);
      }
    }
    for (const auto& c : spec.network_classes) {
      if (const Target* t = c.targetFor(fd.datacenter, fd.cluster);
          t != nullptr && reachable(inventory, cluster, *t)) {
        fd.network_classes.push_back(c.name);
      }
    }
    fd.features = spec.features;
    fds.push_back(std::move(fd));
  }
  std::sort(fds.begin(), fds.end(),
            [](const FailureDomain& a, const FailureDomain& b) { return a.name < b.name; });
  for (size_t i = 1; i < fds.size(); ++i) {
    if (fds[i].name == fds[i - 1].name) {
      throw sdk::Error(sdk::Code::kFailedPrecondition, "DuplicateFailureDomain",
                       "two failure domains resolved to the same name '" + fds[i].name +
                           "': " + fds[i - 1].datacenter + "/" + fds[i - 1].cluster + " and " +
                           fds[i].datacenter + "/" + fds[i].cluster +
                           "; set spec.failureDomainNameOverrides");
    }
  }
  return fds;
}

}  // namespace banlieue::vsphere
