// A libvirtd of the test's own: its unix socket, pid file and log in a directory the test owns,
// no network listener, and one transient directory storage pool (nothing is written under
// /etc/libvirt). A pod the node agent runs shares the host's filesystem, so it reaches the
// daemon through `uri()` as the test does.
//
// libvirtd keeps machine-wide state (its QEMU driver's lock under /run/libvirt): the daemon runs
// in a mount namespace of its own where those directories are the test's, so it runs beside any
// other libvirtd (the system's, `scripts/dev.sh --real`'s). It is the test process's child and
// is killed when the test process dies, however it dies: a daemon never outlives its test.
// Tests still take the CTest resource lock `libvirtd` (one QEMU at a time on 2 cores).
#pragma once

#include <libvirt/libvirt.h>

#include <filesystem>
#include <set>
#include <string>

namespace banlieue::testing {

class PrivateLibvirtd {
 public:
  // Empty when this machine can run one; otherwise why not (for GTEST_SKIP, allowed by
  // tests/skip_allowlist.txt): only root can. Anything else that stops it fails `start`.
  static std::string unavailableReason();

  PrivateLibvirtd() = default;
  ~PrivateLibvirtd();
  PrivateLibvirtd(const PrivateLibvirtd&) = delete;
  PrivateLibvirtd& operator=(const PrivateLibvirtd&) = delete;

  // Starts the daemon under `dir` (created by the caller, reachable by root) and creates the
  // dir pool `pool` at `dir`/pool. On failure returns false with the reason in `error`.
  // Call it from the thread that outlives the daemon (the test's main thread): the daemon is
  // killed when the thread that started it ends.
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
  // Whether the daemon still runs (reaps it once it has exited).
  bool running();
  std::string exitDescription() const;

  pid_t pid_ = 0;
  bool exited_ = false;
  int wait_status_ = 0;
  virConnectPtr conn_ = nullptr;
};

}  // namespace banlieue::testing
