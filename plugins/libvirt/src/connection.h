// One libvirt connection per banlieue Provider: builds the URI from the Provider's endpoint,
// writes TLS/SSH credentials to a private temporary directory (0700, files 0600, removed when
// the connection is destroyed), turns on keepalive, and reopens the connection when the daemon
// went away (restart) before the next operation uses it.
#pragma once

#include <banlieue/sdk/host.h>
#include <banlieue/sdk/payloads.h>
#include <libvirt/libvirt.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <mutex>
#include <string>

namespace banlieue::libvirt {

// Parts of a libvirt URI the plugin cares about.
struct UriParts {
  std::string scheme;     // qemu, qemu+tls, qemu+ssh, test, ...
  std::string transport;  // tls, ssh, tcp, unix, or empty (local)
  std::string host;       // may be empty
  int port = 0;           // 0: the transport's default
};

UriParts parseUri(const std::string& uri);

// INVALID_ARGUMENT/TestDriverNotAllowed for `what` (an endpoint or annotation using libvirt's
// test driver) on a Provider without spec.connection.allowTestDriver: true.
sdk::Error testDriverNotAllowed(const std::string& what);

// The URI to open: the endpoint with pkipath/keyfile/no_verify/no_tty query parameters added
// for the credentials written to pki_dir. Exposed for tests.
std::string connectionUri(const std::string& endpoint, const std::filesystem::path& pki_dir,
                          bool has_ssh_key, bool insecure_skip_tls_verify);

class Connection {
 public:
  // Validates the endpoint, writes credentials and opens the connection within the call's
  // deadline. Throws sdk::Error (INVALID_ARGUMENT for a bad endpoint, missing credentials or
  // the test driver without spec.connection.allowTestDriver,
  // UNAVAILABLE when the daemon cannot be reached, UNAUTHENTICATED when TLS is refused).
  Connection(const sdk::InstanceConfig& config, const sdk::Call& call);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // The live connection, reopened first when the previous one died. The pointer carries a
  // reference the caller must release with virConnectClose (ConnRef does).
  virConnectPtr acquire(const sdk::Call& call);

  // From now on, every lifecycle event of a domain on this connection (defined, started,
  // stopped, undefined, …; the same on each connection it reopens) calls `changed` with the
  // domain's UUID, on the event loop's thread; a reopen, which may have missed events, calls
  // `lost`. Opens the connection first when it is not open (within the call's deadline).
  void followDomains(const sdk::Call& call, std::function<void(const std::string& uuid)> changed,
                     std::function<void()> lost);

  const std::string& uri() const { return uri_; }  // safe to log: no secrets in it
  bool isTestDriver() const { return parts_.scheme == "test"; }
  int reconnects() const { return reconnects_; }

 private:
  void open(const sdk::Call& call);
  void registerLifecycle();  // on conn_, when followed; mutex_ held
  static int onLifecycle(virConnectPtr conn, virDomainPtr domain, int event, int detail,
                         void* opaque);
  void writeCredentials(const sdk::InstanceConfig& config);
  void removeCredentials();

  UriParts parts_;
  std::string uri_;
  std::filesystem::path pki_dir_;
  std::mutex mutex_;
  virConnectPtr conn_ = nullptr;  // guarded by mutex_
  int reconnects_ = 0;
  std::function<void(const std::string&)> changed_;  // set once, by followDomains
  std::function<void()> lost_;
  int lifecycle_callback_ = -1;  // on conn_; guarded by mutex_
};

// Holds one reference to a connection for the length of an operation.
class ConnRef {
 public:
  explicit ConnRef(virConnectPtr conn) : conn_(conn) {}
  ~ConnRef() {
    if (conn_ != nullptr) virConnectClose(conn_);
  }
  ConnRef(const ConnRef&) = delete;
  ConnRef& operator=(const ConnRef&) = delete;
  virConnectPtr get() const { return conn_; }

 private:
  virConnectPtr conn_;
};

// Starts the process-wide libvirt event loop (needed for keepalive) when the first connection
// opens and stops it when the last one closes. Also silences libvirt's default stderr error
// printer: errors are reported through replies instead.
void retainEventLoop();
void releaseEventLoop();

}  // namespace banlieue::libvirt
