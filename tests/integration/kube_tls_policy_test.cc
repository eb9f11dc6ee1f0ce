// One TLS policy for the Kubernetes client (issue #25, item 2): with a CA configured (kubeconfig
// certificate-authority data, or the service account's ca.crt), only that CA is trusted, as
// client-go does, never the system's store as well. Label `security`.
#include "host/kube/client.h"
#include "tests/support/build_paths.h"
#include "tests/support/local_cluster.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace banlieue::kube {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;
using testing::LocalCluster;

TEST(KubeTlsPolicyTest, OnlyTheConfiguredCaIsTrustedNeverTheSystemStoreAsWell) {
  auto& cluster = LocalCluster::shared();
  auto connection = loadKubeconfig({.files = {cluster.kubeconfig()}});
  ASSERT_TRUE(connection.ok()) << connection.status().message();
  ASSERT_FALSE(connection->ca_pem.empty());
  auto dir = std::filesystem::path(::testing::TempDir()) / "tls-policy";
  std::filesystem::create_directories(dir);
  // The cluster's CA stands in for a CA of the system store: OpenSSL's default verify paths
  // read SSL_CERT_FILE.
  {
    std::ofstream system_store(dir / "system.pem");
    system_store << connection->ca_pem;
  }
  auto other = testing::runCommand(
      "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=configured "
      "-keyout " +
      (dir / "k").string() + " -out " + (dir / "c").string() + " 2>/dev/null");
  ASSERT_EQ(other.exit_code, 0);
  const std::string run = "SSL_CERT_FILE=" + testing::shellQuote((dir / "system.pem").string()) +
                          " " + KUBE_LIST_NAMESPACES + " " +
                          testing::shellQuote(cluster.kubeconfig().string());

  // The configured CA did not sign the apiserver's certificate: refused, whatever the system
  // store holds.
  auto refused = testing::runCommand(run + " --ca-file " + (dir / "c").string());
  EXPECT_EQ(refused.exit_code, 1) << refused.output;
  EXPECT_THAT(refused.output, AnyOf(HasSubstr("certificate"), HasSubstr("handshake")));
  // Control: the kubeconfig's own CA connects.
  auto control = testing::runCommand(run);
  EXPECT_EQ(control.exit_code, 0) << control.output;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace banlieue::kube
