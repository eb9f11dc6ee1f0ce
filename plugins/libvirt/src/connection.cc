#include "plugins/libvirt/src/connection.h"

#include "plugins/libvirt/src/libvirt_handles.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>
#include <thread>

namespace banlieue::libvirt {

using sdk::Code;
using sdk::Error;

namespace fs = std::filesystem;
namespace json = sdk::json;

// ---- event loop --------------------------------------------------------------------------

namespace {

std::mutex loop_mutex;
int loop_users = 0;       // guarded by loop_mutex
std::thread loop_thread;  // guarded by loop_mutex
std::atomic<bool> loop_stop{false};
bool loop_registered = false;  // guarded by loop_mutex; the default impl registers only once

void silentErrorHandler(void* /*user_data*/, virErrorPtr /*error*/) {}

}  // namespace

void retainEventLoop() {
  std::lock_guard lock(loop_mutex);
  if (!loop_registered) {
    virSetErrorFunc(nullptr, silentErrorHandler);
    // libvirt writes to its sockets without MSG_NOSIGNAL: a daemon that goes away would kill
    // the whole process with SIGPIPE on the next write. Ignore it unless the host already
    // chose a handler (then that handler gets it, and libvirt still sees EPIPE).
    struct sigaction current {};
    if (sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) {
      signal(SIGPIPE, SIG_IGN);
    }
    if (virEventRegisterDefaultImpl() != 0) raiseLast("registering the libvirt event loop");
    loop_registered = true;
  }
  if (loop_users++ > 0) return;
  loop_stop = false;
  loop_thread = std::thread([] {
    while (!loop_stop.load()) {
      if (virEventRunDefaultImpl() != 0) break;
    }
  });
}

void releaseEventLoop() {
  std::thread finished;
  {
    std::lock_guard lock(loop_mutex);
    if (--loop_users > 0) return;
    loop_stop = true;
    // A zero-delay timer wakes virEventRunDefaultImpl so the thread sees the stop flag.
    int timer = virEventAddTimeout(
        0, [](int id, void*) { virEventRemoveTimeout(id); }, nullptr, nullptr);
    (void)timer;
    finished = std::move(loop_thread);
  }
  if (finished.joinable()) finished.join();
}

// ---- URIs --------------------------------------------------------------------------------

Error testDriverNotAllowed(const std::string& what) {
  return Error(
      Code::kInvalidArgument, "TestDriverNotAllowed",
      what +
          " is libvirt's test driver, whose VMs are simulated and never run; set "
          "spec.connection.allowTestDriver: true on the Provider to use it (testing only)");
}

UriParts parseUri(const std::string& uri) {
  UriParts p;
  size_t colon = uri.find(':');
  if (colon == std::string::npos || colon == 0) {
    throw Error(Code::kInvalidArgument, "InvalidEndpoint",
                "spec.connection.endpoint '" + uri +
                    "' is not a libvirt URI (driver[+transport]://[host]/path)");
  }
  p.scheme = uri.substr(0, colon);
  size_t plus = p.scheme.find('+');
  if (plus != std::string::npos) p.transport = p.scheme.substr(plus + 1);
  std::string driver = p.scheme.substr(0, plus);
  if (driver != "qemu" && driver != "test") {
    throw Error(
        Code::kInvalidArgument, "InvalidEndpoint",
        "spec.connection.endpoint: driver '" + driver + "' is not supported (qemu or test)");
  }
  if (!p.transport.empty() && p.transport != "tls" && p.transport != "ssh" &&
      p.transport != "unix" && p.transport != "tcp" && p.transport != "libssh2" &&
      p.transport != "libssh") {
    throw Error(Code::kInvalidArgument, "InvalidEndpoint",
                "spec.connection.endpoint: transport '" + p.transport + "' is not supported");
  }
  if (p.transport == "tcp") {
    throw Error(Code::kInvalidArgument, "InsecureTransport",
                "spec.connection.endpoint: plain tcp is unauthenticated and unencrypted; use "
                "qemu+tls:// or qemu+ssh://");
  }
  if (uri.compare(colon, 3, "://") != 0) return p;
  size_t start = colon + 3;
  size_t end = uri.find_first_of("/?", start);
  std::string authority =
      uri.substr(start, end == std::string::npos ? std::string::npos : end - start);
  if (size_t at = authority.rfind('@'); at != std::string::npos)
    authority = authority.substr(at + 1);
  if (!authority.empty() && authority.front() == '[') {
    size_t close = authority.find(']');
    p.host = authority.substr(1, close == std::string::npos ? std::string::npos : close - 1);
    if (close != std::string::npos && close + 1 < authority.size() && authority[close + 1] == ':') {
      p.port = std::atoi(authority.c_str() + close + 2);
    }
  } else if (size_t c = authority.find(':'); c != std::string::npos) {
    p.host = authority.substr(0, c);
    p.port = std::atoi(authority.c_str() + c + 1);
  } else {
    p.host = authority;
  }
  return p;
}

std::string connectionUri(const std::string& endpoint, const fs::path& pki_dir, bool has_ssh_key,
                          bool insecure_skip_tls_verify) {
  UriParts parts = parseUri(endpoint);
  std::string uri = endpoint;
  auto add = [&uri](const std::string& key, const std::string& value) {
    if (uri.find("?" + key + "=") != std::string::npos ||
        uri.find("&" + key + "=") != std::string::npos) {
      return;  // the endpoint's own setting wins
    }
    uri += (uri.find('?') == std::string::npos ? "?" : "&") + key + "=" + value;
  };
  if (parts.transport == "tls") {
    add("pkipath", pki_dir.string());
    if (insecure_skip_tls_verify) add("no_verify", "1");
  }
  if (parts.transport == "ssh" || parts.transport == "libssh2" || parts.transport == "libssh") {
    if (has_ssh_key) add("keyfile", (pki_dir / "id_ssh").string());
    if (parts.transport == "ssh") add("no_tty", "1");  // never prompt on a controller's stdin
  }
  return uri;
}

// ---- connection --------------------------------------------------------------------------

namespace {

void writePrivate(const fs::path& path, std::string_view content) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    throw Error(Code::kInternal, "CredentialWriteFailed", "cannot create " + path.string());
  }
  size_t done = 0;
  while (done < content.size()) {
    ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n <= 0) {
      ::close(fd);
      throw Error(Code::kInternal, "CredentialWriteFailed", "cannot write " + path.string());
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
}

// Overwrites a credential file before unlinking it, so the key does not linger in free blocks
// of a tmpfs-less /tmp longer than needed.
void shred(const fs::path& path) {
  std::error_code ec;
  auto size = fs::file_size(path, ec);
  if (!ec && size > 0) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd >= 0) {
      std::string zeros(size, '\0');
      (void)!::write(fd, zeros.data(), zeros.size());
      ::close(fd);
    }
  }
  fs::remove(path, ec);
}

// Bounds the one step libvirt cannot bound itself: a TCP connect to an unreachable host.
void probeTcp(const UriParts& parts, std::chrono::milliseconds budget) {
  int port = parts.port;
  if (port == 0) port = parts.transport == "tls" ? 16514 : 22;
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(parts.host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0 ||
      found == nullptr) {
    throw Error(Code::kUnavailable, "HostUnresolvable",
                "cannot resolve libvirt host '" + parts.host + "'");
  }
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> guard(found, freeaddrinfo);
  std::string last = "no address";
  for (addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
    int fd =
        ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) continue;
    int rc = ::connect(fd, ai->ai_addr, ai->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd pfd{fd, POLLOUT, 0};
      rc = ::poll(&pfd, 1, static_cast<int>(std::max<int64_t>(1, budget.count())));
      if (rc == 1) {
        int err = 0;
        socklen_t len = sizeof(err);
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
        rc = err == 0 ? 0 : -1;
        if (err != 0) last = std::strerror(err);
      } else {
        rc = -1;
        last = "timed out";
      }
    } else if (rc != 0) {
      last = std::strerror(errno);
    }
    ::close(fd);
    if (rc == 0) return;
  }
  throw Error(Code::kUnavailable, "HostUnreachable",
              "cannot reach libvirt at " + parts.host + ":" + std::to_string(port) + ": " + last);
}

}  // namespace

Connection::Connection(const sdk::InstanceConfig& config, const sdk::Call& call) {
  if (config.endpoint.empty()) {
    throw Error(Code::kInvalidArgument, "MissingEndpoint", "spec.connection.endpoint is required");
  }
  parts_ = parseUri(config.endpoint);
  if (isTestDriver() && !config.allow_test_driver) throw testDriverNotAllowed(config.endpoint);
  writeCredentials(config);
  try {
    uri_ = connectionUri(config.endpoint, pki_dir_,
                         config.credentials.get("ssh-privatekey").has_value(),
                         config.insecure_skip_tls_verify);
    retainEventLoop();
  } catch (...) {
    removeCredentials();
    throw;
  }
  try {
    open(call);
  } catch (...) {
    releaseEventLoop();
    removeCredentials();
    throw;
  }
}

Connection::~Connection() {
  {
    std::lock_guard lock(mutex_);
    if (conn_ != nullptr) {
      if (lifecycle_callback_ >= 0) {
        (void)virConnectDomainEventDeregisterAny(conn_, lifecycle_callback_);
      }
      virConnectClose(conn_);
      conn_ = nullptr;
    }
  }
  releaseEventLoop();
  removeCredentials();
}

void Connection::writeCredentials(const sdk::InstanceConfig& config) {
  bool tls = parts_.transport == "tls";
  auto key = config.credentials.get("ssh-privatekey");
  if (!tls && !key) return;
  std::random_device rd;
  char name[40];
  std::snprintf(name, sizeof(name), "banlieue-libvirt-%08x%08x", rd(), rd());
  pki_dir_ = fs::temp_directory_path() / name;
  std::error_code ec;
  if (!fs::create_directory(pki_dir_, ec) || ec) {
    throw Error(Code::kInternal, "CredentialWriteFailed", "cannot create " + pki_dir_.string());
  }
  fs::permissions(pki_dir_, fs::perms::owner_all, ec);
  try {
    if (tls) {
      auto cert = config.credentials.get("tls.crt");
      auto tls_key = config.credentials.get("tls.key");
      std::string ca(config.credentials.get("ca.crt").value_or(""));
      if (ca.empty()) ca = config.ca_bundle;
      if (ca.empty()) {
        ca = json::stringOr(config.provider, "spec.connection.caBundle.inline");
      }
      if (!cert || !tls_key || cert->empty() || tls_key->empty()) {
        throw Error(Code::kInvalidArgument, "MissingCredentials",
                    "qemu+tls needs the credentials Secret keys tls.crt and tls.key (the client "
                    "certificate is the credential)");
      }
      if (ca.empty() && !config.insecure_skip_tls_verify) {
        throw Error(Code::kInvalidArgument, "MissingCABundle",
                    "qemu+tls needs a CA bundle to verify the daemon: the credentials key ca.crt "
                    "or spec.connection.caBundle");
      }
      writePrivate(pki_dir_ / "clientcert.pem", *cert);
      writePrivate(pki_dir_ / "clientkey.pem", *tls_key);
      // libvirt insists on a CA file even with no_verify=1.
      writePrivate(pki_dir_ / "cacert.pem",
                   ca.empty() ? std::string_view(*cert) : std::string_view(ca));
    }
    if (key) writePrivate(pki_dir_ / "id_ssh", *key);
  } catch (...) {
    removeCredentials();
    throw;
  }
}

void Connection::removeCredentials() {
  if (pki_dir_.empty()) return;
  std::error_code ec;
  for (const char* f : {"clientcert.pem", "clientkey.pem", "cacert.pem", "id_ssh"}) {
    shred(pki_dir_ / f);
  }
  fs::remove_all(pki_dir_, ec);
  pki_dir_.clear();
}

void Connection::open(const sdk::Call& call) {
  if (!parts_.host.empty() && (parts_.transport == "tls" || parts_.transport == "ssh" ||
                               parts_.transport == "libssh2" || parts_.transport == "libssh")) {
    probeTcp(parts_,
             std::min<std::chrono::milliseconds>(call.remaining(), std::chrono::seconds(10)));
  }
  virConnectPtr conn = virConnectOpenAuth(uri_.c_str(), nullptr, 0);
  if (conn == nullptr) {
    LibvirtError e = LibvirtError::last();
    std::string what = "connecting to " + uri_;
    Error err = toError(e, what);
    if (err.code() == Code::kInternal || err.code() == Code::kNotFound) {
      // Anything unclassified while opening means the daemon cannot be used right now.
      throw Error(Code::kUnavailable, "ConnectFailed", err.what());
    }
    throw err;
  }
  virConnSetErrorFunc(conn, nullptr, silentErrorHandler);
  // Keepalive (5 s interval, 3 missed) bounds how long a call waits on a dead daemon. The test
  // driver has no RPC and answers 1 (not supported), which is fine.
  if (parts_.scheme != "test") (void)virConnectSetKeepAlive(conn, 5, 3);
  conn_ = conn;
}

virConnectPtr Connection::acquire(const sdk::Call& call) {
  std::lock_guard lock(mutex_);
  if (conn_ != nullptr && virConnectIsAlive(conn_) == 1) {
    registerLifecycle();  // when followed and an earlier registration failed
    virConnectRef(conn_);
    return conn_;
  }
  const bool reopening = conn_ != nullptr;
  if (reopening) {
    BANLIEUE_LOG(kWarn, "libvirt connection to " + uri_ + " was lost; reconnecting");
    if (lifecycle_callback_ >= 0) {
      (void)virConnectDomainEventDeregisterAny(conn_, lifecycle_callback_);
      lifecycle_callback_ = -1;
    }
    virConnectClose(conn_);
    conn_ = nullptr;
    ++reconnects_;
  }
  open(call);
  registerLifecycle();
  // The events of the time without a connection are gone: whoever follows must look again.
  if (reopening && lost_) lost_();
  virConnectRef(conn_);
  return conn_;
}

void Connection::followDomains(const sdk::Call& call,
                               std::function<void(const std::string& uuid)> changed,
                               std::function<void()> lost) {
  {
    std::lock_guard lock(mutex_);
    changed_ = std::move(changed);
    lost_ = std::move(lost);
    if (conn_ != nullptr) registerLifecycle();
  }
  ConnRef opened(acquire(call));  // opens (and registers) when not open yet
}

void Connection::registerLifecycle() {
  if (!changed_ || conn_ == nullptr || lifecycle_callback_ >= 0) return;
  lifecycle_callback_ =
      virConnectDomainEventRegisterAny(conn_, nullptr, VIR_DOMAIN_EVENT_ID_LIFECYCLE,
                                       VIR_DOMAIN_EVENT_CALLBACK(onLifecycle), this, nullptr);
  if (lifecycle_callback_ < 0) {
    raiseLast("following the domains' lifecycle events on " + uri_);
  }
}

int Connection::onLifecycle(virConnectPtr /*conn*/, virDomainPtr domain, int /*event*/,
                            int /*detail*/, void* opaque) {
  char uuid[VIR_UUID_STRING_BUFLEN] = {};
  if (virDomainGetUUIDString(domain, uuid) == 0) {
    static_cast<Connection*>(opaque)->changed_(uuid);
  }
  return 0;
}

}  // namespace banlieue::libvirt
