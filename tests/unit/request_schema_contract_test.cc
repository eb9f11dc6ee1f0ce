// The request schemas (sdk/schemas/*.request.json) describe what the host sends: the instance
// config the provider runtime builds is valid against instance_create.request, with the CA
// bundle in the one resolved form plugins read, and the envelopes of validate and introspect
// are as docs/provider-contract.md and abi/banlieue/provider_v1.h describe them.
#include "host/plugin/payload_schemas.h"
#include "host/roles/provider/connection_inputs.h"

#include <banlieue/sdk/json.h>

#include <gtest/gtest.h>

namespace banlieue {
namespace {

namespace json = sdk::json;
using plugin::validatePayload;

const char* const kProvider = R"({"apiVersion":"banlieue.io/v1alpha1","kind":"Provider",
    "metadata":{"name":"p1","namespace":"team","uid":"u1"},
    "spec":{"providerClassRef":{"name":"file"},
            "connection":{"endpoint":"https://vc","credentialsRef":{"name":"creds"},
                          "caBundle":{"configMapRef":{"name":"ca"}}}}})";

TEST(RequestSchemaContractTest, TheInstanceConfigTheRuntimeBuildsIsValid) {
  auto provider = json::parse(kProvider, "provider");
  for (const char* pem : {"", "-----BEGIN CERTIFICATE-----\n"}) {
    auto inputs = roles::provider::buildConnectionInputs(provider, {{"password", "s3cret"}}, pem);
    auto valid = validatePayload("instance_create.request", inputs.config_json);
    EXPECT_TRUE(valid.isOk()) << "bundle '" << pem << "': " << valid.message();
  }
}

TEST(RequestSchemaContractTest, ThePluginGetsTheCaBundleResolvedOnly) {
  // The host resolves inline / configMapRef / secretRef into caBundle.data (docs/adr/0014): a
  // config that still names a source is not one the host sends.
  auto unresolved = validatePayload("instance_create.request", R"({"provider":
      {"apiVersion":"banlieue.io/v1alpha1","kind":"Provider","metadata":{"name":"p1"},
       "spec":{"connection":{"endpoint":"https://vc","caBundle":{"configMapRef":{"name":"ca"}}}}}})");
  EXPECT_FALSE(unresolved.isOk());
  EXPECT_NE(unresolved.message().find("caBundle"), std::string::npos) << unresolved.message();
  EXPECT_TRUE(validatePayload("instance_create.request", R"({"provider":
      {"apiVersion":"banlieue.io/v1alpha1","kind":"Provider","metadata":{"name":"p1"},
       "spec":{"connection":{"endpoint":"https://vc","caBundle":{"data":"PEM"}}}}})")
                  .isOk());
}

TEST(RequestSchemaContractTest, AnIntrospectRequestAlwaysCarriesTheProvider) {
  std::string provider = kProvider;
  EXPECT_TRUE(validatePayload("introspect.request", R"({"provider":)" + provider + "}").isOk());
  EXPECT_TRUE(validatePayload("introspect.request",
                              R"({"provider":)" + provider + R"(,"operation":{"token":"walk-2"}})")
                  .isOk());
  EXPECT_FALSE(validatePayload("introspect.request", "{}").isOk());
}

TEST(RequestSchemaContractTest, AValidateRequestIsAnAdmissionEnvelope) {
  const std::string object =
      R"({"apiVersion":"infrastructure.file.example.com/v1alpha1","kind":"FileMachine",
          "metadata":{"name":"vm1"},"spec":{}})";
  EXPECT_TRUE(
      validatePayload("validate.request", R"({"operation":"CREATE","object":)" + object + "}")
          .isOk());
  EXPECT_TRUE(validatePayload("validate.request", R"({"operation":"UPDATE","object":)" + object +
                                                      R"(,"oldObject":)" + object + "}")
                  .isOk());
  EXPECT_FALSE(
      validatePayload("validate.request", R"({"operation":"PATCH","object":)" + object + "}")
          .isOk());
  EXPECT_FALSE(validatePayload("validate.request", R"({"operation":"CREATE"})").isOk());
}

TEST(RequestSchemaContractTest, AConsoleRequestIsSerialOrWebmks) {
  const std::string machine =
      R"("kind":"VSphereMachine","machine":{"metadata":{"name":"m1","uid":"u1"},"spec":{"providerID":"vsphere://x"}})";
  EXPECT_TRUE(validatePayload("console.request", "{" + machine + R"(,"console":"serial"})").isOk());
  EXPECT_TRUE(validatePayload("console.request", "{" + machine + R"(,"console":"webmks"})").isOk());
  EXPECT_FALSE(validatePayload("console.request", "{" + machine + R"(,"console":"vnc"})").isOk());
  // The reply of a ticket console: its url is wss://, its lifetime a positive integer.
  EXPECT_TRUE(
      validatePayload(
          "console.response",
          R"({"status":{"console":"webmks","url":"wss://esx-1:443/ticket/t","expiresInSeconds":30}})")
          .isOk());
  EXPECT_FALSE(
      validatePayload("console.response", R"({"status":{"console":"webmks","url":"http://x"}})")
          .isOk());
  EXPECT_FALSE(
      validatePayload("console.response",
                      R"({"status":{"console":"webmks","url":"wss://x","expiresInSeconds":0}})")
          .isOk());
}

}  // namespace
}  // namespace banlieue
