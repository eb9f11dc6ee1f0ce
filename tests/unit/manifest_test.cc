#include "host/plugin/manifest.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

namespace banlieue::plugin {
namespace {

using ::testing::HasSubstr;

class ManifestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("manifest-" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  void write(const std::string& text) { std::ofstream(dir_ / "provider.json") << text; }

  Status readError(const std::string& text) {
    write(text);
    auto m = readManifest(dir_);
    EXPECT_FALSE(m.ok()) << "manifest accepted: " << text;
    return m.ok() ? Status() : m.status();
  }

  static std::string valid(const std::string& replace_key = "", const std::string& with = "") {
    std::string name = R"("name": "libvirt")";
    std::string library = R"("library": "libbanlieue-provider-libvirt.so")";
    std::string abi = R"("abi": {"major": 1, "minorRequired": 0})";
    if (replace_key == "name") name = with;
    if (replace_key == "library") library = with;
    if (replace_key == "abi") abi = with;
    return R"({"manifestVersion": 1, )" + name + ", " + library + ", " + abi +
           R"(, "providerVersion": "0.1.0",
              "infrastructure": [{"group": "infrastructure.banlieue.io", "version": "v1beta2", "kind": "LibvirtMachine"}]})";
  }

  std::filesystem::path dir_;
};

TEST_F(ManifestTest, ReadsEveryField) {
  write(R"({"manifestVersion": 1, "name": "vsphere", "library": "libbanlieue-provider-vsphere.so",
            "abi": {"major": 1, "minorRequired": 0}, "providerVersion": "0.4.0",
            "infrastructure": [{"group": "infrastructure.banlieue.io", "version": "v1beta2", "kind": "VSphereMachine"},
                               {"group": "infrastructure.banlieue.io", "version": "v1beta2", "kind": "VSphereCluster"}],
            "sha256": "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
            "samples": {"VSphereMachine": "samples/vm.json"}})");
  auto m = readManifest(dir_);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->name, "vsphere");
  EXPECT_EQ(m->libraryPath(), std::filesystem::canonical(dir_) / "libbanlieue-provider-vsphere.so");
  ASSERT_EQ(m->infrastructure.size(), 2u);
  EXPECT_EQ(m->infrastructure[1].kind, "VSphereCluster");
  EXPECT_EQ(m->sha256.value_or(""),
            "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
  EXPECT_EQ(m->samples.at("VSphereMachine"), "samples/vm.json");
}

TEST_F(ManifestTest, MissingFileIsNamed) {
  auto m = readManifest(dir_);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().reason(), "ManifestMissing");
  EXPECT_THAT(m.status().message(),
              HasSubstr((std::filesystem::canonical(dir_) / "provider.json").string()));
}

TEST_F(ManifestTest, MissingDirectoryIsNamed) {
  auto m = readManifest(dir_ / "nope");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().reason(), "PluginDirectoryMissing");
}

TEST_F(ManifestTest, MalformedJsonGivesOffset) {
  auto st = readError(R"({"name": )");
  EXPECT_EQ(st.reason(), "InvalidManifest");
  EXPECT_THAT(st.message(), HasSubstr("provider.json is not valid JSON"));
  EXPECT_THAT(st.message(), HasSubstr("at offset"));
}

TEST_F(ManifestTest, EachMissingFieldIsNamed) {
  EXPECT_THAT(readError(valid("name", R"("x": 1)")).message(),
              HasSubstr("field 'name' is missing"));
  EXPECT_THAT(readError(valid("library", R"("x": 1)")).message(),
              HasSubstr("field 'library' is missing"));
  EXPECT_THAT(readError(valid("abi", R"("abi": {})")).message(),
              HasSubstr("field 'abi.major' is missing"));
  EXPECT_THAT(readError(R"({"manifestVersion": 2})").message(),
              HasSubstr("'manifestVersion' must be 1"));
}

TEST_F(ManifestTest, LibraryMustStayInsideTheDirectory) {
  EXPECT_THAT(readError(valid("library", R"("library": "../evil.so")")).message(),
              HasSubstr("must be a file name inside the plugin directory"));
  EXPECT_THAT(readError(valid("library", R"("library": "/usr/lib/evil.so")")).message(),
              HasSubstr("must be a file name inside the plugin directory"));
}

TEST_F(ManifestTest, NameMustBeADnsLabel) {
  EXPECT_THAT(readError(valid("name", R"("name": "Bad_Name")")).message(),
              HasSubstr("must be a DNS label"));
}

TEST_F(ManifestTest, Sha256MustBeHex) {
  write(valid().substr(0, valid().size() - 1) + R"(, "sha256": "XYZ"})");
  auto m = readManifest(dir_);
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(), HasSubstr("'sha256' must be 64 lowercase hex digits"));
}

TEST(AbiCompatibilityTest, NegotiatesMajorAndMinor) {
  Manifest m;
  m.name = "x";
  m.file = "/plugins/x/provider.json";
  m.abi_major = 1;
  m.abi_minor_required = 0;
  EXPECT_TRUE(checkAbiCompatibility(m, 1, 0).isOk());
  EXPECT_TRUE(checkAbiCompatibility(m, 1, 4).isOk()) << "a newer host serves an older plugin";
  m.abi_minor_required = 5;
  auto newer = checkAbiCompatibility(m, 1, 4);
  EXPECT_EQ(newer.reason(), "AbiMinorTooNew");
  EXPECT_THAT(newer.message(), HasSubstr("needs ABI 1.5 or later; this host implements 1.4"));
  m.abi_major = 2;
  EXPECT_EQ(checkAbiCompatibility(m, 1, 4).reason(), "AbiMajorMismatch");
}

}  // namespace
}  // namespace banlieue::plugin

namespace banlieue::plugin {
namespace {

TEST(ManifestBoundsTest, IntegersOutsideTheirRangeAreRefusedNotTruncated) {
  auto dir = std::filesystem::path(::testing::TempDir()) / "manifest-bounds";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "provider.json")
      << R"({"manifestVersion":1,"name":"x","library":"libx.so","abi":{"major":4294967297},"providerVersion":"1","infrastructure":[]})";
  auto m = readManifest(dir);
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(),
              ::testing::HasSubstr("'abi.major' must be an integer from 1 to 65535"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace banlieue::plugin
