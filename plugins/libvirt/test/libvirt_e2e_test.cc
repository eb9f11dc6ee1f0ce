// End to end against a real libvirtd that this test starts: a TLS listener on loopback with
// certificates it generates, a directory pool, an isolated network, and QEMU domains under TCG.
// The plugin is driven through the C ABI over qemu+tls://; the results are checked with virsh
// and the libvirt API on the daemon's own unix socket. Label: e2e;libvirt.
//
// It skips (with the reason) only when the machine truly cannot run it: not root, or the
// libvirt daemon / QEMU / openssl packages are missing (scripts/setup.sh installs them), or a
// libvirtd this test did not start already owns the QEMU driver.
#include "plugins/libvirt/test/plugin_harness.h"

#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace banlieue::libvirt::testing {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::seconds;

struct CommandResult {
  int status;
  std::string output;
};

CommandResult run(const std::string& command) {
  CommandResult r{-1, {}};
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) r.output.append(buf, n);
  r.status = pclose(p);
  return r;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

int freePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(fd);
    return 0;
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

bool portOpen(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  ::close(fd);
  return ok;
}

template <class Pred>
bool waitFor(Pred pred, milliseconds limit) {
  auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(milliseconds(100));
  }
  return pred();
}

pid_t readPid(const fs::path& file) {
  std::string text = slurp(file);
  return text.empty() ? 0 : static_cast<pid_t>(std::stol(text));
}

void stopPid(pid_t pid) {
  if (pid <= 0) return;
  ::kill(pid, SIGTERM);
  waitFor([pid] { return ::kill(pid, 0) != 0; }, seconds(15));
}

class LibvirtDaemonE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root to run the system libvirtd and QEMU";
    for (const char* tool : {"/usr/sbin/libvirtd", "/usr/sbin/virtlogd", "/usr/bin/virsh",
                             "/usr/bin/qemu-system-x86_64", "/usr/bin/openssl"}) {
      if (!fs::exists(tool)) GTEST_SKIP() << tool << " is missing: run scripts/setup.sh";
    }
    // libvirtd is a machine-wide singleton (its QEMU driver state lives under /run/libvirt).
    for (const auto& proc : fs::directory_iterator("/proc")) {
      std::string comm = slurp(proc.path() / "comm");
      if (comm == "libvirtd\n") {
        GTEST_SKIP() << "a libvirtd this test did not start is running (pid "
                     << proc.path().filename().string() << "); it owns the QEMU driver";
      }
    }
    ASSERT_FALSE(pluginPath().empty());
    // qemu runs as libvirt-qemu and must traverse into the pool directory.
    char tmpl[] = "/tmp/banlieue-libvirt-e2e-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    fs::permissions(dir_, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
    suffix_ = std::to_string(::getpid() % 100000);
    makePki();
    if (HasFatalFailure()) return;
    startDaemon();
    if (HasFatalFailure()) return;
    adminConnect();
    ASSERT_NE(admin_, nullptr) << virGetLastErrorMessage();
    // A transient dir pool and an isolated network (a bridge with no addresses: no dnsmasq,
    // no firewall rules): nothing is written under /etc/libvirt.
    fs::create_directories(dir_ / "pool");
    fs::permissions(dir_ / "pool",
                    fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
    pool_ = "bnl-e2e-" + suffix_;
    std::string pool_xml = "<pool type='dir'><name>" + pool_ + "</name><target><path>" +
                           (dir_ / "pool").string() + "</path></target></pool>";
    virStoragePoolPtr p = virStoragePoolCreateXML(admin_, pool_xml.c_str(), 0);
    ASSERT_NE(p, nullptr) << virGetLastErrorMessage();
    virStoragePoolFree(p);
    network_ = "bnl-e2e-" + suffix_;
    std::string net_xml =
        "<network><name>" + network_ + "</name><bridge name='bnle2e" + suffix_ + "'/></network>";
    virNetworkPtr n = virNetworkCreateXML(admin_, net_xml.c_str());
    ASSERT_NE(n, nullptr) << virGetLastErrorMessage();
    virNetworkFree(n);
  }

  void TearDown() override {
    harness_.destroy();
    if (dir_.empty()) return;  // skipped before anything was started
    if (admin_ != nullptr || started_) adminConnect();
    if (admin_ != nullptr) {
      // Whatever a failed assertion left behind: only objects this test named.
      virDomainPtr d = virDomainLookupByName(admin_, domain_.c_str());
      if (d != nullptr) {
        virDomainDestroy(d);
        virDomainUndefineFlags(d, VIR_DOMAIN_UNDEFINE_NVRAM);
        virDomainFree(d);
      }
      if (virStoragePoolPtr p = virStoragePoolLookupByName(admin_, pool_.c_str())) {
        virStoragePoolDestroy(p);
        virStoragePoolFree(p);
      }
      if (virNetworkPtr n = virNetworkLookupByName(admin_, network_.c_str())) {
        virNetworkDestroy(n);
        virNetworkFree(n);
      }
      // libvirt 9.0 leaves the transient network's empty port directory behind.
      std::error_code ec;
      if (!network_.empty()) fs::remove_all(fs::path("/run/libvirt/network") / network_, ec);
      virConnectClose(admin_);
      admin_ = nullptr;
    }
    stopPid(readPid(dir_ / "libvirtd.pid"));
    stopPid(readPid(dir_ / "virtlogd.pid"));
    if (!dir_.empty() && !HasFailure()) fs::remove_all(dir_);
    if (HasFailure() && !dir_.empty()) {
      std::cerr << "libvirtd log kept in " << (dir_ / "libvirtd.log") << "\n";
    }
  }

  void makePki() {
    fs::path pki = dir_ / "pki";
    fs::create_directories(pki);
    std::ofstream(pki / "server.ext")
        << "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,"
           "keyEncipherment\n"
        << "extendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1\n";
    std::ofstream(pki / "client.ext") << "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,"
                                         "digitalSignature,keyEncipherment\n"
                                      << "extendedKeyUsage=clientAuth\n";
    auto issue = [](const char* name, const char* subject, const char* ext) {
      std::ostringstream c;
      c << "openssl req -newkey rsa:2048 -nodes -keyout " << name << "key.pem -out " << name
        << ".csr -subj " << subject << " && openssl x509 -req -in " << name
        << ".csr -CA cacert.pem -CAkey ca.key -CAcreateserial -out " << name
        << "cert.pem -days 2 -extfile " << ext;
      return c.str();
    };
    const std::string commands[] = {
        "openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out cacert.pem -days 2 "
        "-subj /CN=banlieue-e2e-ca -addext basicConstraints=critical,CA:TRUE "
        "-addext keyUsage=critical,keyCertSign,cRLSign",
        issue("server", "/O=banlieue/CN=127.0.0.1", "server.ext"),
        issue("client", "/O=banlieue/CN=provider", "client.ext"),
        // A second client that the daemon's DN allow-list does not name.
        issue("other", "/O=banlieue/CN=intruder", "client.ext"),
    };
    for (const std::string& command : commands) {
      CommandResult r = run("cd '" + pki.string() + "' && " + command);
      ASSERT_EQ(r.status, 0) << command << "\n" << r.output;
    }
  }

  void startDaemon() {
    port_ = freePort();
    fs::path pki = dir_ / "pki";
    fs::create_directories(dir_ / "sock");
    std::ofstream(dir_ / "libvirtd.conf")
        << "listen_tls = 1\nlisten_tcp = 0\nlisten_addr = \"127.0.0.1\"\n"
        << "tls_port = \"" << port_ << "\"\n"
        << "key_file = \"" << (pki / "serverkey.pem").string() << "\"\n"
        << "cert_file = \"" << (pki / "servercert.pem").string() << "\"\n"
        << "ca_file = \"" << (pki / "cacert.pem").string() << "\"\n"
        << "auth_tls = \"none\"\n"
        << "tls_allowed_dn_list = [\"O=banlieue,CN=provider\"]\n"
        << "unix_sock_dir = \"" << (dir_ / "sock").string() << "\"\n"
        << "log_outputs = \"3:file:" << (dir_ / "libvirtd.log").string() << "\"\n";
    if (!fs::exists("/run/libvirt/virtlogd-sock")) {
      CommandResult v = run("/usr/sbin/virtlogd -d -p " + (dir_ / "virtlogd.pid").string());
      ASSERT_EQ(v.status, 0) << v.output;
    }
    CommandResult d = run("/usr/sbin/libvirtd -d -l -f " + (dir_ / "libvirtd.conf").string() +
                          " -p " + (dir_ / "libvirtd.pid").string());
    ASSERT_EQ(d.status, 0) << d.output;
    started_ = true;
    ASSERT_TRUE(waitFor([&] { return portOpen(port_) && fs::exists(dir_ / "sock/libvirt-sock"); },
                        seconds(30)))
        << "libvirtd did not listen on 127.0.0.1:" << port_ << "\n"
        << slurp(dir_ / "libvirtd.log");
  }

  void adminConnect() {
    if (admin_ != nullptr) virConnectClose(admin_);
    admin_ = virConnectOpen(adminUri().c_str());
  }
  std::string adminUri() const {
    return "qemu:///system?socket=" + (dir_ / "sock/libvirt-sock").string();
  }
  std::string virsh(const std::string& args) {
    return run("virsh -q -c '" + adminUri() + "' " + args).output;
  }

  ProviderSpec provider(const std::string& cert = "clientcert.pem",
                        const std::string& key = "clientkey.pem") {
    fs::path pki = dir_ / "pki";
    ProviderSpec spec;
    spec.endpoint = "qemu+tls://127.0.0.1:" + std::to_string(port_) + "/system";
    spec.storage_classes = R"([{"name":"local","target":{"pool":")" + pool_ + R"("}}])";
    spec.network_classes = R"([{"name":"lan","target":{"network":")" + network_ + R"("}}])";
    spec.annotations = R"({"libvirt.banlieue.io/domain-type":"qemu"})";  // TCG: see env notes
    spec.credentials = R"({"tls.crt":)" + quote(slurp(pki / cert)) + R"(,"tls.key":)" +
                       quote(slurp(pki / key)) + R"(,"ca.crt":)" +
                       quote(slurp(pki / "cacert.pem")) + "}";
    return spec;
  }

  fs::path dir_;
  std::string suffix_;
  std::string pool_;
  std::string network_;
  std::string domain_;
  int port_ = 0;
  bool started_ = false;
  virConnectPtr admin_ = nullptr;
  Harness harness_;
};

TEST_F(LibvirtDaemonE2E, ImportCreatePowerCycleRestartDaemonAndDeleteLeavesNothing) {
  auto t0 = std::chrono::steady_clock::now();
  // A client certificate outside the daemon's allow-list is refused.
  auto refused = harness_.create(provider("othercert.pem", "otherkey.pem"));
  EXPECT_NE(refused.code, BANLIEUE_OK) << describeOutcome(refused);

  auto created = harness_.create(provider());
  ASSERT_TRUE(created.ok()) << describeOutcome(created) << "\n" << slurp(dir_ / "libvirtd.log");

  auto fd = harness_.introspect(provider());
  ASSERT_TRUE(fd.ok()) << describeOutcome(fd);
  auto fd_doc = json::parse(fd.body, "introspect");
  const auto& attrs = fd_doc["failureDomains"][0]["attributes"];
  ASSERT_EQ(attrs["availableStorageClasses"].Size(), 1u) << fd.body;
  ASSERT_EQ(attrs["availableNetworkClasses"].Size(), 1u) << fd.body;

  // Import a small image over the TLS stream.
  fs::path artifact = dir_ / "tiny.raw";
  {
    std::string bytes(size_t{4} << 20, '\0');
    for (size_t i = 0; i < bytes.size(); i += 4096) bytes[i] = static_cast<char>(i / 4096);
    std::ofstream(artifact, std::ios::binary) << bytes;
  }
  std::string sha = run("sha256sum " + artifact.string() + " | cut -c1-64").output.substr(0, 64);
  std::string import_request =
      R"({"image":{"apiVersion":"banlieue.io/v1alpha1","kind":"VMImage","metadata":{"name":"tiny","uid":"img"},
        "spec":{"sources":[{"providerClass":"libvirt","kind":"Url","ref":"","checksum":"sha256:)" +
      sha + R"("}]},"status":{"buildArtifact":{"kind":"cloudImage","phase":"Ready"}}},
        "artifact":{"path":)" +
      quote(artifact.string()) + R"(,"format":"raw","sha256":")" + sha +
      R"(","sizeBytes":4194304},"failureDomain":"host")";
  auto imported = harness_.importUntilDone(import_request, "img");
  ASSERT_TRUE(imported.ok()) << describeOutcome(imported);
  auto import_doc = json::parse(imported.body, "import");
  std::string image_volume = json::stringOr(&import_doc, "status.resolvedRef");
  EXPECT_EQ(image_volume, "tiny-" + sha.substr(0, 12) + ".raw");
  // Byte-identical in the pool (read back by virsh, not by the plugin).
  fs::path back = dir_ / "back.raw";
  virsh("vol-download --pool " + pool_ + " " + image_volume + " " + back.string());
  EXPECT_EQ(run("sha256sum " + back.string() + " | cut -c1-64").output.substr(0, 64), sha);

  MachineOptions m;
  m.name = "e2e-" + suffix_;
  domain_ = "default-" + m.name;
  m.uid = "e2e00000-0000-4000-8000-0000000" +
          std::string(5 - std::min<size_t>(5, suffix_.size()), '0') + suffix_;
  m.pool = pool_;
  m.boot_volume = image_volume;
  m.root_gib = 1;
  m.network = R"([{"name":"nic0","source":{"kind":"network","name":")" + network_ + R"("}}])";
  m.user_data = "#cloud-config\nhostname: e2e\n";
  m.annotations = R"({"libvirt.banlieue.io/shutdown-timeout-seconds":"3"})";

  auto r = harness_.reconcile(m);
  ASSERT_TRUE(r.ok()) << describeOutcome(r) << "\n" << slurp(dir_ / "libvirtd.log");
  EXPECT_NE(virsh("list --name").find(domain_), std::string::npos) << virsh("list --all");
  std::string vols = virsh("vol-list " + pool_);
  EXPECT_NE(vols.find(domain_ + "-root.qcow2"), std::string::npos) << vols;
  EXPECT_NE(vols.find(domain_ + "-cidata.iso"), std::string::npos) << vols;
  // The seed is a real ISO 9660 volume labelled cidata, as blkid (util-linux) reads it.
  fs::path seed = dir_ / "seed.iso";
  virsh("vol-download --pool " + pool_ + " " + domain_ + "-cidata.iso " + seed.string());
  CommandResult label = run("blkid -p -o value -s LABEL " + seed.string());
  EXPECT_EQ(label.output, "cidata\n") << label.output;
  EXPECT_NE(virsh("dumpxml " + domain_).find("<source network='" + network_ + "'"),
            std::string::npos);

  // Power off: the guest has no OS to honour ACPI, so the graceful shutdown times out (3 s)
  // and the plugin destroys the domain.
  m.power = "PoweredOff";
  auto off = harness_.reconcile(m);
  for (int i = 0; i < 100 && off.code == BANLIEUE_IN_PROGRESS; ++i) {
    auto body = json::parse(off.body, "reply");
    std::string token = json::stringOr(&body, "operation.token");
    ASSERT_FALSE(token.empty()) << off.body;
    std::this_thread::sleep_for(milliseconds(std::max<int64_t>(100, off.requeue_after_ms)));
    off = harness_.reconcile(m, token);
  }
  ASSERT_TRUE(off.ok()) << describeOutcome(off);
  EXPECT_EQ(virsh("domstate " + domain_).rfind("shut off", 0), 0u) << virsh("domstate " + domain_);

  m.power = "PoweredOn";
  ASSERT_TRUE(harness_.reconcile(m).ok());
  EXPECT_NE(virsh("list --name").find(domain_), std::string::npos);

  // The daemon restarts under the plugin: the next call reconnects by itself.
  stopPid(readPid(dir_ / "libvirtd.pid"));
  ASSERT_FALSE(portOpen(port_));
  CommandResult d = run("/usr/sbin/libvirtd -d -l -f " + (dir_ / "libvirtd.conf").string() +
                        " -p " + (dir_ / "libvirtd.pid").string());
  ASSERT_EQ(d.status, 0) << d.output;
  ASSERT_TRUE(waitFor([&] { return portOpen(port_); }, seconds(30)));
  adminConnect();
  auto after = harness_.reconcile(m);
  ASSERT_TRUE(after.ok()) << describeOutcome(after);
  auto after_doc = json::parse(after.body, "reply");
  EXPECT_EQ(json::stringOr(&after_doc, "status.observedPowerState"), "PoweredOn");

  auto fin = harness_.finalize(m);
  ASSERT_TRUE(fin.ok()) << describeOutcome(fin);
  EXPECT_EQ(virsh("list --all --name").find(domain_), std::string::npos) << virsh("list --all");
  vols = virsh("vol-list " + pool_);
  EXPECT_EQ(vols.find(domain_), std::string::npos) << "volumes left: " << vols;
  EXPECT_NE(vols.find(image_volume), std::string::npos);  // the image stays for other machines
  auto pool_files = [&] {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_ / "pool"))
      names.push_back(e.path().filename());
    return names;
  };
  EXPECT_EQ(pool_files(), std::vector<std::string>{image_volume});
  std::cerr
      << "e2e wall time: "
      << std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - t0).count()
      << " ms\n";
}

}  // namespace
}  // namespace banlieue::libvirt::testing
