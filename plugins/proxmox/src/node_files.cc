#include "plugins/proxmox/src/node_files.h"

#include "plugins/proxmox/src/inventory.h"

#include <banlieue/sdk/status.h>
#include <banlieue/sdk/uri.h>

#include <algorithm>

namespace banlieue::proxmox {
namespace {

namespace json = sdk::json;
using sdk::Code;
using sdk::Error;

// Per SFTP operation, not per transfer: libssh2 applies it to each blocking call.
constexpr std::chrono::seconds kSshTimeout{60};

}  // namespace

NodeVolume NodeFiles::place(const std::string& node, const std::string& content,
                            const std::string& file, const std::vector<std::string>& preferred,
                            Deadline deadline) const {
  NodeInfo info;
  info.name = node;
  loadNodeDetails(client_, info, deadline);
  std::vector<std::string> candidates;
  for (const auto& name : preferred) {
    auto it = info.storages.find(name);
    if (it != info.storages.end() && it->second.count(content) != 0) candidates.push_back(name);
  }
  for (const auto& [name, contents] : info.storages) {
    if (contents.count(content) != 0 &&
        std::find(candidates.begin(), candidates.end(), name) == candidates.end()) {
      candidates.push_back(name);
    }
  }
  for (const auto& storage : candidates) {
    // Only file-based storages have a path; the first with one takes the file.
    rapidjson::Document config = client_.get("/storage/" + sdk::pathSegment(storage), deadline);
    std::string path = json::stringOr(&config, "path");
    if (path.empty()) continue;
    while (path.size() > 1 && path.back() == '/') path.pop_back();
    std::string remote = std::move(path);
    remote.append("/").append(content).append("/").append(file);
    return {node, storage, content, file, std::move(remote)};
  }
  throw Error(Code::kFailedPrecondition, "NoStorageForContent",
              "node '" + node + "' has no directory storage with content type '" + content +
                  "' (enable it on a dir/NFS/CIFS storage, e.g. pvesm set local --content " +
                  "...," + content + ")");
}

std::unique_ptr<NodeSftp> NodeFiles::open(const std::string& node, Deadline deadline) const {
  if (!settings_.configured()) {
    throw Error(Code::kFailedPrecondition, "SshNotConfigured",
                "the Provider's credentials Secret has no sshPrivateKey; PVE takes images and "
                "snippets only as files on the node, which the plugin copies over SFTP");
  }
  std::string address;
  rapidjson::Document members = client_.get("/cluster/status", deadline);
  if (members.IsArray()) {
    for (const auto& m : members.GetArray()) {
      if (json::stringOr(&m, "type") == "node" && json::stringOr(&m, "name") == node) {
        address = json::stringOr(&m, "ip");
      }
    }
  }
  if (address.empty()) {
    throw Error(Code::kNotFound, "NodeNotFound",
                "/cluster/status lists no address for node '" + node + "'");
  }
  return std::make_unique<NodeSftp>(address, node, settings_, kSshTimeout);
}

NodeVolume parseVolid(const std::string& volid) {
  NodeVolume v;
  const size_t colon = volid.find(':');
  const size_t slash = volid.find('/', colon == std::string::npos ? 0 : colon);
  if (colon == std::string::npos || slash == std::string::npos) return v;
  v.storage = volid.substr(0, colon);
  v.content = volid.substr(colon + 1, slash - colon - 1);
  v.file = volid.substr(slash + 1);
  return v;
}

}  // namespace banlieue::proxmox
