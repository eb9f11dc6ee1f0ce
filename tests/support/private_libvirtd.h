// A libvirtd of the test's own: its unix socket, pid file and log in a directory the test owns,
// no network listener, and one transient directory storage pool (nothing is written under
// /etc/libvirt). A pod the node agent runs shares the host's filesystem, so it reaches the
// daemon through `uri()` as the test does.
//
// libvirtd is a machine-wide singleton (its QEMU driver state lives under /run/libvirt): tests
// using this take the CTest resource lock `libvirtd`, and skip when another daemon runs.
#pragma once

#include <libvirt/libvirt.h>

#include <filesystem>
#include <set>
#include <string>

namespace banlieue::testing {

class PrivateLibvirtd {
 public:
  // Empty when this machine can run one now; otherwise why not (for GTEST_SKIP): not root,
  // libvirtd not installed, or a libvirtd this process did not start is running.
  static std::string unavailableReason();

  PrivateLibvirtd() = default;
  ~PrivateLibvirtd();
  PrivateLibvirtd(const PrivateLibvirtd&) = delete;
  PrivateLibvirtd& operator=(const PrivateLibvirtd&) = delete;

  // Starts the daemon under `dir` (created by the caller, reachable by root) and creates the
  // dir pool `pool` at `dir`/pool. On failure returns false with the reason in `error`.
  bool start(const std::filesystem::path& dir, const std::string& pool, std::string* error);

  const std::string& uri() const { return uri_; }  // qemu:///system?socket=<dir>/sock/...
  const std::string& pool() const { return pool_; }
  const std::filesystem::path& poolPath() const { return pool_path_; }
  virConnectPtr connection() const { return conn_; }
  // The pool's volumes after a refresh.
  std::set<std::string> volumes() const;
  // The daemon's log (for failure messages).
  std::string log() const;
  // Destroys the pool and stops the daemon (idempotent; the destructor does it too).
  void stop();

 private:
  std::filesystem::path dir_;
  std::filesystem::path pool_path_;
  std::string uri_;
  std::string pool_;
  pid_t pid_ = 0;
  virConnectPtr conn_ = nullptr;
};

}  // namespace banlieue::testing
