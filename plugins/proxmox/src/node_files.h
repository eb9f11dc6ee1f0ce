// Files on a PVE node's directory storages, for what the API cannot carry: disk images for
// `import-from` (content type "import" of PVE 8 directory storages) and cloud-init snippets for
// `cicustom` (content type "snippets"). PVE names such a file by volume id
// "<storage>:<content>/<file>" and keeps it under "<storage path>/<content>/<file>"; the path comes
// from the storage's config (GET /storage/{storage}) and the node's address from /cluster/status,
// and the bytes go over SFTP (node_ssh.h) with the node's host key pinned.
#pragma once

#include "plugins/proxmox/src/node_ssh.h"
#include "plugins/proxmox/src/pve_client.h"

#include <memory>
#include <string>
#include <vector>

namespace banlieue::proxmox {

struct NodeVolume {
  std::string node;
  std::string storage;
  std::string content;  // import | snippets
  std::string file;
  std::string remote_path;  // absolute path on the node
  std::string volid() const { return storage + ":" + content + "/" + file; }
};

class NodeFiles {
 public:
  NodeFiles(const PveClient& client, SshSettings settings)
      : client_(client), settings_(std::move(settings)) {}

  bool configured() const { return settings_.configured(); }

  // Where `file` of `content` goes on `node`: the first of `preferred` storages that the node
  // has with that content type and a directory path, else any such storage of the node.
  // Throws sdk::Error FAILED_PRECONDITION/NoStorageForContent when there is none.
  NodeVolume place(const std::string& node, const std::string& content, const std::string& file,
                   const std::vector<std::string>& preferred, Deadline deadline) const;

  // An SFTP session to the node (its address from /cluster/status). Throws sdk::Error
  // FAILED_PRECONDITION/SshNotConfigured when the Secret has no sshPrivateKey.
  std::unique_ptr<NodeSftp> open(const std::string& node, Deadline deadline) const;

 private:
  const PveClient& client_;
  SshSettings settings_;
};

// A volume id "<storage>:<content>/<file>" split back; nullopt-like (empty storage) when the
// text is not one.
NodeVolume parseVolid(const std::string& volid);

}  // namespace banlieue::proxmox
