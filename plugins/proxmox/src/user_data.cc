#include "plugins/proxmox/src/user_data.h"

#include "plugins/proxmox/src/artifact_check.h"

#include <banlieue/sdk/host.h>
#include <banlieue/sdk/text.h>

#include <algorithm>

namespace banlieue::proxmox {
namespace {

std::string filePrefix(const std::string& uid) {
  return "banlieue-" + sdk::asciiLower(uid) + "-";
}

// The user= volume of a cicustom value ("user=local:snippets/x.yaml,network=...").
std::string userVolume(const rapidjson::Value& config) {
  const std::string cicustom = asString(sdk::json::member(&config, "cicustom"));
  size_t at = 0;
  while (at < cicustom.size()) {
    size_t end = cicustom.find(',', at);
    if (end == std::string::npos) end = cicustom.size();
    const std::string part = cicustom.substr(at, end - at);
    if (part.rfind("user=", 0) == 0) return part.substr(5);
    at = end + 1;
  }
  return {};
}

// Deletes the snippet `volid` names on the node when its file is one of this object's.
void removeOurs(const NodeFiles& files, const SnippetTarget& target, const std::string& volid,
                Deadline deadline) {
  NodeVolume old = parseVolid(volid);
  if (old.storage.empty() || old.content != "snippets" ||
      old.file.rfind(filePrefix(target.uid), 0) != 0) {
    return;  // not ours: an admin's snippet stays
  }
  NodeVolume placed = files.place(target.node, "snippets", old.file, {old.storage}, deadline);
  if (placed.storage != old.storage) return;
  files.open(target.node, deadline)->remove(placed.remote_path);
}

}  // namespace

bool deliverUserData(const PveClient& client, const NodeFiles& files, const SnippetTarget& target,
                     const std::string& user_data, const std::vector<std::string>& preferred,
                     const rapidjson::Value& config, Deadline deadline) {
  const std::string file = filePrefix(target.uid) + sha256Hex(user_data).substr(0, 16) + ".yaml";
  const std::string current = userVolume(config);
  if (parseVolid(current).file == file) return false;  // already delivered, content unchanged
  NodeVolume volume = files.place(target.node, "snippets", file, preferred, deadline);
  {
    auto sftp = files.open(target.node, deadline);
    sftp->ensureDirectory(volume.remote_path.substr(0, volume.remote_path.rfind('/')));
    sftp->write(volume.remote_path, user_data);
  }
  client.put(target.vm_path + "/config", {{"cicustom", "user=" + volume.volid()}}, deadline);
  BANLIEUE_LOG(kInfo, "userData of " + target.vm_path + " delivered as " + volume.volid());
  if (!current.empty()) removeOurs(files, target, current, deadline);
  return true;
}

void removeUserData(const NodeFiles& files, const SnippetTarget& target,
                    const rapidjson::Value& config, Deadline deadline) {
  const std::string current = userVolume(config);
  if (current.empty()) return;
  if (!files.configured()) {
    BANLIEUE_LOG(kWarn, "snippet " + current + " of " + target.vm_path +
                            " cannot be removed: the Secret has no SSH settings any more");
    return;
  }
  removeOurs(files, target, current, deadline);
}

}  // namespace banlieue::proxmox
