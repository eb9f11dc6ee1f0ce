#include <banlieue/sdk/json.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace banlieue::sdk::json {
namespace {

TEST(SdkJsonTest, DottedPathsReachNestedMembers) {
  auto doc = parse(
      R"({"abi":{"major":1},"abi.major":7,"spec":{"connection":{"endpoint":"qemu:///system"}}})",
      "t");
  // Regression: a dotted segment must not be matched as the whole remaining path.
  EXPECT_EQ(integer(&doc, "abi.major"), 1);
  EXPECT_EQ(stringOr(&doc, "spec.connection.endpoint"), "qemu:///system");
  EXPECT_FALSE(string(&doc, "spec.connection.missing").has_value());
  EXPECT_FALSE(string(&doc, "spec.connection.endpoint.deeper").has_value());
  EXPECT_EQ(stringOr(&doc, "nope", "fallback"), "fallback");
}

TEST(SdkJsonTest, ParseErrorsNameTheDocumentAndOffset) {
  try {
    (void)parse(R"({"a": )", "reconcile request");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Code::kInvalidArgument);
    EXPECT_EQ(e.reason(), "InvalidJson");
    EXPECT_THAT(e.what(), ::testing::HasSubstr("reconcile request is not valid JSON"));
  }
}

TEST(SdkJsonTest, TrailingGarbageAndEmbeddedNulAreErrors) {
  EXPECT_THROW((void)parse(R"({"a":1} trailing)", "t"), Error);
  EXPECT_THROW((void)parse(std::string_view("{\"a\":1}\0{}", 11), "t"), Error);
  EXPECT_NO_THROW((void)parse("{\"a\":1}  \n", "t"));
}

TEST(SdkJsonTest, RequireStringNamesTheField) {
  auto doc = parse(R"({"artifact":{}})", "t");
  try {
    (void)requireString(&doc, "artifact.path", "import_image request");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.reason(), "MissingField");
    EXPECT_STREQ(e.what(), "import_image request: field 'artifact.path' is required");
  }
}

TEST(SdkJsonTest, StringArrayKeepsOrderAndEscapes) {
  rapidjson::Document doc(rapidjson::kObjectType);
  doc.AddMember("features", stringArray({"tpm", "secure \"boot\"", ""}, doc.GetAllocator()),
                doc.GetAllocator());
  doc.AddMember("none", stringArray({}, doc.GetAllocator()), doc.GetAllocator());
  EXPECT_EQ(serialize(doc), R"({"features":["tpm","secure \"boot\"",""],"none":[]})");
}

}  // namespace
}  // namespace banlieue::sdk::json
