// What a PVE cluster offers, read per online node: its storages and bridges. Introspection
// turns it into one failure domain per online node, and the machine reconciler uses it to
// refuse a clone onto an offline node, a missing storage or a missing bridge with a specific
// reason instead of PVE's generic error.
#pragma once

#include "plugins/proxmox/src/pve_client.h"
#include "plugins/proxmox/src/specs.h"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace banlieue::proxmox {

struct NodeInfo {
  std::string name;
  bool online = false;
  std::map<std::string, std::set<std::string>> storages;  // enabled+active storage -> content
  std::set<std::string> bridges;                          // active bridges
};

// Node names and their status only (one request).
std::vector<NodeInfo> listNodes(const PveClient& client, Deadline deadline);
// Storages and bridges of one online node.
void loadNodeDetails(const PveClient& client, NodeInfo& node, Deadline deadline);

struct FailureDomain {
  std::string name;  // the node
  std::vector<std::string> storage_classes;
  std::vector<std::string> network_classes;
};

struct Introspection {
  std::vector<FailureDomain> failure_domains;
  std::vector<std::string> offline_nodes;
  // Declared classes no online node offers, with why ("storage 'x' (class gold)").
  std::vector<std::string> missing_storages;
  std::vector<std::string> missing_bridges;
};

Introspection introspectCluster(const PveClient& client, const ProviderSpec& spec,
                                Deadline deadline);

}  // namespace banlieue::proxmox
