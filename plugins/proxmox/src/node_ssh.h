// SFTP to a PVE node with libssh2: the one way PVE accepts bytes it cannot take over its API
// (disk images to import, cloud-init snippets). The node's host key must match a pinned
// known_hosts entry (ed25519 or ECDSA only; libssh2 1.10 cannot verify rsa-sha2 and PVE nodes
// refuse ssh-rsa) and the client authenticates with a key, never a password. This is the only
// file that includes libssh2.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace banlieue::proxmox {

// What the Provider's credentials Secret says about SSH (see ADR 0009): sshPrivateKey,
// sshKnownHosts, sshUser (default root), sshPort (default 22). The key is zeroed on destruction.
struct SshSettings {
  std::string user = "root";
  int port = 22;
  std::string private_key;  // PEM or OpenSSH format, ed25519 or ECDSA, no passphrase
  std::string known_hosts;  // OpenSSH known_hosts lines pinning each node's host key

  SshSettings() = default;
  SshSettings(const SshSettings&) = default;
  SshSettings& operator=(const SshSettings&) = default;
  SshSettings(SshSettings&&) = default;
  SshSettings& operator=(SshSettings&&) = default;
  ~SshSettings();
  bool configured() const { return !private_key.empty(); }
};

// One SSH connection with an SFTP channel to one node. Errors are thrown as sdk::Error with a
// specific reason: SshConnectFailed, HostKeyNotPinned, HostKeyMismatch, HostKeyTypeRefused,
// SshAuthFailed, SftpFailed (and Cancelled when `stop` asks).
class NodeSftp {
 public:
  // Connects to host:settings.port and checks the host key against the pins for `host`
  // (and for `node_name`, so known_hosts may name the node instead of its address).
  NodeSftp(const std::string& host, const std::string& node_name, const SshSettings& settings,
           std::chrono::milliseconds timeout);
  ~NodeSftp();
  NodeSftp(const NodeSftp&) = delete;
  NodeSftp& operator=(const NodeSftp&) = delete;

  // Copies a local file to `remote_path` through "<remote_path>.partial" and a rename, so a
  // half-written file never carries the final name. progress(bytes) after each block; stop()
  // is polled between blocks (the partial file is removed when it asks).
  void upload(const std::string& local_path, const std::string& remote_path,
              const std::function<void(uint64_t)>& progress = {},
              const std::function<bool()>& stop = {});
  // Writes `content` to `remote_path` the same way (mode 0640).
  void write(const std::string& remote_path, const std::string& content);
  // Removes a file; a file that is already gone is fine.
  void remove(const std::string& remote_path);
  // Creates a directory unless it exists.
  void ensureDirectory(const std::string& remote_path);

 private:
  struct Handles;
  // Renames a fully written "<path>.partial" to its final name.
  void publish(const std::string& partial, const std::string& remote_path);

  std::unique_ptr<Handles> handles_;
  std::string where_;  // "user@host:port" for messages
};

}  // namespace banlieue::proxmox
