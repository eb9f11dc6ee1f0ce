#include "host/kube/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

namespace banlieue::kube {
namespace {

using ::testing::HasSubstr;

class KubeconfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("kubeconfig-" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::filesystem::path write(const std::string& name, const std::string& text) {
    auto path = dir_ / name;
    std::ofstream(path) << text;
    return path;
  }

  std::filesystem::path dir_;
};

constexpr const char* kBase = R"(apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: https://127.0.0.1:6443/
    certificate-authority-data: Q0EtUEVN
users:
- name: admin
  user:
    client-certificate-data: Q0VSVA==
    client-key-data: S0VZ
- name: tokened
  user:
    tokenFile: token.txt
contexts:
- name: admin
  context: {cluster: local, user: admin, namespace: team-a}
- name: tokened
  context: {cluster: local, user: tokened}
current-context: admin
)";

TEST_F(KubeconfigTest, ReadsClusterUserAndNamespaceOfTheCurrentContext) {
  auto c = loadKubeconfig({.files = {write("config", kBase)}});
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->server, "https://127.0.0.1:6443") << "trailing slash dropped";
  EXPECT_EQ(c->ca_pem, "CA-PEM");
  EXPECT_EQ(c->client_cert_pem, "CERT");
  EXPECT_EQ(c->client_key_pem, "KEY");
  EXPECT_EQ(c->default_namespace, "team-a");
  EXPECT_FALSE(c->insecure_skip_tls_verify);
}

TEST_F(KubeconfigTest, TokenFileIsRelativeToTheKubeconfigAndReReadWhenItRotates) {
  write("token.txt", "first\n");
  auto c = loadKubeconfig({.files = {write("config", kBase)}, .context = "tokened"});
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->bearerToken(), "first");
  write("token.txt", "second");
  EXPECT_EQ(c->bearerToken(), "second");
}

TEST_F(KubeconfigTest, MergesFilesFirstDefinitionWins) {
  auto first = write("a", R"(clusters:
- name: local
  cluster: {server: https://first:1}
current-context: other
contexts:
- name: other
  context: {cluster: local}
)");
  auto second = write("b", kBase);
  auto c = loadKubeconfig({.files = {first, second}});
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->server, "https://first:1");
  auto env = splitKubeconfigEnv(first.string() + "::" + second.string());
  EXPECT_EQ(env.size(), 2u);
}

TEST_F(KubeconfigTest, ErrorsNameTheFileAndTheMissingField) {
  auto no_server = write("no-server", R"(clusters:
- name: c
  cluster: {}
contexts:
- name: x
  context: {cluster: c}
current-context: x
)");
  auto s = loadKubeconfig({.files = {no_server}});
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr(no_server.string()));
  EXPECT_THAT(s.status().message(), HasSubstr("cluster 'c' is missing field 'server'"));

  auto missing_context = loadKubeconfig({.files = {write("config", kBase)}, .context = "nope"});
  EXPECT_THAT(missing_context.status().message(), HasSubstr("context 'nope' is not defined"));

  auto bad_yaml = loadKubeconfig({.files = {write("bad", "clusters: [\n")}});
  EXPECT_THAT(bad_yaml.status().message(), HasSubstr("not valid YAML"));

  auto no_current = loadKubeconfig({.files = {write("empty", "kind: Config\n")}});
  EXPECT_THAT(no_current.status().message(), HasSubstr("no current-context is set"));

  auto cert_only = write("cert-only", R"(clusters: [{name: c, cluster: {server: "https://x"}}]
users: [{name: u, user: {client-certificate-data: Q0VSVA==}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
)");
  EXPECT_THAT(loadKubeconfig({.files = {cert_only}}).status().message(),
              HasSubstr("has a client certificate but no key"));

  auto missing_file = write(
      "missing-file",
      R"(clusters: [{name: c, cluster: {server: "https://x", certificate-authority: nope.crt}}]
contexts: [{name: x, context: {cluster: c}}]
current-context: x
)");
  EXPECT_THAT(loadKubeconfig({.files = {missing_file}}).status().message(),
              HasSubstr("certificate-authority"));
}

TEST_F(KubeconfigTest, InClusterConfigReadsTheServiceAccount) {
  write("token", "sa-token\n");
  write("ca.crt", "CLUSTER-CA");
  write("namespace", "banlieue-system\n");
  ::setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1", 1);
  ::setenv("KUBERNETES_SERVICE_PORT", "443", 1);
  auto c = loadInClusterConfig(dir_);
  ::unsetenv("KUBERNETES_SERVICE_HOST");
  ::unsetenv("KUBERNETES_SERVICE_PORT");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->server, "https://10.0.0.1:443");
  EXPECT_EQ(c->bearerToken(), "sa-token");
  EXPECT_EQ(c->ca_pem, "CLUSTER-CA");
  EXPECT_EQ(c->default_namespace, "banlieue-system");
  EXPECT_EQ(loadInClusterConfig(dir_).status().reason(), "NotInCluster");
}

}  // namespace
}  // namespace banlieue::kube
