// The provider runtime's instance config: credentials decoded, the CA bundle resolved from
// whichever source the Provider names into the one field plugins read, and a fingerprint that
// changes exactly when the instance must be re-created.
#include "host/roles/provider/connection_inputs.h"
#include "tests/support/fake_kube_client.h"

#include <banlieue/sdk/json.h>

#include <gtest/gtest.h>

namespace banlieue::roles::provider {
namespace {

namespace json = sdk::json;

rapidjson::Document provider(const std::string& connection, const std::string& extra_meta = "") {
  return json::parse(R"({"apiVersion":"banlieue.io/v1alpha1","kind":"Provider",
    "metadata":{"name":"p1","namespace":"team","uid":"u1","resourceVersion":"7",
                "generation":3,"managedFields":[{"manager":"kubectl"}])" +
                         extra_meta + R"(},
    "spec":{"providerClassRef":{"name":"file"},"connection":)" +
                         connection + R"(},
    "status":{"conditions":[]}})",
                     "provider");
}

class ConnectionInputsTest : public ::testing::Test {
 protected:
  void addSecret(const std::string& name, const std::string& data_json) {
    ASSERT_TRUE(client_
                    .create(kube::resources::kSecret, "team",
                            R"({"apiVersion":"v1","kind":"Secret","metadata":{"name":")" + name +
                                R"(","namespace":"team"},"data":)" + data_json + "}")
                    .ok());
  }
  testing::FakeKubeClient client_;
};

TEST(BuildConnectionInputsTest, ResolvedBundleReplacesTheSourceAndNoiseIsDropped) {
  auto p = provider(R"({"endpoint":"https://vc","caBundle":{"inline":"PEM-A"}})");
  auto inputs = buildConnectionInputs(p, {{"username", "u"}, {"password", "s3cret"}}, "PEM-B");
  auto config = json::parse(inputs.config_json, "config");
  EXPECT_EQ(json::stringOr(&config, "provider.spec.connection.caBundle.data"), "PEM-B");
  EXPECT_EQ(json::find(&config, "provider.spec.connection.caBundle.inline"), nullptr);
  EXPECT_EQ(json::stringOr(&config, "credentials.password"), "s3cret");
  EXPECT_EQ(json::find(&config, "provider.status"), nullptr);
  EXPECT_EQ(json::find(&config, "provider.metadata.managedFields"), nullptr);
  EXPECT_EQ(json::stringOr(&config, "provider.metadata.uid"), "u1");
  EXPECT_EQ(inputs.fingerprint.size(), 64u);
  EXPECT_EQ(inputs.fingerprint.find("s3cret"), std::string::npos);
}

TEST(BuildConnectionInputsTest, FingerprintFollowsConnectionAndSecretsOnly) {
  auto base = provider(R"({"endpoint":"https://vc"})");
  auto relabelled = provider(R"({"endpoint":"https://vc"})", R"(,"labels":{"dc":"dc2"})");
  auto moved = provider(R"({"endpoint":"https://vc2"})");
  std::map<std::string, std::string> creds{{"password", "a"}};
  std::string fp = buildConnectionInputs(base, creds, "").fingerprint;
  EXPECT_EQ(buildConnectionInputs(relabelled, creds, "").fingerprint, fp);
  EXPECT_NE(buildConnectionInputs(moved, creds, "").fingerprint, fp);
  EXPECT_NE(buildConnectionInputs(base, {{"password", "b"}}, "").fingerprint, fp);
  EXPECT_NE(buildConnectionInputs(base, creds, "PEM").fingerprint, fp);
}

TEST_F(ConnectionInputsTest, ReadsCredentialsAndABundleFromASecretKey) {
  addSecret("creds", R"({"password":"czNjcmV0"})");                    // s3cret
  addSecret("ca", R"({"ca.crt":"UEVNLUM=","other.pem":"UEVNLUQ="})");  // PEM-C, PEM-D
  auto p = provider(
      R"({"endpoint":"https://vc","credentialsRef":{"name":"creds"},"caBundle":{"secretRef":{"name":"ca"}}})");
  auto inputs = readConnectionInputs(client_, p);
  ASSERT_TRUE(inputs.ok()) << inputs.status().message();
  auto config = json::parse(inputs->config_json, "config");
  EXPECT_EQ(json::stringOr(&config, "credentials.password"), "s3cret");
  EXPECT_EQ(json::stringOr(&config, "provider.spec.connection.caBundle.data"), "PEM-C");

  auto keyed = provider(
      R"({"endpoint":"https://vc","caBundle":{"secretRef":{"name":"ca","key":"other.pem"}}})");
  auto other = readConnectionInputs(client_, keyed);
  ASSERT_TRUE(other.ok()) << other.status().message();
  EXPECT_NE(other->config_json.find("PEM-D"), std::string::npos);
}

TEST_F(ConnectionInputsTest, ReadsABundleFromAConfigMap) {
  ASSERT_TRUE(client_
                  .create(kube::resources::kConfigMap, "team",
                          R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"ca",
                              "namespace":"team"},"data":{"ca.crt":"PEM-CM"}})")
                  .ok());
  auto p = provider(R"({"endpoint":"https://vc","caBundle":{"configMapRef":{"name":"ca"}}})");
  auto inputs = readConnectionInputs(client_, p);
  ASSERT_TRUE(inputs.ok()) << inputs.status().message();
  EXPECT_NE(inputs->config_json.find("PEM-CM"), std::string::npos);
}

TEST_F(ConnectionInputsTest, EachMissingPieceHasItsReason) {
  auto no_secret = readConnectionInputs(
      client_, provider(R"({"endpoint":"https://vc","credentialsRef":{"name":"gone"}})"));
  ASSERT_FALSE(no_secret.ok());
  EXPECT_EQ(no_secret.status().reason(), "CredentialsNotFound");
  EXPECT_NE(no_secret.status().message().find("team/gone"), std::string::npos);

  auto two = readConnectionInputs(
      client_, provider(R"({"endpoint":"x","caBundle":{"inline":"A","secretRef":{"name":"b"}}})"));
  ASSERT_FALSE(two.ok());
  EXPECT_EQ(two.status().reason(), "CABundleInvalid");

  addSecret("ca", R"({"tls.crt":"QQ=="})");
  auto no_key = readConnectionInputs(
      client_, provider(R"({"endpoint":"x","caBundle":{"secretRef":{"name":"ca"}}})"));
  ASSERT_FALSE(no_key.ok());
  EXPECT_EQ(no_key.status().reason(), "CABundleKeyMissing");

  addSecret("bad", R"({"password":"***"})");
  auto bad = readConnectionInputs(client_,
                                  provider(R"({"endpoint":"x","credentialsRef":{"name":"bad"}})"));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().reason(), "CredentialsInvalid");
}

TEST_F(ConnectionInputsTest, AForbiddenSecretSaysSo) {
  client_.failNext([](const std::string& verb, const std::string& plural) {
    return verb == "get" && plural == "secrets"
               ? Status(Code::kPermissionDenied, "Forbidden", "secrets \"x\" is forbidden")
               : Status::ok();
  });
  auto denied =
      readConnectionInputs(client_, provider(R"({"endpoint":"x","credentialsRef":{"name":"x"}})"));
  ASSERT_FALSE(denied.ok());
  EXPECT_EQ(denied.status().reason(), "CredentialsForbidden");
}

// Issue #26: an apiserver that does not answer says nothing about the credentials; only an
// answer about them disconnects the plugin instance.
TEST(InputsFailureTest, OnlyAnAnswerAboutTheInputsDisconnects) {
  EXPECT_FALSE(inputsFailureIsAnAnswer(error(Code::kUnavailable, "ConnectionFailed", "refused")));
  EXPECT_FALSE(inputsFailureIsAnAnswer(error(Code::kDeadlineExceeded, "Timeout", "no answer")));
  EXPECT_FALSE(inputsFailureIsAnAnswer(error(Code::kInternal, "InternalError", "etcd")));
  EXPECT_TRUE(inputsFailureIsAnAnswer(error(Code::kFailedPrecondition, "CredentialsNotFound", "")));
  EXPECT_TRUE(inputsFailureIsAnAnswer(error(Code::kPermissionDenied, "CredentialsForbidden", "")));
  EXPECT_TRUE(inputsFailureIsAnAnswer(error(Code::kInvalidArgument, "InvalidCredentials", "")));
}

}  // namespace
}  // namespace banlieue::roles::provider
