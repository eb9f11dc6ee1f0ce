// The kubeconfig exec credential plugin (issue #25, item 3): its stderr never goes to a file a
// local user can predict (a planted symlink there is left alone), and a refresh in progress
// does not hold every other request behind it. Label `security`.
#include "host/kube/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <thread>

namespace banlieue::kube {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

class ExecCredentialSecurityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("exec-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A kubeconfig whose user runs `plugin` (a shell script body) as its exec plugin.
  fs::path kubeconfig(const std::string& plugin) {
    std::ofstream(dir_ / "plugin.sh") << "#!/bin/sh\nd=$(dirname \"$0\")\n" << plugin;
    fs::permissions(dir_ / "plugin.sh", fs::perms::owner_all);
    std::ofstream(dir_ / "config")
        << "clusters: [{name: c, cluster: {server: \"https://127.0.0.1:1\"}}]\n"
        << "users: [{name: u, user: {exec: {apiVersion: "
           "client.authentication.k8s.io/v1beta1, command: ./plugin.sh}}}]\n"
        << "contexts: [{name: x, context: {cluster: c, user: u}}]\n"
        << "current-context: x\n";
    return dir_ / "config";
  }
  static std::string credential(const std::string& token) {
    return "echo '{\"apiVersion\":\"client.authentication.k8s.io/v1beta1\","
           "\"kind\":\"ExecCredential\",\"status\":{\"token\":\"" +
           token + "\"}}'\n";
  }
  static std::string read(const fs::path& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  fs::path dir_;
};

TEST_F(ExecCredentialSecurityTest,
       ThePluginsStderrNeverFollowsASymlinkPlantedInTheTemporaryDirectory) {
  // Where the client once sent the plugin's stderr: a name anyone could predict from the pid.
  const fs::path planted =
      fs::temp_directory_path() / ("banlieue-exec-" + std::to_string(::getpid()));
  std::ofstream(dir_ / "victim") << "keep";
  fs::remove(planted);
  fs::create_symlink(dir_ / "victim", planted);
  auto loaded = loadKubeconfig({.files = {kubeconfig("echo noise >&2\n" + credential("t1"))}});
  fs::remove(planted);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(loaded->bearerToken(), "t1");
  EXPECT_EQ(read(dir_ / "victim"), "keep");
}

TEST_F(ExecCredentialSecurityTest, AFailingPluginsStderrIsInTheError) {
  auto loaded = loadKubeconfig({.files = {kubeconfig("echo 'no such account' >&2\nexit 3\n")}});
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(loaded.status().message(), ::testing::HasSubstr("no such account"));
}

TEST_F(ExecCredentialSecurityTest, ARefreshInProgressDoesNotHoldOtherRequests) {
  // The first run answers at once; the second (the refresh) waits until the test releases it.
  auto loaded = loadKubeconfig(
      {.files = {kubeconfig("if [ -e \"$d/ran\" ]; then touch \"$d/started\"\n"
                            "  i=0; while [ ! -e \"$d/release\" ] && [ $i -lt 200 ]; do "
                            "sleep 0.1; i=$((i+1)); done\n" +
                            credential("t2") + "else touch \"$d/ran\"\n" + credential("t1") +
                            "fi\n")}});
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  ASSERT_EQ(loaded->bearerToken(), "t1");
  ASSERT_TRUE(loaded->invalidateToken());
  auto refreshing = std::async(std::launch::async, [&] { return loaded->bearerToken(); });
  for (int i = 0; i < 200 && !fs::exists(dir_ / "started"); ++i) std::this_thread::sleep_for(50ms);
  ASSERT_TRUE(fs::exists(dir_ / "started"));
  // Another request meanwhile goes on with the token it has.
  auto other = std::async(std::launch::async, [&] { return loaded->bearerToken(); });
  auto other_state = other.wait_for(10s);
  std::ofstream(dir_ / "release") << "";
  ASSERT_EQ(other_state, std::future_status::ready) << "held behind the refresh";
  EXPECT_EQ(other.get(), "t1");
  EXPECT_EQ(refreshing.get(), "t2");
  EXPECT_EQ(loaded->bearerToken(), "t2");
}

}  // namespace
}  // namespace banlieue::kube
