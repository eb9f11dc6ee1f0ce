// A libvirtd of the test's own: its unix socket, pid file and log in a directory the test owns,
// and one transient directory storage pool (nothing is written under /etc/libvirt). The test
// itself uses the unix socket (`uri()`). A pod reaches the daemon as it reaches a libvirt host
// on a real site: over TLS at an address of the cluster's own network (start() with
// `tls_address`, usually LocalCluster::podReachableAddress()), with certificates generated per
// daemon under its directory: a CA, a server certificate for that address, and a client
// certificate the daemon allows by its DN (tls_allowed_dn_list). The daemon verifies the
// client's certificate and the client verifies the daemon's: nothing runs with no_verify.
//
// libvirtd keeps machine-wide state (its QEMU driver's lock under /run/libvirt, persistent
// domains under /etc/libvirt): the daemon runs in a mount namespace of its own where those
// directories are the test's, so it runs beside any other libvirtd (the system's,
// `scripts/dev.sh --real`'s) and leaves nothing in the machine's. It runs QEMU domains (TCG or
// KVM) without virtlogd: QEMU's output goes to a file. It also runs in a PID namespace of its
// own whose init is the test process's child: when the test process dies, however it dies, the
// init, the daemon and every QEMU the daemon started die with it. Neither the daemon nor its
// domains ever outlive their test.
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

  struct Options {
    // Also listen with TLS on this IPv4 address, on a free port. Empty: the unix socket only.
    std::string tls_address;
    // The host name libvirtd reports (virConnectGetHostname), in a UTS namespace of its own:
    // several daemons on this machine then stand for several hosts, each its own failure
    // domain. A name with a dot, which libvirt takes as it is (no resolver lookup). Empty: the
    // machine's.
    std::string hostname;
  };

  // Starts the daemon under `dir` (created by the caller, reachable by root) and creates the
  // dir pool `pool` at `dir`/pool. On failure returns false with the reason in `error`.
  // Call it from the thread that outlives the daemon (the test's main thread): the daemon is
  // killed when the thread that started it ends.
  bool start(const std::filesystem::path& dir, const std::string& pool, std::string* error,
             const Options& options);
  bool start(const std::filesystem::path& dir, const std::string& pool, std::string* error) {
    return start(dir, pool, error, Options{});
  }

  // Restarts libvirtd alone, as a host's daemon restarts under its clients: its running domains
  // keep running, its connections break, and it serves the same socket and TLS port again.
  // connection() is a new one afterwards. On failure returns false with the reason in `error`.
  bool restart(std::string* error);

  const std::string& uri() const { return uri_; }  // qemu:///system?socket=<dir>/sock/...
  // qemu+tls://<tls_address>:<port>/system; empty without a TLS listener.
  const std::string& tlsUri() const { return tls_uri_; }
  // The client's PKI directory in libvirt's layout (cacert.pem, clientcert.pem, clientkey.pem):
  // `virsh -c '<tlsUri()>?pkipath=<pkiPath()>'` connects as the allowed client.
  std::filesystem::path pkiPath() const { return dir_ / "pki"; }
  // The PEMs a Provider's credentials Secret carries (ca.crt, tls.crt, tls.key).
  std::string caPem() const;
  std::string clientCertPem() const;
  std::string clientKeyPem() const;
  // A client signed by the same CA whose DN the daemon does not allow, in the same layout.
  std::filesystem::path intruderPkiPath() const { return dir_ / "pki" / "intruder"; }
  const std::string& pool() const { return pool_; }
  const std::filesystem::path& poolPath() const { return pool_path_; }
  virConnectPtr connection() const { return conn_; }
  // The pool's volumes after a refresh.
  std::set<std::string> volumes() const;
  // Another transient dir pool, `name`, in <dir>/pools/<name> (tests of more than one pool).
  // Not made again by restart().
  bool addPool(const std::string& name, std::string* error);
  std::filesystem::path poolPath(const std::string& name) const { return dir_ / "pools" / name; }
  // The volumes of pool `name` after a refresh (empty when there is no such pool).
  std::set<std::string> volumes(const std::string& name) const;
  // The daemon's log (for failure messages).
  std::string log() const;
  // Destroys the pool and stops the daemon (idempotent; the destructor does it too).
  void stop();

 private:
  std::filesystem::path dir_;
  std::filesystem::path pool_path_;
  std::string uri_;
  std::string tls_uri_;
  std::string pool_;
  // Whether the daemon's namespace still runs (reaps its init once it has exited).
  bool running();
  // Starts the namespace's init, which starts libvirtd; its host pid goes to <dir>/daemon.pid.
  bool launch(std::string* error);
  // Waits until the daemon serves its socket (and TLS port), and connects to it.
  bool waitUntilServing(std::string* error);
  // The CA, the server certificate for `address` and the clients, under dir_/pki.
  bool makePki(const std::string& address, std::string* error);
  std::string exitDescription() const;

  std::string tls_address_;
  std::string hostname_;  // Options::hostname, kept for restart()
  int tls_port_ = 0;
  pid_t pid_ = 0;          // the namespace's init, in the test's PID namespace
  int parent_alive_ = -1;  // the init sees this pipe hang up when the test process is gone
  bool exited_ = false;
  int wait_status_ = 0;
  virConnectPtr conn_ = nullptr;
};

}  // namespace banlieue::testing
