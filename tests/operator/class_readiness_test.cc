// Whether a ProviderClass is usable, from the plugin's provider.json (never its code), the
// backend's ClusterRole and the class's fields; and the machineKind it publishes.
#include "host/roles/operator/class_readiness.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace banlieue::roles::provider_operator {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class ClassReadinessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("banlieue-operator-plugins-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    writePlugin("file", "file",
                R"([{"group": "infrastructure.file.example.com", "version": "v1alpha1",)"
                R"( "kind": "FileMachine"}])");
    dirs_.local = root_;
    dirs_.image = "/usr/lib/banlieue/plugins";
  }
  void TearDown() override { fs::remove_all(root_); }

  void writePlugin(const std::string& dir, const std::string& name,
                   const std::string& infrastructure) {
    fs::create_directories(root_ / dir);
    fs::permissions(root_, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                               fs::perms::others_read | fs::perms::others_exec);
    fs::permissions(root_ / dir, fs::perms::owner_all | fs::perms::group_read |
                                     fs::perms::group_exec | fs::perms::others_read |
                                     fs::perms::others_exec);
    std::ofstream(root_ / dir / "provider.json")
        << R"({"manifestVersion": 1, "name": ")" << name
        << R"(", "library": "libbanlieue-provider-)" << name
        << R"(.so", "abi": {"major": 1, "minorRequired": 0}, "providerVersion": "0.1.0",)"
        << R"( "infrastructure": )" << infrastructure << "}";
    fs::permissions(root_ / dir / "provider.json", fs::perms::owner_read | fs::perms::owner_write |
                                                       fs::perms::group_read |
                                                       fs::perms::others_read);
  }

  static api::ProviderClass managed(const std::string& path = "/usr/lib/banlieue/plugins/file") {
    api::ProviderClass c;
    c.metadata.name = "file";
    c.spec.backend = "file";
    c.spec.plugin = api::PluginRef{path};
    c.spec.image = api::ContainerImage{"localhost/banlieue", "0.1.0", "", "", {}};
    return c;
  }

  fs::path root_;
  PluginDirectories dirs_;
};

TEST_F(ClassReadinessTest, AUsableClassIsReadyAndPublishesItsMachineKind) {
  auto r = evaluateClass(managed(), dirs_, true);
  EXPECT_TRUE(r.ready) << r.reason << ": " << r.message;
  EXPECT_EQ(r.reason, "Ready");
  ASSERT_TRUE(r.machine_kind.has_value());
  EXPECT_EQ(r.machine_kind->api_version, "infrastructure.file.example.com/v1alpha1");
  EXPECT_EQ(r.machine_kind->kind, "FileMachine");
}

TEST_F(ClassReadinessTest, RelativePathsAndTheImageDirectoryAreReadFromTheLocalCopy) {
  EXPECT_TRUE(evaluateClass(managed("file"), dirs_, true).ready);
  dirs_.image = "/usr/lib/banlieue/plugins/";
  EXPECT_TRUE(evaluateClass(managed(), dirs_, true).ready);
}

TEST_F(ClassReadinessTest, PluginProblemsComeFirstWithTheirReason) {
  auto r = evaluateClass(managed("/usr/lib/banlieue/plugins/vsphere"), dirs_, false);
  EXPECT_FALSE(r.ready);
  EXPECT_EQ(r.reason, "PluginNotFound");
  EXPECT_FALSE(r.machine_kind.has_value());
  EXPECT_EQ(evaluateClass(managed("/etc"), dirs_, true).reason, "PluginPathEscapes");
  EXPECT_EQ(evaluateClass(managed("file/../.."), dirs_, true).reason, "PluginPathInvalid");
  auto unset = managed();
  unset.spec.plugin.reset();
  EXPECT_EQ(evaluateClass(unset, dirs_, true).reason, "PluginNotSet");
}

TEST_F(ClassReadinessTest, AManifestOfAnotherBackendIsRefused) {
  writePlugin("other", "libvirt", "[]");
  auto r = evaluateClass(managed("other"), dirs_, true);
  EXPECT_EQ(r.reason, "BackendMismatch");
  EXPECT_THAT(r.message, HasSubstr("libvirt"));
}

TEST_F(ClassReadinessTest, TheClusterRoleMustExist) {
  auto r = evaluateClass(managed(), dirs_, false);
  EXPECT_FALSE(r.ready);
  EXPECT_EQ(r.reason, "MissingClusterRole");
  EXPECT_THAT(r.message, HasSubstr("banlieue-provider-file"));
  // The kind is published even when the class is not usable yet.
  EXPECT_TRUE(r.machine_kind.has_value());
}

TEST_F(ClassReadinessTest, ExternalClassesCarryNoPodFields) {
  auto c = managed();
  c.spec.deployment = "External";
  EXPECT_EQ(evaluateClass(c, dirs_, true).reason, "PodFieldsOnExternal");
  c.spec.image.reset();
  EXPECT_TRUE(evaluateClass(c, dirs_, true).ready);
  c.spec.tolerations.emplace_back();
  EXPECT_EQ(evaluateClass(c, dirs_, true).reason, "PodFieldsOnExternal");
}

TEST_F(ClassReadinessTest, ManagedClassesNeedAnImage) {
  auto c = managed();
  c.spec.image.reset();
  EXPECT_EQ(evaluateClass(c, dirs_, true).reason, "InvalidImage");
}

}  // namespace
}  // namespace banlieue::roles::provider_operator
