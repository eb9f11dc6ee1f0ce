// The Kubernetes client against the real local apiserver: TLS with client certificates,
// CRUD, optimistic concurrency, server-side apply ownership, watch, RBAC errors.
#include "host/kube/api_error.h"
#include "host/kube/client.h"
#include "host/kube/discovery.h"
#include "tests/support/build_paths.h"
#include "tests/support/local_cluster.h"

#include <banlieue/sdk/json.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <thread>

namespace banlieue::kube {
namespace {

using ::testing::HasSubstr;
using testing::LocalCluster;
namespace json = sdk::json;

std::unique_ptr<KubeClient> clientFor(const Connection& connection) {
  auto transport = makeHttpTransport(connection);
  EXPECT_TRUE(transport.ok()) << transport.status().message();
  return makeKubeClient(std::move(transport).value());
}

class KubeClientIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto connection = loadKubeconfig({.files = {cluster_.kubeconfig()}});
    ASSERT_TRUE(connection.ok()) << connection.status().message();
    connection_ = *connection;
    client_ = clientFor(connection_);
  }

  std::string configMap(const std::string& ns, const std::string& name, const std::string& data) {
    return R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":")" + name +
           R"(","namespace":")" + ns + R"("},"data":)" + data + "}";
  }

  LocalCluster& cluster_ = LocalCluster::shared();
  Connection connection_;
  std::unique_ptr<KubeClient> client_;
};

TEST_F(KubeClientIntegrationTest, CrudOverTlsWithAClientCertificate) {
  LocalCluster::TestNamespace ns(cluster_);
  ASSERT_FALSE(connection_.client_cert_pem.empty()) << "the admin identity is a client certificate";
  auto created = client_->create(resources::kConfigMap, ns.name(),
                                 configMap(ns.name(), "crud", R"({"a":"1"})"));
  ASSERT_TRUE(created.ok()) << created.status().message();
  auto fetched = client_->get(resources::kConfigMap, ns.name(), "crud");
  ASSERT_TRUE(fetched.ok());
  EXPECT_EQ(json::stringOr(&*fetched, "data.a"), "1");

  auto patched = client_->patch(resources::kConfigMap, ns.name(), "crud", PatchType::kMerge,
                                R"({"data":{"a":"2"}})");
  ASSERT_TRUE(patched.ok()) << patched.status().message();
  EXPECT_EQ(json::stringOr(&*patched, "data.a"), "2");

  auto listed = client_->list(resources::kConfigMap, ns.name(), {.label_selector = ""});
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(listed.value()["items"].Size(), 1u);

  auto removed = client_->remove(resources::kConfigMap, ns.name(), "crud");
  EXPECT_TRUE(removed.isOk()) << removed.message();
  auto gone = client_->get(resources::kConfigMap, ns.name(), "crud");
  EXPECT_TRUE(isNotFound(gone.status())) << gone.status().message();
}

TEST_F(KubeClientIntegrationTest, DiscoveryMapsKindsToResourcesAndMissesAreNotCached) {
  KindResolver resolver(*client_);
  auto vm = resolver.resolve("banlieue.io/v1alpha1", "VirtualMachine");
  ASSERT_TRUE(vm.ok()) << vm.status().message();
  EXPECT_EQ(vm->plural, "virtualmachines");
  EXPECT_TRUE(vm->namespaced);
  auto pc = resolver.resolve("banlieue.io/v1alpha1", "ProviderClass");
  ASSERT_TRUE(pc.ok()) << pc.status().message();
  EXPECT_EQ(pc->plural, "providerclasses");
  EXPECT_FALSE(pc->namespaced);
  auto node = resolver.resolve("v1", "Node");
  ASSERT_TRUE(node.ok()) << node.status().message();
  EXPECT_EQ(node->path("", "n1"), "/api/v1/nodes/n1");

  auto missing_kind = resolver.resolve("banlieue.io/v1alpha1", "NoSuchMachine");
  ASSERT_FALSE(missing_kind.ok());
  EXPECT_EQ(missing_kind.status().reason(), "KindNotServed");
  auto missing_group = resolver.resolve("nosuch.example.com/v1", "Thing");
  ASSERT_FALSE(missing_group.ok());
  EXPECT_EQ(missing_group.status().reason(), "KindNotServed");
  EXPECT_THAT(missing_group.status().message(), HasSubstr("not served"));
}

TEST_F(KubeClientIntegrationTest, StaleUpdateIsAConflictAndDuplicatesAlreadyExist) {
  LocalCluster::TestNamespace ns(cluster_);
  auto created = client_->create(resources::kConfigMap, ns.name(),
                                 configMap(ns.name(), "occ", R"({"a":"1"})"));
  ASSERT_TRUE(created.ok());
  std::string stale = json::serialize(*created);
  ASSERT_TRUE(client_
                  ->patch(resources::kConfigMap, ns.name(), "occ", PatchType::kMerge,
                          R"({"data":{"a":"2"}})")
                  .ok());
  auto update = client_->update(resources::kConfigMap, ns.name(), "occ", stale);
  EXPECT_TRUE(isConflict(update.status()))
      << update.status().reason() << ": " << update.status().message();
  auto again = client_->create(resources::kConfigMap, ns.name(), configMap(ns.name(), "occ", "{}"));
  EXPECT_EQ(again.status().code(), Code::kAlreadyExists);
  auto wrong_uid =
      client_->remove(resources::kConfigMap, ns.name(), "occ", {.precondition_uid = "not-the-uid"});
  EXPECT_TRUE(isConflict(wrong_uid)) << wrong_uid.message();
}

TEST_F(KubeClientIntegrationTest, ServerSideApplyOwnershipConflictsAndNoOpApply) {
  LocalCluster::TestNamespace ns(cluster_);
  std::string desired = configMap(ns.name(), "ssa", R"({"size":"1"})");
  auto first =
      client_->apply(resources::kConfigMap, ns.name(), "ssa", desired, {.field_manager = "alpha"});
  ASSERT_TRUE(first.ok()) << first.status().message();
  std::string version = json::stringOr(&*first, "metadata.resourceVersion");

  auto same =
      client_->apply(resources::kConfigMap, ns.name(), "ssa", desired, {.field_manager = "alpha"});
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(json::stringOr(&*same, "metadata.resourceVersion"), version)
      << "an apply that changes nothing must not write";

  std::string other = configMap(ns.name(), "ssa", R"({"size":"2"})");
  auto conflict =
      client_->apply(resources::kConfigMap, ns.name(), "ssa", other, {.field_manager = "beta"});
  EXPECT_TRUE(isConflict(conflict.status())) << conflict.status().message();
  EXPECT_THAT(conflict.status().message(), HasSubstr("alpha"));

  auto forced = client_->apply(resources::kConfigMap, ns.name(), "ssa", other,
                               {.field_manager = "beta", .force = true});
  ASSERT_TRUE(forced.ok()) << forced.status().message();
  EXPECT_EQ(json::stringOr(&*forced, "data.size"), "2");
}

TEST_F(KubeClientIntegrationTest, WatchSeesChangesFromAListsResourceVersion) {
  LocalCluster::TestNamespace ns(cluster_);
  auto listed = client_->list(resources::kConfigMap, ns.name());
  ASSERT_TRUE(listed.ok());
  std::string from = json::stringOr(&*listed, "metadata.resourceVersion");

  std::vector<std::string> types;
  std::atomic<bool> stop{false};
  std::thread watcher([&] {
    auto st = client_->watch(resources::kConfigMap, ns.name(),
                             {.resource_version = from, .timeout_seconds = 30}, [&](WatchEvent& e) {
                               if (e.type != "BOOKMARK") types.push_back(e.type);
                               return e.type != "DELETED";
                             });
    EXPECT_TRUE(st.isOk()) << st.message();
  });
  // Changes made after the list, even before the watch connects, arrive in order: the watch
  // starts from the list's resourceVersion.
  ASSERT_TRUE(
      client_->create(resources::kConfigMap, ns.name(), configMap(ns.name(), "w", R"({"a":"1"})"))
          .ok());
  ASSERT_TRUE(
      client_
          ->patch(resources::kConfigMap, ns.name(), "w", PatchType::kMerge, R"({"data":{"a":"2"}})")
          .ok());
  ASSERT_TRUE(client_->remove(resources::kConfigMap, ns.name(), "w").isOk());
  watcher.join();
  EXPECT_THAT(types, ::testing::ElementsAre("ADDED", "MODIFIED", "DELETED"));
}

TEST_F(KubeClientIntegrationTest, QuietWatchEndsCleanlyWhenTheServerClosesIt) {
  LocalCluster::TestNamespace ns(cluster_);
  int events = 0;
  const int server_timeout_seconds = 1;
  auto started = std::chrono::steady_clock::now();
  auto st = client_->watch(resources::kConfigMap, ns.name(),
                           {.timeout_seconds = server_timeout_seconds}, [&](WatchEvent& e) {
                             if (e.type != "BOOKMARK") ++events;
                             return true;
                           });
  EXPECT_TRUE(st.isOk()) << st.message();
  EXPECT_EQ(events, 0);
  // The client's own idle timeout is the server's plus 30 s: ending before it means the
  // server's close ended the watch, however slowly this machine runs.
  EXPECT_LT(std::chrono::steady_clock::now() - started,
            std::chrono::seconds(server_timeout_seconds + 30));
}

TEST_F(KubeClientIntegrationTest, ForbiddenForAServiceAccountWithoutRights) {
  LocalCluster::TestNamespace ns(cluster_);
  ASSERT_TRUE(
      client_
          ->create(resources::kServiceAccount, ns.name(),
                   R"({"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"nobody"}})")
          .ok());
  // The token controller mints a Secret for the service account (Kubernetes 1.20).
  std::string token;
  ASSERT_TRUE(LocalCluster::eventually([&] {
    auto secrets = client_->list(resources::kSecret, ns.name(),
                                 {.field_selector = "type=kubernetes.io/service-account-token"});
    if (!secrets.ok()) return false;
    for (const auto& s : secrets.value()["items"].GetArray()) {
      if (json::stringOr(&s, "metadata.name").rfind("nobody-token-", 0) != 0) continue;
      auto encoded = json::stringOr(&s, "data.token");
      if (!encoded.empty()) {
        auto decoded =
            testing::runCommand("printf %s " + testing::shellQuote(encoded) + " | base64 -d");
        token = decoded.output;
        return true;
      }
    }
    return false;
  }));
  Connection as_nobody = connection_;
  as_nobody.client_cert_pem.clear();
  as_nobody.client_key_pem.clear();
  as_nobody.token = token;
  auto denied = clientFor(as_nobody)->list(resources::kSecret, ns.name());
  ASSERT_FALSE(denied.ok());
  EXPECT_TRUE(isForbidden(denied.status())) << denied.status().reason();
  EXPECT_EQ(denied.status().code(), Code::kPermissionDenied);
  EXPECT_THAT(denied.status().message(),
              HasSubstr("system:serviceaccount:" + ns.name() + ":nobody"));
}

// Requests meant to fail their TLS handshake run in a process of their own (see
// tests/support/kube_list_namespaces.cc for why).
testing::CommandResult listNamespacesIn(const std::filesystem::path& kubeconfig,
                                        const std::string& flags) {
  return testing::runCommand(std::string(KUBE_LIST_NAMESPACES) + " " +
                             testing::shellQuote(kubeconfig.string()) + " " + flags);
}

TEST_F(KubeClientIntegrationTest, TlsVerificationIsOnByDefault) {
  // A CA that did not sign the apiserver's certificate: the handshake must fail.
  auto dir = std::filesystem::path(::testing::TempDir()) / "other-ca";
  std::filesystem::create_directories(dir);
  auto other = testing::runCommand(
      "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=other "
      "-keyout " +
      (dir / "k").string() + " -out " + (dir / "c").string() + " 2>/dev/null");
  ASSERT_EQ(other.exit_code, 0);
  auto result = listNamespacesIn(cluster_.kubeconfig(), "--ca-file " + (dir / "c").string());
  std::filesystem::remove_all(dir);
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_THAT(result.output, ::testing::AnyOf(HasSubstr("certificate"), HasSubstr("handshake")));
  auto control = listNamespacesIn(cluster_.kubeconfig(), "");
  EXPECT_EQ(control.exit_code, 0) << control.output;
  EXPECT_EQ(control.output, "ok\n");
}

TEST_F(KubeClientIntegrationTest, TlsServerNameIsWhatTheCertificateIsVerifiedAgainst) {
  // The apiserver's certificate names kubernetes.default.svc (and 127.0.0.1, which the
  // server URL uses): a matching tls-server-name connects, a name it lacks fails verification.
  Connection named = connection_;
  named.tls_server_name = "kubernetes.default.svc";
  auto good = clientFor(named);
  auto listed = good->list(resources::kNamespace, "");
  EXPECT_TRUE(listed.ok()) << listed.status().message();

  auto refused =
      listNamespacesIn(cluster_.kubeconfig(), "--tls-server-name not-in-the-certificate.example");
  EXPECT_EQ(refused.exit_code, 1) << refused.output;
  EXPECT_THAT(refused.output, ::testing::AnyOf(HasSubstr("certificate"), HasSubstr("handshake")));
}

TEST_F(KubeClientIntegrationTest, AnExecTokenRejectedWithA401IsRefreshedAndRetried) {
  // The local cluster's token identity: the plugin hands out a wrong token first, then the
  // real one; the first request gets 401, and the transport asks the plugin again.
  auto& cluster = testing::LocalCluster::shared();
  auto token =
      cluster.kubectl("config view --raw -o jsonpath='{.users[?(@.name==\"token\")].user.token}'");
  ASSERT_EQ(token.exit_code, 0);
  ASSERT_FALSE(token.output.empty());
  auto dir = std::filesystem::path(::testing::TempDir()) / "exec-401";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "token") << token.output;
  std::ofstream(dir / "plugin.sh") << R"(#!/bin/sh
d=$(dirname "$0"); n=$(cat "$d/runs" 2>/dev/null || echo 0); n=$((n + 1)); echo $n > "$d/runs"
if [ $n -eq 1 ]; then t=wrong; else t=$(cat "$d/token"); fi
echo '{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","status":{"token":"'$t'"}}'
)";
  std::filesystem::permissions(dir / "plugin.sh", std::filesystem::perms::owner_all);
  std::ofstream(dir / "ca.crt") << connection_.ca_pem;
  std::ofstream(dir / "config")
      << "clusters: [{name: c, cluster: {server: \"" << connection_.server
      << "\", certificate-authority: ca.crt}}]\n"
      << "users: [{name: u, user: {exec: {apiVersion: "
         "client.authentication.k8s.io/v1beta1, command: ./plugin.sh}}}]\n"
      << "contexts: [{name: x, context: {cluster: c, user: u}}]\n"
      << "current-context: x\n";
  auto loaded = loadKubeconfig({.files = {dir / "config"}});
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  auto client = clientFor(*loaded);
  auto listed = client->list(resources::kNamespace, "");
  EXPECT_TRUE(listed.ok()) << listed.status().message();
  std::ifstream runs(dir / "runs");
  int count = 0;
  runs >> count;
  EXPECT_EQ(count, 2) << "the first token was rejected, the second accepted";
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace banlieue::kube
