#include "plugins/proxmox/src/inventory.h"

#include <banlieue/sdk/uri.h>

#include <sstream>

namespace banlieue::proxmox {
namespace {

namespace json = sdk::json;

std::set<std::string> splitContent(const std::string& text) {
  std::set<std::string> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.insert(item);
  }
  return out;
}

}  // namespace

std::vector<NodeInfo> listNodes(const PveClient& client, Deadline deadline) {
  rapidjson::Document data = client.get("/nodes", deadline);
  std::vector<NodeInfo> nodes;
  if (!data.IsArray()) return nodes;
  for (const auto& entry : data.GetArray()) {
    NodeInfo node;
    node.name = json::stringOr(&entry, "node");
    node.online = json::stringOr(&entry, "status") == "online";
    if (!node.name.empty()) nodes.push_back(std::move(node));
  }
  return nodes;
}

void loadNodeDetails(const PveClient& client, NodeInfo& node, Deadline deadline) {
  const std::string base = "/nodes/" + sdk::pathSegment(node.name);
  rapidjson::Document storages = client.get(base + "/storage", deadline);
  if (storages.IsArray()) {
    for (const auto& s : storages.GetArray()) {
      // A disabled or inactive storage cannot take a clone, so it does not count.
      if (asInt(json::member(&s, "enabled"), 1) == 0 || asInt(json::member(&s, "active"), 1) == 0) {
        continue;
      }
      node.storages[json::stringOr(&s, "storage")] = splitContent(json::stringOr(&s, "content"));
    }
  }
  rapidjson::Document ifaces = client.get(base + "/network?type=bridge", deadline);
  if (ifaces.IsArray()) {
    for (const auto& i : ifaces.GetArray()) {
      if (json::stringOr(&i, "type") != "bridge") continue;
      if (asInt(json::member(&i, "active"), 1) == 0) continue;
      node.bridges.insert(json::stringOr(&i, "iface"));
    }
  }
}

Introspection introspectCluster(const PveClient& client, const ProviderSpec& spec,
                                Deadline deadline) {
  Introspection result;
  std::vector<NodeInfo> nodes = listNodes(client, deadline);
  std::set<std::string> storage_seen;
  std::set<std::string> bridge_seen;
  for (NodeInfo& node : nodes) {
    if (!node.online) {
      result.offline_nodes.push_back(node.name);
      continue;
    }
    loadNodeDetails(client, node, deadline);
    FailureDomain fd;
    fd.name = node.name;
    for (const auto& sc : spec.storage_classes) {
      auto it = node.storages.find(sc.storage);
      // Disk classes need "images"; the seed-iso class needs "iso".
      const std::string needed = sc.name == "seed-iso" ? "iso" : "images";
      if (it != node.storages.end() && it->second.count(needed) != 0) {
        fd.storage_classes.push_back(sc.name);
        storage_seen.insert(sc.name);
      }
    }
    for (const auto& nc : spec.network_classes) {
      if (node.bridges.count(nc.bridge) != 0) {
        fd.network_classes.push_back(nc.name);
        bridge_seen.insert(nc.name);
      }
    }
    result.failure_domains.push_back(std::move(fd));
  }
  for (const auto& sc : spec.storage_classes) {
    if (storage_seen.count(sc.name) == 0) {
      result.missing_storages.push_back("storage '" + sc.storage + "' (class " + sc.name + ")");
    }
  }
  for (const auto& nc : spec.network_classes) {
    if (bridge_seen.count(nc.name) == 0) {
      result.missing_bridges.push_back("bridge '" + nc.bridge + "' (class " + nc.name + ")");
    }
  }
  return result;
}

}  // namespace banlieue::proxmox
