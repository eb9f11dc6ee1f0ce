// The private libvirtd of the image tests (tests/support/private_libvirtd.h) is found by its own
// socket, runs beside any other libvirtd, never outlives the process that started it, and its
// TLS listener (what pods reach) serves only the client it allows, each side verifying the other.
#include "tests/support/private_libvirtd.h"

#include "tests/support/local_cluster.h"
#include "tests/support/read_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
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

// The process that started the daemon is killed (as a crashed or timed-out test is): the daemon
// goes with it instead of lingering for every later run to trip over.
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
  std::string daemon_pid = readFile(dir.path() / "libvirtd.pid");
  ::kill(holder, SIGKILL);
  ::waitpid(holder, nullptr, 0);
  ASSERT_TRUE(ready && fs::exists(dir.path() / "holder.ready"))
      << "the holder did not start its libvirtd: " << readFile(dir.path() / "libvirtd.out")
      << readFile(dir.path() / "libvirtd.log");
  ASSERT_FALSE(daemon_pid.empty());
  const pid_t daemon = static_cast<pid_t>(std::stol(daemon_pid));
  EXPECT_TRUE(LocalCluster::eventually([&] { return processGone(daemon); }))
      << "libvirtd " << daemon << " outlived the process that started it";
  if (!processGone(daemon)) ::kill(daemon, SIGKILL);
}

}  // namespace
}  // namespace banlieue::testing
