#include "tests/support/private_libvirtd.h"

#include "tests/support/local_cluster.h"
#include "tests/support/read_file.h"

#include <libvirt/virterror.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace banlieue::testing {
namespace {

namespace fs = std::filesystem;

}  // namespace

std::string PrivateLibvirtd::unavailableReason() {
  if (::geteuid() != 0) return "needs root to run a system libvirtd";
  if (!fs::exists("/usr/sbin/libvirtd"))
    return "/usr/sbin/libvirtd is missing: run scripts/setup.sh";
  for (const auto& proc : fs::directory_iterator("/proc")) {
    if (readFile(proc.path() / "comm") == "libvirtd\n") {
      return "a libvirtd this test did not start is running (pid " +
             proc.path().filename().string() + "); it owns the machine's QEMU driver";
    }
  }
  return {};
}

bool PrivateLibvirtd::start(const fs::path& dir, const std::string& pool, std::string* error) {
  dir_ = dir;
  pool_ = pool;
  pool_path_ = dir / "pool";
  fs::create_directories(dir / "sock");
  fs::create_directories(pool_path_);
  std::ofstream(dir / "libvirtd.conf")
      << "listen_tls = 0\nlisten_tcp = 0\n"
      << "unix_sock_dir = \"" << (dir / "sock").string() << "\"\n"
      << "log_outputs = \"3:file:" << (dir / "libvirtd.log").string() << "\"\n";
  auto started =
      runCommand("/usr/sbin/libvirtd -d -f " + shellQuote((dir / "libvirtd.conf").string()) +
                 " -p " + shellQuote((dir / "libvirtd.pid").string()));
  if (started.exit_code != 0) {
    *error = "libvirtd did not start: " + started.output;
    return false;
  }
  // -d forks: the pid file appears once the daemon is up.
  LocalCluster::eventually([&] { return !readFile(dir / "libvirtd.pid").empty(); },
                           std::chrono::seconds(30));
  std::string pid = readFile(dir / "libvirtd.pid");
  if (!pid.empty()) pid_ = static_cast<pid_t>(std::stol(pid));
  if (!LocalCluster::eventually([&] { return fs::exists(dir / "sock/libvirt-sock"); },
                                std::chrono::seconds(30))) {
    *error = "libvirtd made no socket in 30 s: " + log();
    return false;
  }
  uri_ = "qemu:///system?socket=" + (dir / "sock/libvirt-sock").string();
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
    ::kill(pid_, SIGTERM);
    pid_t p = pid_;
    LocalCluster::eventually([p] { return ::kill(p, 0) != 0; }, std::chrono::seconds(15));
    pid_ = 0;
  }
}

PrivateLibvirtd::~PrivateLibvirtd() {
  stop();
}

}  // namespace banlieue::testing
