#include "tests/support/private_libvirtd.h"

#include "tests/support/free_port.h"
#include "tests/support/local_cluster.h"
#include "tests/support/read_file.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <libvirt/virterror.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

namespace banlieue::testing {
namespace {

namespace fs = std::filesystem;

constexpr const char* kLibvirtd = "/usr/sbin/libvirtd";
// Where a system libvirtd keeps machine-wide state (the QEMU driver's lock and pid file among
// it). The private daemon gets its own copy of each, so it runs beside any other libvirtd.
constexpr const char* kStateDirs[] = {"/run/libvirt", "/var/lib/libvirt", "/var/cache/libvirt"};
// The DN the daemon allows (tls_allowed_dn_list), and one signed by the same CA it refuses.
constexpr const char* kClientDn = "O=banlieue,CN=banlieue-provider";
constexpr const char* kClientSubject = "/O=banlieue/CN=banlieue-provider";
constexpr const char* kIntruderSubject = "/O=banlieue/CN=intruder";

// An IPv4 address as a sockaddr; false when `address` is not one.
bool inetAddress(const std::string& address, int port, sockaddr_in* out) {
  *out = {};
  out->sin_family = AF_INET;
  out->sin_port = htons(static_cast<uint16_t>(port));
  return ::inet_pton(AF_INET, address.c_str(), &out->sin_addr) == 1;
}

bool listening(const std::string& address, int port) {
  sockaddr_in addr{};
  if (!inetAddress(address, port, &addr)) return false;
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  ::close(fd);
  return ok;
}

}  // namespace

std::string PrivateLibvirtd::unavailableReason() {
  if (::geteuid() != 0) return "needs root to run a system libvirtd";
  return {};
}

bool PrivateLibvirtd::makePki(const std::string& address, std::string* error) {
  const fs::path pki = pkiPath();
  fs::create_directories(pki / "intruder");
  fs::permissions(pki, fs::perms::owner_all);
  std::ofstream(pki / "server.ext")
      << "basicConstraints=critical,CA:FALSE\n"
      << "keyUsage=critical,digitalSignature,keyEncipherment\n"
      << "extendedKeyUsage=serverAuth\nsubjectAltName=IP:" << address << "\n";
  std::ofstream(pki / "client.ext") << "basicConstraints=critical,CA:FALSE\n"
                                    << "keyUsage=critical,digitalSignature,keyEncipherment\n"
                                    << "extendedKeyUsage=clientAuth\n";
  // <prefix>key.pem and <prefix>cert.pem, signed by the CA.
  auto issue = [](const std::string& prefix, const std::string& subject, const char* ext) {
    return "openssl req -newkey rsa:2048 -nodes -keyout " + prefix + "key.pem -out " + prefix +
           ".csr -subj " + shellQuote(subject) + " && openssl x509 -req -in " + prefix +
           ".csr -CA cacert.pem -CAkey ca.key -CAcreateserial -days 2 -out " + prefix +
           "cert.pem -extfile " + ext;
  };
  const std::string commands[] = {
      "openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out cacert.pem -days 2 "
      "-subj /CN=banlieue-test-libvirtd-ca -addext basicConstraints=critical,CA:TRUE "
      "-addext keyUsage=critical,keyCertSign,cRLSign",
      issue("server", "/O=banlieue/CN=" + address, "server.ext"),
      issue("client", kClientSubject, "client.ext"),
      issue("intruder/client", kIntruderSubject, "client.ext") + " && cp cacert.pem intruder/",
  };
  for (const std::string& command : commands) {
    auto r = runCommand("cd " + shellQuote(pki.string()) + " && " + command);
    if (r.exit_code != 0) {
      *error = "making the daemon's certificates failed: " + command + "\n" + r.output;
      return false;
    }
  }
  return true;
}

std::string PrivateLibvirtd::caPem() const {
  return readFile(pkiPath() / "cacert.pem");
}
std::string PrivateLibvirtd::clientCertPem() const {
  return readFile(pkiPath() / "clientcert.pem");
}
std::string PrivateLibvirtd::clientKeyPem() const {
  return readFile(pkiPath() / "clientkey.pem");
}

bool PrivateLibvirtd::start(const fs::path& dir, const std::string& pool, std::string* error,
                            const Options& options) {
  dir_ = dir;
  pool_ = pool;
  pool_path_ = dir / "pool";
  if (!fs::exists(kLibvirtd)) {
    *error = std::string(kLibvirtd) + " is missing: run scripts/setup.sh";
    return false;
  }
  fs::create_directories(dir / "sock");
  fs::create_directories(pool_path_);
  std::ofstream conf_file(dir / "libvirtd.conf");
  conf_file << "listen_tcp = 0\n"
            << "unix_sock_dir = \"" << (dir / "sock").string() << "\"\n"
            << "log_outputs = \"3:file:" << (dir / "libvirtd.log").string() << "\"\n";
  int tls_port = 0;
  const bool tls = !options.tls_address.empty();
  if (tls) {
    sockaddr_in unused{};
    if (!inetAddress(options.tls_address, 0, &unused)) {
      *error = "tls_address '" + options.tls_address + "' is not an IPv4 address";
      return false;
    }
    if (!makePki(options.tls_address, error)) return false;
    tls_port = freePort(options.tls_address);
    if (tls_port == 0) {
      *error = "no free port on " + options.tls_address + ": " + std::strerror(errno);
      return false;
    }
    const fs::path pki = pkiPath();
    conf_file << "listen_tls = 1\n"
              << "listen_addr = \"" << options.tls_address << "\"\n"
              << "tls_port = \"" << tls_port << "\"\n"
              << "key_file = \"" << (pki / "serverkey.pem").string() << "\"\n"
              << "cert_file = \"" << (pki / "servercert.pem").string() << "\"\n"
              << "ca_file = \"" << (pki / "cacert.pem").string() << "\"\n"
              << "auth_tls = \"none\"\n"
              << "tls_no_verify_certificate = 0\n"
              << "tls_allowed_dn_list = [\"" << kClientDn << "\"]\n";
  } else {
    conf_file << "listen_tls = 0\n";
  }
  conf_file.close();
  // The daemon's machine-wide state directories, replaced by the test's own in the daemon's
  // mount namespace. Every string the child needs is built before fork().
  std::vector<std::pair<std::string, std::string>> binds;
  for (const char* state : kStateDirs) {
    fs::path own = dir / "state" / fs::path(state).filename();
    fs::create_directories(own);
    fs::create_directories(state);  // a mount point (/run/libvirt exists only once libvirtd ran)
    binds.emplace_back(own.string(), state);
  }
  const std::string conf = (dir / "libvirtd.conf").string();
  const std::string pid_file = (dir / "libvirtd.pid").string();
  const std::string output = (dir / "libvirtd.out").string();
  const pid_t parent = ::getpid();

  pid_ = ::fork();
  if (pid_ < 0) {
    *error = std::string("fork: ") + std::strerror(errno);
    pid_ = 0;
    return false;
  }
  if (pid_ == 0) {
    // Dies with the test (SIGKILL of the test included): an orphaned daemon would hold the
    // test's pool and socket. Only async-signal-safe calls from here to exec.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(125);
    if (::unshare(CLONE_NEWNS) != 0 ||
        ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
      ::_exit(124);
    }
    for (const auto& [own, state] : binds) {
      if (::mount(own.c_str(), state.c_str(), nullptr, MS_BIND, nullptr) != 0) ::_exit(123);
    }
    int fd = ::open(output.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd >= 0) {
      ::dup2(fd, STDOUT_FILENO);
      ::dup2(fd, STDERR_FILENO);
    }
    // --listen: the TLS listener (libvirtd opens no TCP socket without it).
    ::execl(kLibvirtd, "libvirtd", "-f", conf.c_str(), "-p", pid_file.c_str(),
            tls ? "--listen" : nullptr, nullptr);
    ::_exit(127);
  }
  const fs::path socket = dir / "sock/libvirt-sock";
  if (!LocalCluster::eventually([&] { return fs::exists(socket) || !running(); },
                                std::chrono::seconds(30)) ||
      !running()) {
    *error =
        "libvirtd made no socket in 30 s (" + exitDescription() + "): " + readFile(output) + log();
    return false;
  }
  if (tls && (!LocalCluster::eventually(
                  [&] { return listening(options.tls_address, tls_port) || !running(); },
                  std::chrono::seconds(30)) ||
              !running())) {
    *error = "libvirtd did not listen on " + options.tls_address + ":" + std::to_string(tls_port) +
             " in 30 s (" + exitDescription() + "): " + readFile(output) + log();
    return false;
  }
  if (tls) {
    tls_uri_ = "qemu+tls://" + options.tls_address + ":" + std::to_string(tls_port) + "/system";
  }
  uri_ = "qemu:///system?socket=" + socket.string();
  conn_ = virConnectOpen(uri_.c_str());
  if (conn_ == nullptr) {
    *error = std::string("cannot connect to the private libvirtd: ") + virGetLastErrorMessage();
    return false;
  }
  std::string xml = "<pool type='dir'><name>" + pool_ + "</name><target><path>" +
                    pool_path_.string() + "</path></target></pool>";
  virStoragePoolPtr p = virStoragePoolCreateXML(conn_, xml.c_str(), 0);
  if (p == nullptr) {
    *error = std::string("cannot create the dir pool: ") + virGetLastErrorMessage();
    return false;
  }
  virStoragePoolFree(p);
  return true;
}

bool PrivateLibvirtd::running() {
  if (pid_ <= 0) return false;
  if (exited_) return false;
  pid_t done = ::waitpid(pid_, &wait_status_, WNOHANG);
  if (done == pid_) exited_ = true;
  return !exited_;
}

std::string PrivateLibvirtd::exitDescription() const {
  if (!exited_) return "running";
  if (WIFEXITED(wait_status_)) {
    switch (WEXITSTATUS(wait_status_)) {
      case 123: return "could not bind its state directories";
      case 124: return "could not make a mount namespace of its own";
      case 127: return "could not exec " + std::string(kLibvirtd);
      default: return "exited with " + std::to_string(WEXITSTATUS(wait_status_));
    }
  }
  if (WIFSIGNALED(wait_status_))
    return "killed by signal " + std::to_string(WTERMSIG(wait_status_));
  return "stopped";
}

std::set<std::string> PrivateLibvirtd::volumes() const {
  std::set<std::string> names;
  if (conn_ == nullptr) return names;
  virStoragePoolPtr p = virStoragePoolLookupByName(conn_, pool_.c_str());
  if (p == nullptr) return names;
  virStoragePoolRefresh(p, 0);
  virStorageVolPtr* vols = nullptr;
  int n = virStoragePoolListAllVolumes(p, &vols, 0);
  for (int i = 0; i < n; ++i) {
    if (const char* name = virStorageVolGetName(vols[i])) names.insert(name);
    virStorageVolFree(vols[i]);
  }
  free(vols);  // NOLINT(cppcoreguidelines-no-malloc): libvirt's allocation
  virStoragePoolFree(p);
  return names;
}

std::string PrivateLibvirtd::log() const {
  return readFile(dir_ / "libvirtd.log");
}

void PrivateLibvirtd::stop() {
  if (conn_ != nullptr) {
    if (virStoragePoolPtr p = virStoragePoolLookupByName(conn_, pool_.c_str())) {
      virStoragePoolDestroy(p);
      virStoragePoolFree(p);
    }
    virConnectClose(conn_);
    conn_ = nullptr;
  }
  if (pid_ > 0) {
    if (running()) ::kill(pid_, SIGTERM);
    LocalCluster::eventually([this] { return !running(); }, std::chrono::seconds(15));
    if (running()) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &wait_status_, 0);
    }
    pid_ = 0;
    exited_ = false;
  }
}

PrivateLibvirtd::~PrivateLibvirtd() {
  stop();
}

}  // namespace banlieue::testing
