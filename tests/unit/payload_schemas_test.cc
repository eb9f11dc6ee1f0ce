#include "host/plugin/payload_schemas.h"

#include <banlieue/sdk/provider.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace banlieue::plugin {
namespace {

using ::testing::HasSubstr;

TEST(PayloadSchemasTest, EverySchemaFileIsCompiledIn) {
  auto names = payloadSchemaNames();
  for (const char* expected :
       {"describe.response", "instance_create.request", "introspect.request", "introspect.response",
        "reconcile.request", "reconcile.response", "import_image.request", "delete_image.request",
        "validate.request", "validate.response"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end()) << expected;
  }
}

TEST(PayloadSchemasTest, AcceptsAValidDescribe) {
  EXPECT_TRUE(validatePayload("describe.response",
                              R"({"name":"libvirt","providerVersion":"0.1.0","backend":"libvirt",
                                  "kinds":[{"group":"infrastructure.banlieue.io","version":"v1beta2",
                                            "kind":"LibvirtMachine","operations":["reconcile","finalize"]}]})")
                  .isOk());
}

TEST(PayloadSchemasTest, NamesTheViolatingPointer) {
  auto st = validatePayload("describe.response",
                            R"({"name":"libvirt","providerVersion":"0.1.0","backend":"libvirt",
                                "kinds":[{"group":"g","version":"v","kind":"lowercase","operations":[]}]})");
  EXPECT_EQ(st.reason(), "SchemaViolation");
  EXPECT_THAT(st.message(), HasSubstr("#/kinds/0/kind"));
  EXPECT_THAT(st.message(), HasSubstr("pattern"));
}

TEST(PayloadSchemasTest, InProgressReplyNeedsAToken) {
  EXPECT_FALSE(validatePayload("reconcile.response", R"({"operation":{}})").isOk());
  EXPECT_TRUE(validatePayload("reconcile.response", R"({"operation":{"token":"task-42"}})").isOk());
  EXPECT_TRUE(validatePayload("reconcile.response", R"({"operation":null})").isOk())
      << "null clears the stored token (provider_v1.h), what Reply::clearOperation() sends";
}

// A reconcile reply may say the machine is at rest (docs/provider-contract.md, "Settled
// replies"): a boolean, which is what the SDK's Reply::settle() writes; any other value is
// refused naming it. Absent is what a plugin built before the field sends.
TEST(PayloadSchemasTest, SettledIsABoolean) {
  EXPECT_TRUE(validatePayload("reconcile.response", R"({"settled":true})").isOk());
  EXPECT_TRUE(validatePayload("reconcile.response", R"({"settled":false,"status":{}})").isOk());
  EXPECT_TRUE(validatePayload("reconcile.response", R"({"status":{}})").isOk());
  auto st = validatePayload("reconcile.response", R"({"settled":"yes"})");
  EXPECT_EQ(st.reason(), "SchemaViolation");
  EXPECT_THAT(st.message(), HasSubstr("#/settled"));

  sdk::Reply reply;
  reply.status().AddMember("observedPowerState", "PoweredOn", reply.allocator());
  reply.clearOperation();
  reply.settle();
  EXPECT_TRUE(validatePayload("reconcile.response", sdk::json::serialize(reply.body())).isOk())
      << sdk::json::serialize(reply.body());
}

TEST(PayloadSchemasTest, ImportRequestRequiresAChecksum) {
  auto st = validatePayload("import_image.request",
                            R"({"image":{"metadata":{"name":"ubuntu"}},"failureDomain":"dc1-c1",
                                "artifact":{"path":"/a/disk.raw","format":"raw"}})");
  EXPECT_FALSE(st.isOk());
  EXPECT_THAT(st.message(), HasSubstr("#/artifact"));
}

// SINCE 1.1: a deletion names its failure domain; the import's resolvedRef is optional.
TEST(PayloadSchemasTest, DeleteImageRequestNeedsAFailureDomain) {
  auto missing = validatePayload("delete_image.request", R"({"image":{"metadata":{"name":"u"}}})");
  EXPECT_FALSE(missing.isOk());
  EXPECT_THAT(missing.message(), HasSubstr("failureDomain"));
  EXPECT_TRUE(validatePayload("delete_image.request",
                              R"({"image":{"metadata":{"name":"u"}},"failureDomain":"dc1-c1"})")
                  .isOk());
}

TEST(PayloadSchemasTest, MalformedJsonAndUnknownSchema) {
  EXPECT_EQ(validatePayload("describe.response", "{").reason(), "InvalidJson");
  EXPECT_EQ(validatePayload("no.such", "{}").reason(), "UnknownSchema");
}

}  // namespace
}  // namespace banlieue::plugin
