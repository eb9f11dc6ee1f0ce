// Whether a ProviderClass is usable, from what its provider pods published or the operator's
// copy of the plugin's provider.json (never its code), the backend's ClusterRole and the
// class's fields; and the machine kinds it publishes.
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
  // Without an image no pod could publish it: a plugin the operator cannot see is unknown.
  auto external = managed("/usr/lib/banlieue/plugins/vsphere");
  external.spec.deployment = "External";
  external.spec.image.reset();
  auto r = evaluateClass(external, dirs_, false);
  EXPECT_FALSE(r.ready);
  EXPECT_EQ(r.reason, "PluginNotFound");
  EXPECT_FALSE(r.machine_kind.has_value());
  EXPECT_EQ(evaluateClass(managed("/etc"), dirs_, true).reason, "PluginPathEscapes");
  EXPECT_EQ(evaluateClass(managed("file/../.."), dirs_, true).reason, "PluginPathInvalid");
  auto unset = managed();
  unset.spec.plugin.reset();
  EXPECT_EQ(evaluateClass(unset, dirs_, true).reason, "PluginNotSet");
}

// docs/adr/0043: a third party's plugin is only in its provider image. The class is usable
// (its Providers get pods), and its kinds come from the first pod that loads the plugin.
TEST_F(ClassReadinessTest, APluginOnlyInItsProviderImageIsUsableAndAwaitsItsPods) {
  auto c = managed("/usr/lib/banlieue/plugins/qemu");
  c.spec.backend = "qemu";
  auto r = evaluateClass(c, dirs_, true);
  EXPECT_TRUE(r.ready) << r.reason << ": " << r.message;
  EXPECT_FALSE(r.machine_kind.has_value());
  EXPECT_TRUE(r.machine_kinds.empty());
  EXPECT_FALSE(r.plugin_published);
  EXPECT_EQ(r.published_reason, "AwaitingProviderPod");

  c.status.plugin = api::PublishedPlugin{
      .name = "qemu",
      .version = "0.2.0",
      .abi = "1.3",
      .infrastructure_kinds = {{"infrastructure.qemu.example.com/v1alpha1", "QemuMachine"},
                               {"infrastructure.qemu.example.com/v1alpha1", "QemuMicroVM"}}};
  r = evaluateClass(c, dirs_, true);
  EXPECT_TRUE(r.ready) << r.reason << ": " << r.message;
  EXPECT_TRUE(r.plugin_published);
  EXPECT_EQ(r.published_reason, "Published");
  EXPECT_THAT(r.published_message, HasSubstr("qemu 0.2.0 (ABI 1.3)"));
  ASSERT_TRUE(r.machine_kind.has_value());
  EXPECT_EQ(r.machine_kind->kind, "QemuMachine");
  ASSERT_EQ(r.machine_kinds.size(), 2U);
  EXPECT_EQ(r.machine_kinds[1].kind, "QemuMicroVM");
}

// What a pod loaded is what runs: its kinds win over the operator's copy of provider.json.
TEST_F(ClassReadinessTest, PublishedKindsWinOverTheLocalCopy) {
  auto c = managed();
  c.status.plugin = api::PublishedPlugin{
      .name = "file",
      .version = "0.2.0",
      .abi = "1.3",
      .infrastructure_kinds = {{"infrastructure.file.example.com/v1alpha2", "FileMachine"}}};
  auto r = evaluateClass(c, dirs_, true);
  EXPECT_TRUE(r.ready);
  ASSERT_TRUE(r.machine_kind.has_value());
  EXPECT_EQ(r.machine_kind->api_version, "infrastructure.file.example.com/v1alpha2");
  // And the kinds are published even when the ClusterRole is missing.
  r = evaluateClass(c, dirs_, false);
  EXPECT_EQ(r.reason, "MissingClusterRole");
  ASSERT_TRUE(r.machine_kind.has_value());
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
