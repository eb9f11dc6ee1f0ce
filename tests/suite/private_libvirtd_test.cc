// The private libvirtd of the image and e2e tests (tests/support/private_libvirtd.h) is found by
// its own socket, runs beside any other libvirtd, never outlives the process that started it
// (nor do its QEMU domains), restarts under its clients as a host's daemon does, and its
// TLS listener (what pods reach) serves only the client it allows, each side verifying the other.
#include "tests/support/private_libvirtd.h"
#include "tests/support/build_paths.h"

#include "tests/support/local_cluster.h"
#include "tests/support/read_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

namespace banlieue::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// A short directory of the test's own (socket paths must fit a sockaddr_un), removed after.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/bnl-plv-XXXXXX";
    if (::mkdtemp(tmpl) != nullptr) path_ = tmpl;
    fs::permissions(path_, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

bool processGone(pid_t pid) {
  // Gone, or a zombie nobody has reaped yet: either way it no longer runs.
  std::string stat = readFile("/proc/" + std::to_string(pid) + "/stat");
  if (stat.empty()) return true;
  auto close = stat.rfind(')');
  return close != std::string::npos && stat.size() > close + 2 && stat[close + 2] == 'Z';
}

class PrivateLibvirtdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = PrivateLibvirtd::unavailableReason(); !why.empty()) GTEST_SKIP() << why;
  }
};

// Another libvirtd is running (here: a private one, as an earlier run's orphan or
// `scripts/dev.sh --real` would be): a second one still starts, serves its own pool, and is
// reachable only through its own socket.
TEST_F(PrivateLibvirtdTest, StartsBesideAnotherRunningLibvirtd) {
  TempDir first_dir;
  TempDir second_dir;
  PrivateLibvirtd first;
  std::string error;
  ASSERT_TRUE(first.start(first_dir.path(), "bnl-first-" + std::to_string(::getpid()), &error))
      << error;
  EXPECT_EQ(PrivateLibvirtd::unavailableReason(), "");

  PrivateLibvirtd second;
  ASSERT_TRUE(second.start(second_dir.path(), "bnl-second-" + std::to_string(::getpid()), &error))
      << error;
  EXPECT_NE(first.uri(), second.uri());
  std::ofstream(second.poolPath() / "disk.raw") << "x";
  EXPECT_EQ(second.volumes().count("disk.raw"), 1U);
  EXPECT_EQ(first.volumes().count("disk.raw"), 0U);
}

// With a TLS listener (here on loopback; the image tests use the cluster's pod-reachable
// address): the client whose certificate the daemon allows connects and sees the daemon's pool.
// The daemon refuses a client certificate from the same CA with another DN, and the client
// refuses the daemon when the name it dialled is not the one the daemon's certificate names.
TEST_F(PrivateLibvirtdTest, TlsListenerServesOnlyTheAllowedClientWithBothSidesVerified) {
  TempDir dir;
  PrivateLibvirtd daemon;
  std::string error;
  const std::string pool = "bnl-tls-" + std::to_string(::getpid());
  ASSERT_TRUE(daemon.start(dir.path(), pool, &error, {.tls_address = "127.0.0.1"})) << error;
  ASSERT_THAT(daemon.tlsUri(), StartsWith("qemu+tls://127.0.0.1:"));
  EXPECT_THAT(daemon.caPem(), HasSubstr("BEGIN CERTIFICATE"));
  EXPECT_THAT(daemon.clientCertPem(), HasSubstr("BEGIN CERTIFICATE"));
  EXPECT_THAT(daemon.clientKeyPem(), HasSubstr("PRIVATE KEY"));
  auto virsh = [](const std::string& uri, const fs::path& pki) {
    return runCommand("virsh -q -c " + shellQuote(uri + "?pkipath=" + pki.string()) +
                      " pool-list --name");
  };

  auto allowed = virsh(daemon.tlsUri(), daemon.pkiPath());
  EXPECT_EQ(allowed.exit_code, 0) << allowed.output << daemon.log();
  EXPECT_THAT(allowed.output, HasSubstr(pool));

  auto intruder = virsh(daemon.tlsUri(), daemon.intruderPkiPath());
  EXPECT_NE(intruder.exit_code, 0) << intruder.output;
  EXPECT_THAT(intruder.output, Not(HasSubstr(pool)));
  EXPECT_THAT(daemon.log(), HasSubstr("not on the list of allowed clients"));

  // The same daemon dialled as "localhost": its certificate names 127.0.0.1 only.
  std::string by_name = daemon.tlsUri();
  by_name.replace(by_name.find("127.0.0.1"), 9, "localhost");
  auto misnamed = virsh(by_name, daemon.pkiPath());
  EXPECT_NE(misnamed.exit_code, 0) << misnamed.output;
  EXPECT_THAT(misnamed.output, HasSubstr("localhost"));
}

// The host pids of the processes in the PID namespace whose init is `init` (the init included).
std::set<pid_t> namespaceMembers(pid_t init) {
  std::set<pid_t> members;
  std::error_code ec;
  const fs::path ns = fs::read_symlink("/proc/" + std::to_string(init) + "/ns/pid", ec);
  if (ec) return members;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::error_code link_ec;
    if (fs::read_symlink(entry.path() / "ns/pid", link_ec) == ns && !link_ec &&
        !processGone(std::stoi(name))) {
      members.insert(std::stoi(name));
    }
  }
  return members;
}

// The process that started the daemon is killed (as a crashed or timed-out test is): the daemon
// and everything in its namespace go with it instead of lingering for every later run to trip
// over.
TEST_F(PrivateLibvirtdTest, DiesWithTheProcessThatStartedIt) {
  TempDir dir;
  const std::string pool = "bnl-holder-" + std::to_string(::getpid());  // no allocation after fork
  pid_t holder = ::fork();
  ASSERT_GE(holder, 0);
  if (holder == 0) {
    ::execl(BANLIEUE_PRIVATE_LIBVIRTD_HOLDER, "private_libvirtd_holder", dir.path().c_str(),
            pool.c_str(), nullptr);
    ::_exit(127);
  }
  const bool ready = LocalCluster::eventually([&] {
    return fs::exists(dir.path() / "holder.ready") || ::waitpid(holder, nullptr, WNOHANG) != 0;
  });
  const std::string init_pid = readFile(dir.path() / "daemon.pid");
  const std::set<pid_t> members =
      init_pid.empty() ? std::set<pid_t>{} : namespaceMembers(std::stoi(init_pid));
  ::kill(holder, SIGKILL);
  ::waitpid(holder, nullptr, 0);
  ASSERT_TRUE(ready && fs::exists(dir.path() / "holder.ready"))
      << "the holder did not start its libvirtd: " << readFile(dir.path() / "libvirtd.out")
      << readFile(dir.path() / "libvirtd.log");
  // The namespace's init and libvirtd at least.
  ASSERT_GE(members.size(), 2U) << "daemon.pid: " << init_pid;
  for (pid_t member : members) {
    EXPECT_TRUE(LocalCluster::eventually([&] { return processGone(member); }))
        << "process " << member << " (" << readFile("/proc/" + std::to_string(member) + "/comm")
        << ") outlived the process that started it";
    if (!processGone(member)) ::kill(member, SIGKILL);
  }
}

// A QEMU domain of the private daemon (the plugin's e2e test runs them) keeps running while the
// daemon restarts, as on a real host, and is gone once the daemon is stopped: a test's domains
// never outlive it.
TEST_F(PrivateLibvirtdTest, DomainsSurviveARestartAndDieWithTheDaemon) {
  TempDir dir;
  PrivateLibvirtd daemon;
  std::string error;
  const std::string name = "bnl-plv-" + std::to_string(::getpid());
  ASSERT_TRUE(daemon.start(dir.path(), name, &error)) << error;
  // No disk and no OS: the firmware waits for ever, which is all a running domain needs here.
  const std::string xml = "<domain type='qemu'><name>" + name +
                          "</name><memory unit='MiB'>64</memory><vcpu>1</vcpu>"
                          "<os><type arch='x86_64'>hvm</type></os>"
                          "<devices/></domain>";
  virDomainPtr domain = virDomainCreateXML(daemon.connection(), xml.c_str(), 0);
  ASSERT_NE(domain, nullptr) << virGetLastErrorMessage() << "\n" << daemon.log();
  virDomainFree(domain);
  auto qemus = [&] {
    std::set<pid_t> found;
    const std::string init_pid = readFile(dir.path() / "daemon.pid");
    for (pid_t member : namespaceMembers(std::stoi(init_pid))) {
      if (readFile("/proc/" + std::to_string(member) + "/comm").rfind("qemu", 0) == 0) {
        found.insert(member);
      }
    }
    return found;
  };
  const std::set<pid_t> before = qemus();
  ASSERT_EQ(before.size(), 1U);

  const std::string daemon_pid = readFile(dir.path() / "libvirtd.pid");
  ASSERT_TRUE(daemon.restart(&error)) << error;
  EXPECT_NE(readFile(dir.path() / "libvirtd.pid"), daemon_pid) << "libvirtd did not restart";
  EXPECT_EQ(qemus(), before);
  virDomainPtr again = virDomainLookupByName(daemon.connection(), name.c_str());
  ASSERT_NE(again, nullptr) << virGetLastErrorMessage();
  int state = 0;
  EXPECT_EQ(virDomainGetState(again, &state, nullptr, 0), 0);
  EXPECT_EQ(state, VIR_DOMAIN_RUNNING);
  virDomainFree(again);

  daemon.stop();
  const pid_t qemu = *before.begin();
  EXPECT_TRUE(LocalCluster::eventually([&] { return processGone(qemu); }))
      << "QEMU " << qemu << " outlived its daemon";
  if (!processGone(qemu)) ::kill(qemu, SIGKILL);
}

}  // namespace
}  // namespace banlieue::testing
