// A Provider's VMImage row for each source kind and build phase.
#include "host/roles/provider/image_row.h"

#include <banlieue/sdk/json.h>

#include <gtest/gtest.h>

namespace banlieue::roles::provider {
namespace {

namespace json = sdk::json;

rapidjson::Document image(const std::string& sources, const std::string& status = "{}") {
  return json::parse(R"({"apiVersion":"banlieue.io/v1alpha1","kind":"VMImage",
    "metadata":{"name":"ubuntu"},"spec":{"sources":)" +
                         sources + R"(},"status":)" + status + "}",
                     "image");
}

class ImageRowTest : public ::testing::Test {
 protected:
  ImageRowContext context(const rapidjson::Value* fds) { return {"libvirt", "team", "kvm1", fds}; }
  rapidjson::Document fds_ = json::parse(R"([{"name":"host-a"},{"name":"host-b"}])", "fds");
};

TEST_F(ImageRowTest, NoSourceForTheClassMeansNoRow) {
  auto img = image(R"([{"providerClass":"vsphere","kind":"Template","ref":"tpl"}])");
  EXPECT_FALSE(buildImageRow(img, context(&fds_)).has_value());
}

TEST_F(ImageRowTest, ATemplateIsUsedAsIsInEveryFailureDomain) {
  auto img = image(R"([{"providerClass":"libvirt","kind":"BackingFile","ref":"base.qcow2"}])");
  auto row = buildImageRow(img, context(&fds_));
  ASSERT_TRUE(row.has_value());
  EXPECT_TRUE(json::boolean(&*row, "ready"));
  EXPECT_EQ(json::stringOr(&*row, "providerName"), "kvm1");
  EXPECT_EQ(json::stringOr(&*row, "providerNamespace"), "team");
  EXPECT_EQ(json::stringOr(&*row, "reason"), "Referenced");
  EXPECT_EQ(json::stringOr(&*row, "resolvedRef"), "base.qcow2");
  ASSERT_EQ((*row)["zones"].Size(), 2u);
  EXPECT_EQ(json::stringOr(&(*row)["zones"][1], "name"), "host-b");
  EXPECT_TRUE(json::boolean(&(*row)["zones"][1], "ready"));
}

TEST_F(ImageRowTest, WithoutFailureDomainsOrRefItIsNotReady) {
  auto img = image(R"([{"providerClass":"libvirt","kind":"Template","ref":"tpl"}])");
  auto none = buildImageRow(img, context(nullptr));
  EXPECT_FALSE(json::boolean(&*none, "ready"));
  EXPECT_EQ(json::stringOr(&*none, "reason"), "NoFailureDomains");
  auto no_ref =
      buildImageRow(image(R"([{"providerClass":"libvirt","kind":"Template"}])"), context(&fds_));
  EXPECT_EQ(json::stringOr(&*no_ref, "reason"), "InvalidSource");
}

TEST_F(ImageRowTest, AUrlSourceFollowsTheBuild) {
  std::string url = R"([{"providerClass":"libvirt","kind":"Url","ref":"oci://x"}])";
  auto pending_row = buildImageRow(image(url), context(&fds_));
  EXPECT_EQ(json::stringOr(&*pending_row, "reason"), "BuildPending");
  auto building = image(url, R"({"buildArtifact":{"phase":"Building"}})");
  auto building_row = buildImageRow(building, context(&fds_));
  EXPECT_NE(json::stringOr(&*building_row, "message").find("Building"), std::string::npos);
  auto failed = image(url, R"({"buildArtifact":{"phase":"Failed","message":"no space"}})");
  auto failed_row = buildImageRow(failed, context(&fds_));
  EXPECT_EQ(json::stringOr(&*failed_row, "reason"), "BuildFailed");
  EXPECT_EQ(json::stringOr(&*failed_row, "message"), "no space");
  auto built = image(url, R"({"buildArtifact":{"phase":"Ready"}})");
  auto built_row = buildImageRow(built, context(&fds_));
  EXPECT_FALSE(json::boolean(&*built_row, "ready"));
  EXPECT_EQ(json::stringOr(&*built_row, "reason"), "ImportPending");
}

TEST_F(ImageRowTest, AnUnknownKindIsNamed) {
  auto row =
      buildImageRow(image(R"([{"providerClass":"libvirt","kind":"Floppy"}])"), context(&fds_));
  EXPECT_EQ(json::stringOr(&*row, "reason"), "UnsupportedSourceKind");
}

TEST(ImageRowFieldManagerTest, OnePerProviderAndCapped) {
  EXPECT_EQ(imageRowFieldManager("libvirt", "team", "kvm1"),
            "banlieue.io/provider-libvirt/team/kvm1");
  std::string long_name(150, 'p');
  auto capped = imageRowFieldManager("libvirt", "team", long_name);
  EXPECT_EQ(capped.size(), 128u);
  EXPECT_NE(capped, imageRowFieldManager("libvirt", "team", long_name + "x"));
}

}  // namespace
}  // namespace banlieue::roles::provider
