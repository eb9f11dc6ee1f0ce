#include "host/plugin/payload_schemas.h"

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
