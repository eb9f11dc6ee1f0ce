// Exec credential plugins run as real processes (hence not a unit test): the plugin gets
// KUBERNETES_EXEC_INFO and its env, and its ExecCredential becomes the connection's identity.
#include "host/kube/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

namespace banlieue::kube {
namespace {

using ::testing::HasSubstr;

class ExecCredentialTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("exec-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_ / "bin");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::filesystem::path kubeconfig(const std::string& script) {
    auto plugin = dir_ / "bin" / "plugin.sh";
    std::ofstream(plugin) << "#!/bin/sh\n" << script;
    std::filesystem::permissions(plugin, std::filesystem::perms::owner_all);
    auto path = dir_ / "config";
    std::ofstream(path) << R"(clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users:
- name: u
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: bin/plugin.sh
      args: [--cluster, prod]
      env: [{name: PLUGIN_GREETING, value: hello}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
)";
    return path;
  }

  std::filesystem::path dir_;
};

TEST_F(ExecCredentialTest, ThePluginsTokenBecomesTheIdentity) {
  auto c = loadKubeconfig({.files = {kubeconfig(R"(
case "$KUBERNETES_EXEC_INFO" in *'"kind":"ExecCredential"'*) ;; *) echo "no exec info" >&2; exit 1 ;; esac
[ "$PLUGIN_GREETING" = hello ] && [ "$1 $2" = "--cluster prod" ] || { echo "bad env or args" >&2; exit 1; }
echo '{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","status":{"token":"from-plugin"}}'
)")}});
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->bearerToken(), "from-plugin");
}

TEST_F(ExecCredentialTest, AFailingPluginIsASpecificError) {
  auto c =
      loadKubeconfig({.files = {kubeconfig("echo 'login required: run sso-login' >&2; exit 3\n")}});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().reason(), "ExecCredentialFailed");
  EXPECT_THAT(c.status().message(), HasSubstr("users[u].exec"));
  EXPECT_THAT(c.status().message(), HasSubstr("login required: run sso-login"));
}

TEST_F(ExecCredentialTest, OutputThatIsNotAnExecCredentialIsRejected) {
  auto c = loadKubeconfig({.files = {kubeconfig("echo not-json\n")}});
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("did not print an ExecCredential"));
}

// The plugin counts its runs in a file next to it and prints token "t<run>" expiring at
// `expiry`.
std::string countingPlugin(const std::string& expiry) {
  return R"(n=$(cat "$(dirname "$0")/runs" 2>/dev/null || echo 0); n=$((n + 1)); echo $n > "$(dirname "$0")/runs"
echo '{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","status":{"token":"t'$n'","expirationTimestamp":")" +
         expiry + R"("}}'
)";
}

TEST_F(ExecCredentialTest, AnExpiredTokenIsFetchedAgain) {
  auto c = loadKubeconfig({.files = {kubeconfig(countingPlugin("2001-01-01T00:00:00Z"))}});
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->bearerToken(), "t2") << "expired at load: run again before the first request";
  EXPECT_EQ(c->bearerToken(), "t3");
}

TEST_F(ExecCredentialTest, AValidTokenIsReusedUntilTheServerRejectsIt) {
  auto c = loadKubeconfig({.files = {kubeconfig(countingPlugin("2999-01-01T00:00:00Z"))}});
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->bearerToken(), "t1");
  EXPECT_EQ(c->bearerToken(), "t1") << "not expired: the plugin does not run again";
  EXPECT_TRUE(c->invalidateToken()) << "after a 401";
  EXPECT_EQ(c->bearerToken(), "t2");
  EXPECT_EQ(c->bearerToken(), "t2");
}

}  // namespace
}  // namespace banlieue::kube
