// userData delivery: PVE's cloud-init drive takes user-data only from a snippet file on a
// storage with content type "snippets", referenced by `cicustom: user=<volid>`, and its API
// cannot write that file. The rendered content goes over SFTP (node_files.h) into a file
// named after the object's UID and the content's digest, so a changed userData is a new file
// (and a new cicustom) and an unchanged one costs no upload. The file is removed with the
// guest, or when it is replaced.
#pragma once

#include "plugins/proxmox/src/node_files.h"
#include "plugins/proxmox/src/pve_client.h"

#include <string>
#include <vector>

namespace banlieue::proxmox {

struct SnippetTarget {
  std::string node;
  std::string vm_path;  // /nodes/{node}/qemu/{vmid}
  std::string uid;      // the object's UID
};

// Makes the guest's cicustom name a snippet holding `user_data`, uploading it when the config
// does not already point at it; true when it did (the config changed). `preferred`: storages
// to try first (the seed-iso storage). Throws sdk::Error (SshNotConfigured,
// NoStorageForContent, Ssh*, HostKey*) or PveError.
bool deliverUserData(const PveClient& client, const NodeFiles& files, const SnippetTarget& target,
                     const std::string& user_data, const std::vector<std::string>& preferred,
                     const rapidjson::Value& config, Deadline deadline);

// Removes the snippet the guest's cicustom names, when it is this object's. Call before the
// guest is destroyed (its config is the only record of the file).
void removeUserData(const NodeFiles& files, const SnippetTarget& target,
                    const rapidjson::Value& config, Deadline deadline);

}  // namespace banlieue::proxmox
