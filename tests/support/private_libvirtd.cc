#include "tests/support/private_libvirtd.h"

#include "tests/support/free_port.h"
#include "tests/support/local_cluster.h"
#include "tests/support/read_file.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <libvirt/virterror.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
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
// it), QEMU's per-domain logs, and its configuration (persistent domains and networks are
// written under /etc/libvirt/qemu, and the QEMU driver reads /etc/libvirt/qemu.conf). The
// private daemon gets its own copy of each, so it runs beside any other libvirtd and leaves
// nothing behind in the machine's.
constexpr const char* kPrivateDirs[] = {"/run/libvirt", "/var/lib/libvirt", "/var/cache/libvirt",
                                        "/var/log/libvirt", "/etc/libvirt"};
// What QEMU needs beyond the defaults: its console and stderr go to a file, so no virtlogd
// (another machine-wide daemon) is needed.
constexpr const char* kQemuConf = "stdio_handler = \"file\"\n";

// Exit codes of the namespace's init (initMain), read back by exitDescription().
enum InitExit : int {
  kNoFork = 120,
  kNoProc = 122,
  kNoPrivateDirs = 123,
  kNoPrivateMounts = 124,
  kParentGone = 125,
  kNoHostname = 126,
  kNoExec = 127,
};

// Everything the namespace's init needs, built before clone(): after it the child may make
// only async-signal-safe calls (the test process has other threads).
struct InitPlan {
  std::vector<std::pair<std::string, std::string>> binds;  // the test's directory → the machine's
  std::string output;                                      // the daemon's stdout and stderr
  std::vector<std::string> args;
  std::vector<char*> argv;  // args as execv wants them
  std::string hostname;     // empty: the machine's (no UTS namespace)
  int parent_alive = -1;    // a pipe's read end: hung up once the test process is gone
  int parent_alive_write = -1;
  sigset_t handled;  // blocked, and taken with sigwaitinfo
};

// The test's own copy of one of the machine's libvirt directories: /var/lib/libvirt is
// <dir>/state/var-lib-libvirt.
fs::path privateCopy(const fs::path& dir, const std::string& machine) {
  std::string name = machine.substr(1);
  std::replace(name.begin(), name.end(), '/', '-');
  return dir / "state" / name;
}

pid_t spawnDaemon(const InitPlan& plan) {
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  sigset_t none;
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  const int fd = ::open(plan.output.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd >= 0) {
    ::dup2(fd, STDOUT_FILENO);
    ::dup2(fd, STDERR_FILENO);
  }
  ::execv(kLibvirtd, plan.argv.data());
  ::_exit(kNoExec);
}

// Process 1 of the daemon's PID namespace: libvirtd's parent, the reaper of the QEMU processes
// libvirtd starts (they are orphaned to it), and the reason none of them outlives the test:
// when it exits, or dies with the test (PR_SET_PDEATHSIG), the kernel kills every process in
// the namespace. SIGTERM stops the daemon and then itself; SIGUSR1 restarts the daemon alone,
// so the domains keep running as they do when a real host's libvirtd restarts.
int initMain(void* arg) {
  const auto& plan = *static_cast<const InitPlan*>(arg);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  ::close(plan.parent_alive_write);
  pollfd alive{plan.parent_alive, POLLIN, 0};
  if (::poll(&alive, 1, 0) != 0) ::_exit(kParentGone);  // it died before the prctl
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) ::_exit(kNoPrivateMounts);
  // This namespace's own /proc: libvirtd reads its QEMU processes there by their pids here.
  if (::mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
    ::_exit(kNoProc);
  }
  for (const auto& [own, machine] : plan.binds) {
    if (::mount(own.c_str(), machine.c_str(), nullptr, MS_BIND, nullptr) != 0) {
      ::_exit(kNoPrivateDirs);
    }
  }
  if (!plan.hostname.empty() && ::sethostname(plan.hostname.c_str(), plan.hostname.size()) != 0) {
    ::_exit(kNoHostname);
  }
  pid_t daemon = spawnDaemon(plan);
  if (daemon < 0) ::_exit(kNoFork);
  bool restarting = false;
  bool stopping = false;
  for (;;) {
    const int sig = ::sigwaitinfo(&plan.handled, nullptr);
    if (sig == SIGTERM || sig == SIGINT) {
      stopping = true;
      if (daemon <= 0) ::_exit(0);
      ::kill(daemon, SIGTERM);
    } else if (sig == SIGUSR1) {
      restarting = true;
      if (daemon > 0) ::kill(daemon, SIGTERM);
    } else if (sig == SIGCHLD) {
      int status = 0;
      pid_t done = 0;
      while ((done = ::waitpid(-1, &status, WNOHANG)) > 0) {
        if (done != daemon) continue;  // a QEMU process
        daemon = 0;
        if (!restarting || stopping) {
          ::_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
        }
        restarting = false;
        daemon = spawnDaemon(plan);
        if (daemon < 0) ::_exit(kNoFork);
      }
    }
  }
}

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
  tls_address_ = options.tls_address;
  hostname_ = options.hostname;
  tls_port_ = tls_port;
  // The machine's libvirt directories, replaced by the test's own in the daemon's mount
  // namespace.
  for (const char* machine : kPrivateDirs) {
    fs::create_directories(privateCopy(dir, machine));
    fs::create_directories(machine);  // a mount point (/run/libvirt exists only once one ran)
  }
  std::ofstream(privateCopy(dir, "/etc/libvirt") / "qemu.conf") << kQemuConf;
  std::ofstream(dir / "libvirtd.out", std::ios::trunc).close();
  if (!launch(error)) return false;
  if (!waitUntilServing(error)) return false;
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

bool PrivateLibvirtd::launch(std::string* error) {
  InitPlan plan;
  for (const char* machine : kPrivateDirs) {
    plan.binds.emplace_back(privateCopy(dir_, machine).string(), machine);
  }
  plan.output = (dir_ / "libvirtd.out").string();
  // --listen: the TLS listener (libvirtd opens no TCP socket without it).
  plan.args = {"libvirtd", "-f", (dir_ / "libvirtd.conf").string(), "-p",
               (dir_ / "libvirtd.pid").string()};
  if (!tls_address_.empty()) plan.args.emplace_back("--listen");
  for (std::string& arg : plan.args) plan.argv.push_back(arg.data());
  plan.argv.push_back(nullptr);
  int alive[2];
  if (::pipe2(alive, O_CLOEXEC) != 0) {
    *error = std::string("pipe: ") + std::strerror(errno);
    return false;
  }
  plan.parent_alive = alive[0];
  plan.parent_alive_write = alive[1];
  ::sigemptyset(&plan.handled);
  for (int sig : {SIGTERM, SIGINT, SIGUSR1, SIGCHLD}) ::sigaddset(&plan.handled, sig);
  // The init takes these signals with sigwaitinfo: blocked from its first instruction on.
  sigset_t previous;
  ::pthread_sigmask(SIG_BLOCK, &plan.handled, &previous);
  std::vector<char> stack(size_t{256} << 10);
  plan.hostname = hostname_;
  const int namespaces = CLONE_NEWNS | CLONE_NEWPID | (hostname_.empty() ? 0 : CLONE_NEWUTS);
  pid_ = ::clone(initMain, stack.data() + stack.size(), namespaces | SIGCHLD, &plan);
  const int clone_errno = errno;
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  ::close(alive[0]);
  if (pid_ < 0) {
    ::close(alive[1]);
    *error = std::string("clone: ") + std::strerror(clone_errno);
    pid_ = 0;
    return false;
  }
  parent_alive_ = alive[1];
  exited_ = false;
  std::ofstream(dir_ / "daemon.pid") << pid_ << "\n";
  return true;
}

bool PrivateLibvirtd::waitUntilServing(std::string* error) {
  const fs::path socket = dir_ / "sock/libvirt-sock";
  uri_ = "qemu:///system?socket=" + socket.string();
  const auto limit = std::chrono::seconds(30);
  if (!LocalCluster::eventually(
          [&] {
            if (!running()) return true;
            if (conn_ == nullptr && fs::exists(socket)) conn_ = virConnectOpen(uri_.c_str());
            return conn_ != nullptr;
          },
          limit) ||
      !running()) {
    *error = "libvirtd did not serve its socket in 30 s (" + exitDescription() +
             "): " + virGetLastErrorMessage() + "\n" + readFile(dir_ / "libvirtd.out") + log();
    return false;
  }
  if (tls_address_.empty()) return true;
  if (!LocalCluster::eventually([&] { return listening(tls_address_, tls_port_) || !running(); },
                                limit) ||
      !running()) {
    *error = "libvirtd did not listen on " + tls_address_ + ":" + std::to_string(tls_port_) +
             " in 30 s (" + exitDescription() + "): " + readFile(dir_ / "libvirtd.out") + log();
    return false;
  }
  tls_uri_ = "qemu+tls://" + tls_address_ + ":" + std::to_string(tls_port_) + "/system";
  return true;
}

bool PrivateLibvirtd::restart(std::string* error) {
  if (!running()) {
    *error = "the daemon is not running (" + exitDescription() + ")";
    return false;
  }
  const std::string before = readFile(dir_ / "libvirtd.pid");
  if (conn_ != nullptr) {
    virConnectClose(conn_);
    conn_ = nullptr;
  }
  ::kill(pid_, SIGUSR1);
  // The new daemon writes its own pid file: its pid in the namespace is not the old one's.
  if (!LocalCluster::eventually(
          [&] {
            const std::string now = readFile(dir_ / "libvirtd.pid");
            return (!now.empty() && now != before) || !running();
          },
          std::chrono::seconds(30)) ||
      !running()) {
    *error = "libvirtd did not come back in 30 s (" + exitDescription() +
             "): " + readFile(dir_ / "libvirtd.out") + log();
    return false;
  }
  return waitUntilServing(error);
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
      case kNoFork: return "its namespace's init could not fork libvirtd";
      case kNoProc: return "could not mount a /proc of its own PID namespace";
      case kNoPrivateDirs: return "could not bind its own libvirt directories";
      case kNoPrivateMounts: return "could not make a mount namespace of its own";
      case kNoHostname: return "could not set its own host name";
      case kParentGone: return "the process that started it was gone";
      case kNoExec: return "could not exec " + std::string(kLibvirtd);
      default: return "exited with " + std::to_string(WEXITSTATUS(wait_status_));
    }
  }
  if (WIFSIGNALED(wait_status_))
    return "killed by signal " + std::to_string(WTERMSIG(wait_status_));
  return "stopped";
}

std::set<std::string> PrivateLibvirtd::volumes() const {
  return volumes(pool_);
}

bool PrivateLibvirtd::addPool(const std::string& name, std::string* error) {
  if (conn_ == nullptr) {
    *error = "the daemon is not running";
    return false;
  }
  std::error_code ec;
  fs::create_directories(poolPath(name), ec);
  // QEMU (user libvirt-qemu) traverses into a pool, as into the first.
  fs::permissions(poolPath(name),
                  fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec, ec);
  std::string xml = "<pool type='dir'><name>" + name + "</name><target><path>" +
                    poolPath(name).string() + "</path></target></pool>";
  virStoragePoolPtr p = virStoragePoolCreateXML(conn_, xml.c_str(), 0);
  if (p == nullptr) {
    *error = "cannot create the dir pool " + name + ": " + virGetLastErrorMessage();
    return false;
  }
  virStoragePoolFree(p);
  return true;
}

std::set<std::string> PrivateLibvirtd::volumes(const std::string& name) const {
  std::set<std::string> names;
  if (conn_ == nullptr) return names;
  virStoragePoolPtr p = virStoragePoolLookupByName(conn_, name.c_str());
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
    // The init stops libvirtd, then exits: the kernel kills what is left in the namespace (the
    // test's QEMU processes).
    if (running()) ::kill(pid_, SIGTERM);
    LocalCluster::eventually([this] { return !running(); }, std::chrono::seconds(15));
    if (running()) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &wait_status_, 0);
    }
    pid_ = 0;
    exited_ = false;
  }
  if (parent_alive_ >= 0) {
    ::close(parent_alive_);
    parent_alive_ = -1;
  }
}

PrivateLibvirtd::~PrivateLibvirtd() {
  stop();
}

}  // namespace banlieue::testing
