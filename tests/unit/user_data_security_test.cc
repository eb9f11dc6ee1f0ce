// userData never leaves Secrets (docs/adr/0026, issue #25 item 1), the pure parts: which Secret
// may be userData, the rendered Secret the controller writes, and how the provider resolves an
// infrastructure object's reference (refusing a reference to any other Secret). The two-account
// proof against the real apiserver is tests/integration/user_data_security_test.cc.
#include "host/api/user_data_contract.h"
#include "host/common/base64.h"
#include "host/roles/controller/rendered_user_data.h"
#include "host/roles/provider/user_data_resolution.h"
#include "tests/support/fake_kube_client.h"

#include <banlieue/sdk/json.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace banlieue {
namespace {

namespace json = sdk::json;
using ::testing::HasSubstr;

rapidjson::Document parse(const std::string& text) {
  return json::parse(text, "test");
}

TEST(UserDataOptInTest, OnlyASecretLabelledTrueMayBeUserData) {
  EXPECT_TRUE(controller::optedInAsUserData(
      parse(R"({"metadata":{"labels":{"banlieue.io/user-data":"true"}}})")));
  for (const char* secret : {R"({"metadata":{}})", R"({"metadata":{"labels":{}}})",
                             R"({"metadata":{"labels":{"banlieue.io/user-data":"false"}}})",
                             R"({"metadata":{"labels":{"banlieue.io/user-data":"yes"}}})",
                             R"({"metadata":{"annotations":{"banlieue.io/user-data":"true"}}})"}) {
    EXPECT_FALSE(controller::optedInAsUserData(parse(secret))) << secret;
  }
}

api::VirtualMachine vm(const std::string& name) {
  api::VirtualMachine v;
  v.metadata.name = name;
  v.metadata.namespace_ = "team";
  v.metadata.uid = "vm-uid";
  return v;
}

TEST(RenderedUserDataTest, TheSecretIsTypedOwnedByTheVmAndHoldsTheText) {
  auto secret = controller::renderedUserDataSecret(vm("web"), "#cloud-config\nhostname: web\n");
  EXPECT_EQ(json::stringOr(&secret, "metadata.name"), "web-rendered-userdata");
  EXPECT_EQ(json::stringOr(&secret, "metadata.namespace"), "team");
  EXPECT_EQ(json::stringOr(&secret, "type"), "banlieue.io/rendered-user-data");
  const auto& owner = (*json::find(&secret, "metadata.ownerReferences"))[0];
  EXPECT_STREQ(owner["kind"].GetString(), "VirtualMachine");
  EXPECT_STREQ(owner["uid"].GetString(), "vm-uid");
  EXPECT_TRUE(owner["controller"].GetBool());
  EXPECT_EQ(controller::renderedUserDataText(secret), "#cloud-config\nhostname: web\n");
}

TEST(RenderedUserDataTest, ALongVmNameStillMakesAValidSecretName) {
  const std::string name(250, 'a');
  const std::string secret = controller::renderedUserDataSecretName(name);
  EXPECT_LE(secret.size(), 253U);
  EXPECT_THAT(secret, ::testing::EndsWith("-rendered-userdata"));
  EXPECT_NE(secret, controller::renderedUserDataSecretName(std::string(249, 'a') + "b"));
}

// The provider's side, against an in-memory API.
class ResolveUserDataTest : public ::testing::Test {
 protected:
  void SetUp() override {
    secret("web-user-data", "banlieue.io/rendered-user-data", "vm-uid", "#cloud-config\n");
    secret("credentials", "Opaque", "", "password");
  }

  void secret(const std::string& name, const std::string& type, const std::string& owner_uid,
              const std::string& text) {
    std::string owners = owner_uid.empty() ? "[]"
                                           : R"([{"apiVersion":"banlieue.io/v1alpha1",)"
                                             R"("kind":"VirtualMachine","name":"web","uid":")" +
                                                 owner_uid + R"(","controller":true}])";
    auto created = client_.create(kube::resources::kSecret, "team",
                                  R"({"apiVersion":"v1","kind":"Secret","metadata":{"name":")" +
                                      name + R"(","namespace":"team","ownerReferences":)" + owners +
                                      R"(},"type":")" + type + R"(","data":{"userData":")" +
                                      common::encodeBase64(text) + R"("}})");
    ASSERT_TRUE(created.ok()) << created.status().message();
    versions_[name] = json::stringOr(&*created, "metadata.resourceVersion");
  }

  // An infrastructure object of VM "web" whose annotations name `secret` at `revision`.
  rapidjson::Document machine(const std::string& secret, const std::string& revision) {
    return parse(
        R"({"metadata":{"name":"web","namespace":"team","annotations":{"banlieue.io/user-data-secret":")" +
        secret + R"(","banlieue.io/user-data-revision":")" + revision +
        R"("},"ownerReferences":[{"kind":"VirtualMachine","name":"web","uid":"vm-uid","controller":true}]},"spec":{}})");
  }

  testing::FakeKubeClient client_;
  std::map<std::string, std::string> versions_;
};

TEST_F(ResolveUserDataTest, NoReferenceMeansNoUserData) {
  auto resolved = roles::provider::resolveUserData(
      client_, parse(R"({"metadata":{"name":"web","namespace":"team"},"spec":{}})"));
  ASSERT_TRUE(resolved.ok());
  EXPECT_FALSE(resolved->has_value());
}

TEST_F(ResolveUserDataTest, TheReferencedRevisionIsReadAndInjectedIntoTheCallsCopyOnly) {
  auto object = machine("web-user-data", versions_["web-user-data"]);
  auto resolved = roles::provider::resolveUserData(client_, object);
  ASSERT_TRUE(resolved.ok()) << resolved.status().message();
  ASSERT_TRUE(resolved->has_value());
  EXPECT_EQ((*resolved)->text, "#cloud-config\n");
  EXPECT_EQ((*resolved)->format, "");
  roles::provider::injectUserData(object, **resolved, object.GetAllocator());
  EXPECT_EQ(json::stringOr(&object, "spec.userData"), "#cloud-config\n");
}

// An annotation edited by someone who may write infrastructure objects, to name a Secret the
// provider can read (its own credentials): nothing is read out of it.
TEST_F(ResolveUserDataTest, AReferenceToAnyOtherSecretIsRefused) {
  auto resolved =
      roles::provider::resolveUserData(client_, machine("credentials", versions_["credentials"]));
  ASSERT_FALSE(resolved.ok());
  EXPECT_EQ(resolved.status().reason(), "UserDataNotFound");
  EXPECT_THAT(resolved.status().message(), ::testing::Not(HasSubstr("password")));
  // The right type, but another VM's.
  secret("other-user-data", "banlieue.io/rendered-user-data", "other-uid", "#other\n");
  auto foreign = roles::provider::resolveUserData(
      client_, machine("other-user-data", versions_["other-user-data"]));
  ASSERT_FALSE(foreign.ok());
  EXPECT_EQ(foreign.status().reason(), "UserDataNotFound");
}

TEST_F(ResolveUserDataTest, AMissingOrNewerSecretIsReportedAndRetried) {
  auto missing = roles::provider::resolveUserData(client_, machine("gone-user-data", "1"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().reason(), "UserDataNotFound");
  auto stale = roles::provider::resolveUserData(client_, machine("web-user-data", "1"));
  ASSERT_FALSE(stale.ok());
  EXPECT_EQ(stale.status().reason(), "UserDataStale");
}

// Cluster API's bootstrap data (docs/adr/0050): the controller names the Machine's Secret and its
// key `value`; the Secret must be of Cluster API's bootstrap type and of the object's own cluster,
// and its `format` travels with the text.
class ResolveBootstrapDataTest : public ResolveUserDataTest {
 protected:
  void bootstrapSecret(const std::string& name, const std::string& type, const std::string& cluster,
                       const std::string& format) {
    auto created =
        client_.create(kube::resources::kSecret, "team",
                       R"({"apiVersion":"v1","kind":"Secret","metadata":{"name":")" + name +
                           R"(","namespace":"team","labels":{"cluster.x-k8s.io/cluster-name":")" +
                           cluster + R"("}},"type":")" + type + R"(","data":{"value":")" +
                           common::encodeBase64("{\"ignition\":{\"version\":\"3.4.0\"}}") +
                           R"(","format":")" + common::encodeBase64(format) + R"("}})");
    ASSERT_TRUE(created.ok()) << created.status().message();
    versions_[name] = json::stringOr(&*created, "metadata.resourceVersion");
  }

  // A VSphereMachine Cluster API made for cluster "c1", adopted by the controller.
  rapidjson::Document capiMachine(const std::string& secret) {
    return parse(
        R"({"metadata":{"name":"md-0-x","namespace":"team","labels":{"cluster.x-k8s.io/cluster-name":"c1"},"annotations":{"banlieue.io/user-data-secret":")" +
        secret + R"(","banlieue.io/user-data-revision":")" + versions_[secret] +
        R"(","banlieue.io/user-data-key":"value"},"ownerReferences":[{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Machine","name":"md-0-x","uid":"m-uid","controller":true}]},"spec":{}})");
  }
};

TEST_F(ResolveBootstrapDataTest, TheValueKeyIsReadWithItsFormat) {
  bootstrapSecret("md-0-x-bootstrap", "cluster.x-k8s.io/secret", "c1", "ignition");
  auto object = capiMachine("md-0-x-bootstrap");
  auto resolved = roles::provider::resolveUserData(client_, object);
  ASSERT_TRUE(resolved.ok()) << resolved.status().message();
  ASSERT_TRUE(resolved->has_value());
  EXPECT_EQ((*resolved)->text, R"({"ignition":{"version":"3.4.0"}})");
  EXPECT_EQ((*resolved)->format, "ignition");
  roles::provider::injectUserData(object, **resolved, object.GetAllocator());
  EXPECT_EQ(json::stringOr(&object, "spec.userDataFormat"), "ignition");
}

TEST_F(ResolveBootstrapDataTest, AnotherTypeOrAnotherClustersSecretIsRefused) {
  bootstrapSecret("opaque", "Opaque", "c1", "cloud-config");
  bootstrapSecret("c2-bootstrap", "cluster.x-k8s.io/secret", "c2", "cloud-config");
  for (const char* name : {"opaque", "c2-bootstrap"}) {
    auto resolved = roles::provider::resolveUserData(client_, capiMachine(name));
    ASSERT_FALSE(resolved.ok()) << name;
    EXPECT_EQ(resolved.status().reason(), "UserDataNotFound") << name;
  }
  // The rendered userData's rule still holds for an object that names no key.
  auto object = machine("c2-bootstrap", versions_["c2-bootstrap"]);
  EXPECT_FALSE(roles::provider::resolveUserData(client_, object).ok());
}

}  // namespace
}  // namespace banlieue
