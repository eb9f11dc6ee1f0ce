// When a provider pod writes what it loaded over its class's status.plugin (issue #21): never
// over a newer class generation's publication, once over a different one of the same
// generation (two builds under one generation cannot keep overwriting each other), and not at
// all when it is already there.
#include "host/roles/provider/class_publication.h"

#include "host/api/codec.h"

#include <banlieue/sdk/json.h>
#include <gtest/gtest.h>

namespace banlieue::roles::provider {
namespace {

api::PublishedPlugin published(const std::string& version, int64_t generation) {
  return api::PublishedPlugin{
      .name = "qemu",
      .version = version,
      .abi = "1.3",
      .sha256 = std::string(64, 'a'),
      .infrastructure_kinds = {{"infrastructure.qemu.example.com/v1alpha1", "QemuMachine"}},
      .operations = {"introspect", "console"},
      .observed_generation = generation};
}

// status.plugin as the apiserver would return it after the publisher wrote `p`.
rapidjson::Document asStored(const api::PublishedPlugin& p) {
  api::ProviderClass holder;
  holder.status.plugin = p;
  rapidjson::Document doc = sdk::json::parse(api::toJson(holder), "class");
  rapidjson::Document out;
  out.CopyFrom(*sdk::json::find(&doc, "status.plugin"), out.GetAllocator());
  return out;
}

TEST(ClassPublicationTest, NothingPublishedIsPublished) {
  EXPECT_TRUE(shouldPublish(nullptr, published("0.2.0", 3), false));
  EXPECT_TRUE(shouldPublish(nullptr, published("0.2.0", 3), true));
}

TEST(ClassPublicationTest, TheSamePublicationIsNotWrittenAgain) {
  auto current = asStored(published("0.2.0", 3));
  EXPECT_FALSE(shouldPublish(&current, published("0.2.0", 3), false));
}

TEST(ClassPublicationTest, AnOlderGenerationIsReplacedANewerOneNever) {
  auto older = asStored(published("0.1.0", 2));
  EXPECT_TRUE(shouldPublish(&older, published("0.2.0", 3), true));
  auto newer = asStored(published("0.3.0", 4));
  EXPECT_FALSE(shouldPublish(&newer, published("0.2.0", 3), false));
}

TEST(ClassPublicationTest, TwoBuildsUnderOneGenerationWriteOnceEach) {
  auto theirs = asStored(published("0.2.1", 3));
  EXPECT_TRUE(shouldPublish(&theirs, published("0.2.0", 3), false));
  EXPECT_FALSE(shouldPublish(&theirs, published("0.2.0", 3), true));
}

}  // namespace
}  // namespace banlieue::roles::provider
