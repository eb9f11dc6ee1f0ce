// A snapshot of the vCenter inventory the plugin places VMs into: datacenters, clusters,
// datastores (and the datastore clusters holding them), networks and folders. Read with one
// PropertyCollector batch, whatever the number of VMs (VMs are not part of it), and turned
// into failure domains by a pure function the unit tests drive directly.
#pragma once

#include "plugins/vsphere/src/provider_spec.h"
#include "plugins/vsphere/src/vim.h"

#include <optional>
#include <string>
#include <vector>

namespace banlieue::vsphere {

struct Inventory {
  struct Datacenter {
    MoRef ref;
    std::string name;
    MoRef vm_folder;
  };
  struct Cluster {
    MoRef ref;
    std::string name;
    std::string datacenter;
    std::vector<MoRef> datastores;
    std::vector<MoRef> networks;
    MoRef resource_pool;
  };
  struct Datastore {
    MoRef ref;
    std::string name;
    std::string datacenter;
    MoRef parent;
    int64_t free_space = 0;
    bool accessible = true;
  };
  struct Network {
    MoRef ref;
    std::string name;
    bool distributed = false;
    std::string portgroup_key;  // distributed port groups
    std::string switch_uuid;    // distributed port groups: their switch's UUID
  };
  struct StoragePod {
    MoRef ref;
    std::string name;
  };

  std::vector<Datacenter> datacenters;
  std::vector<Cluster> clusters;
  std::vector<Datastore> datastores;
  std::vector<Network> networks;
  std::vector<StoragePod> storage_pods;

  // What to ask the PropertyCollector for.
  static std::vector<PropertySpec> propertySpecs();
  // Builds the snapshot from the objects of propertySpecs(); resolves each cluster's and
  // datastore's datacenter through the parent chain.
  static Inventory fromObjects(const std::vector<ObjectContent>& objects);
  // One batched read over the root folder.
  static Inventory load(Vim& vim, Deadline deadline);

  const Datacenter* datacenter(const std::string& name) const;
  const Cluster* cluster(const std::string& datacenter, const std::string& name) const;
  const Datastore* datastore(const MoRef& ref) const;
  const Network* network(const MoRef& ref) const;
  const StoragePod* storagePod(const MoRef& ref) const;

  // A datastore reachable from the cluster named `name`, or the member of the datastore
  // cluster named `name` with the most free space; nullopt when neither exists.
  std::optional<Datastore> resolveDatastore(const Cluster& cluster, const std::string& name) const;
  // A network (standard or distributed port group) reachable from the cluster.
  std::optional<Network> resolveNetwork(const Cluster& cluster, const std::string& name) const;
};

// The <backing> of a NIC on `network`: by network moref for standard port groups, by switch
// UUID and port group key for distributed ones.
std::string networkBackingXml(const Inventory::Network& network);

struct FailureDomain {
  std::string name;
  std::string datacenter;
  std::string cluster;
  std::vector<std::string> storage_classes;  // class names available in this zone
  std::vector<std::string> network_classes;
  std::vector<std::string> features;
};

// One failure domain per (datacenter, cluster), sorted by name. Throws sdk::Error
// (FAILED_PRECONDITION, "DuplicateFailureDomain") when two resolve to the same name: failing
// closed beats scheduling VMs into the wrong cluster.
std::vector<FailureDomain> computeFailureDomains(const Inventory& inventory,
                                                 const ProviderSpec& spec);

}  // namespace banlieue::vsphere
