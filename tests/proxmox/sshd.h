// A real OpenSSH server on loopback for one test: a throwaway ed25519 host key, a client key
// authorised for the user the test runs as, SFTP through internal-sftp. It stands in for a
// PVE node's sshd (the one piece of a node the plugin reaches besides the API), so the
// plugin's libssh2 code runs against the real protocol, host key pinning included.
#pragma once

#include <sys/types.h>

#include <string>

namespace banlieue::proxmox::testing {

class Sshd {
 public:
  Sshd();  // throws std::runtime_error (with sshd's log) when it does not come up
  ~Sshd();
  Sshd(const Sshd&) = delete;
  Sshd& operator=(const Sshd&) = delete;

  int port() const { return port_; }
  const std::string& user() const { return user_; }
  const std::string& clientKey() const { return client_key_; }  // OpenSSH private key
  // "[127.0.0.1]:<port> ssh-ed25519 AAAA..." pinning this server's host key.
  const std::string& knownHosts() const { return known_hosts_; }
  // The same line with another, freshly generated ed25519 key: a pin that must be refused.
  std::string wrongKnownHosts() const;

 private:
  pid_t pid_ = -1;
  int port_ = 0;
  std::string dir_;
  std::string user_;
  std::string client_key_;
  std::string known_hosts_;
};

// Runs a shell command, throws std::runtime_error with its output when it fails.
std::string run(const std::string& command);
std::string readFile(const std::string& path);

}  // namespace banlieue::proxmox::testing
