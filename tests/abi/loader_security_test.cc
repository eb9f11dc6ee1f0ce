// The loader cannot be raced (docs/adr/0025): every directory from the plugin root down is
// checked, the library dlopen maps is the descriptor that was checked and hashed, and a pin,
// a name or a missing entry point refuses the library before any of its code runs. Files are
// swapped through LoadOptions::test_hook at the moments an attacker would have to strike.
#include "host/plugin/loader.h"
#include "host/plugin/sha256.h"
#include "host/roles/provider/plugin_resolution.h"
#include "tests/support/fake_kube_client.h"

#include <dlfcn.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace banlieue::plugin {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

fs::path pluginRoot() {
  const char* root = std::getenv("BANLIEUE_TEST_PLUGIN_ROOT");
  return root ? root : "";
}

constexpr auto kDirectoryMode = fs::perms::owner_all | fs::perms::group_read |
                                fs::perms::group_exec | fs::perms::others_read |
                                fs::perms::others_exec;

class LoaderSecurityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = fs::temp_directory_path() /
            ("banlieue-loader-security-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(base_);
    root_ = base_ / "root";
    outside_ = base_ / "outside";
    makeDirectory(base_);
    makeDirectory(root_);
    makeDirectory(outside_);
    marker_ = base_ / "constructor-ran";
    ::setenv("BANLIEUE_TEST_CONSTRUCTOR_MARKER", marker_.c_str(), 1);
  }
  void TearDown() override {
    ::unsetenv("BANLIEUE_TEST_CONSTRUCTOR_MARKER");
    fs::remove_all(base_);
  }

  static void makeDirectory(const fs::path& dir) {
    fs::create_directories(dir);
    fs::permissions(dir, kDirectoryMode);
  }

  // A copy of a built test-plugin variant at `dir` (every directory on the way mode 0755).
  static void installVariant(const std::string& variant, const fs::path& dir) {
    makeDirectory(dir.parent_path());
    fs::copy(pluginRoot() / variant, dir, fs::copy_options::recursive);
    fs::permissions(dir, kDirectoryMode);
  }

  bool constructorRan() const { return fs::exists(marker_); }

  fs::path base_;
  fs::path root_;
  fs::path outside_;
  fs::path marker_;
};

TEST_F(LoaderSecurityTest, GroupWritableDirectoryBetweenRootAndPluginIsRefused) {
  installVariant("constructor_marker", root_ / "vendor" / "p");
  fs::permissions(root_ / "vendor", fs::perms::group_write, fs::perm_options::add);
  auto plugin = PluginLoader({.plugin_root = root_}).loadDirectory(root_ / "vendor" / "p");
  ASSERT_FALSE(plugin.ok()) << "a plugin under a group-writable directory loaded";
  EXPECT_EQ(plugin.status().reason(), "PluginDirectoryUntrusted") << plugin.status().message();
  EXPECT_THAT(plugin.status().message(), HasSubstr((root_ / "vendor").string() + ": "));
  EXPECT_THAT(plugin.status().message(), HasSubstr("writable by group or others"));
  EXPECT_FALSE(constructorRan());
}

TEST_F(LoaderSecurityTest, DirectorySwappedForASymlinkAfterResolutionIsRefused) {
  installVariant("current", root_ / "vendor" / "p");
  // The attacker's plugin lives outside the root; once the loader has resolved the path, the
  // directory on the way is replaced by a symlink to it.
  installVariant("constructor_marker", outside_ / "vendor" / "p");
  LoadOptions options{.plugin_root = root_};
  options.test_hook = [&](std::string_view stage) {
    if (stage != "resolved") return;
    fs::rename(root_ / "vendor", base_ / "vendor-moved");
    fs::create_directory_symlink(outside_ / "vendor", root_ / "vendor");
  };
  auto plugin = PluginLoader(options).loadDirectory(root_ / "vendor" / "p");
  ASSERT_FALSE(plugin.ok()) << "loaded through a directory swapped for a symlink";
  EXPECT_EQ(plugin.status().reason(), "PluginDirectoryIsSymlink") << plugin.status().message();
  EXPECT_THAT(plugin.status().message(), HasSubstr((root_ / "vendor").string()));
  EXPECT_FALSE(constructorRan()) << "the attacker's library was mapped";
}

TEST_F(LoaderSecurityTest, LibrarySwappedJustBeforeDlopenIsNotTheOneLoaded) {
  installVariant("current", root_ / "p");
  fs::copy_file(pluginRoot() / "constructor_marker" / "libtestprov.so", base_ / "swap.so");
  struct stat checked {};
  ASSERT_EQ(::stat((root_ / "p" / "libtestprov.so").c_str(), &checked), 0);
  LoadOptions options{.plugin_root = root_};
  options.test_hook = [&](std::string_view stage) {
    if (stage != "verified") return;
    fs::rename(base_ / "swap.so", root_ / "p" / "libtestprov.so");  // atomic replacement
  };
  auto plugin = PluginLoader(options).load("p");
  ASSERT_TRUE(plugin.ok()) << plugin.status().message();
  EXPECT_FALSE(constructorRan()) << "dlopen mapped the file now at the path, not the checked one";

  // The code behind the plugin's table is the file that was checked (same device and inode).
  Dl_info info{};
  ASSERT_NE(::dladdr(reinterpret_cast<void*>((*plugin)->client().table().describe), &info), 0);
  struct stat loaded {};
  ASSERT_EQ(::stat(info.dli_fname, &loaded), 0) << info.dli_fname;
  EXPECT_EQ(loaded.st_dev, checked.st_dev);
  EXPECT_EQ(loaded.st_ino, checked.st_ino) << "loaded " << info.dli_fname;
}

TEST_F(LoaderSecurityTest, LibraryWithoutTheEntrySymbolIsNeverMapped) {
  installVariant("missing_symbol", root_ / "p");
  size_t before = loadedLibraryCount();
  auto plugin = PluginLoader({.plugin_root = root_}).load("p");
  ASSERT_FALSE(plugin.ok());
  EXPECT_EQ(plugin.status().reason(), "PluginEntryMissing") << plugin.status().message();
  EXPECT_THAT(plugin.status().message(), HasSubstr("does not export banlieue_provider_v1_init"));
  EXPECT_FALSE(constructorRan()) << "the library's constructor ran before its exports were read";
  EXPECT_EQ(loadedLibraryCount(), before);
}

TEST_F(LoaderSecurityTest, PinMismatchRunsNoPluginCode) {
  installVariant("constructor_marker", root_ / "p");
  auto digest = sha256File(root_ / "p" / "libtestprov.so");
  ASSERT_TRUE(digest.ok());
  std::string pin(64, 'b');
  auto plugin = PluginLoader({.plugin_root = root_, .expected_sha256 = pin}).load("p");
  ASSERT_FALSE(plugin.ok());
  EXPECT_EQ(plugin.status().reason(), "PluginChecksumMismatch");
  EXPECT_THAT(plugin.status().message(), HasSubstr(pin));
  EXPECT_THAT(plugin.status().message(), HasSubstr(*digest));
  EXPECT_FALSE(constructorRan());
}

TEST_F(LoaderSecurityTest, AlreadyLoadedLibraryStillHonoursThePin) {
  installVariant("current", root_ / "p");
  auto first = PluginLoader({.plugin_root = root_}).load("p");
  ASSERT_TRUE(first.ok()) << first.status().message();
  auto pinned =
      PluginLoader({.plugin_root = root_, .expected_sha256 = std::string(64, 'c')}).load("p");
  ASSERT_FALSE(pinned.ok()) << "a library loaded earlier was handed out despite a wrong pin";
  EXPECT_EQ(pinned.status().reason(), "PluginChecksumMismatch");
}

TEST_F(LoaderSecurityTest, ExpectedNameIsCheckedBeforeDlopen) {
  installVariant("constructor_marker", root_ / "p");
  auto plugin = PluginLoader({.plugin_root = root_, .expected_name = "libvirt"}).load("p");
  ASSERT_FALSE(plugin.ok());
  EXPECT_EQ(plugin.status().reason(), "BackendMismatch") << plugin.status().message();
  EXPECT_THAT(plugin.status().message(), HasSubstr("'testprov'"));
  EXPECT_THAT(plugin.status().message(), HasSubstr("'libvirt'"));
  EXPECT_FALSE(constructorRan());
}

// The provider runtime: ProviderClass.spec.plugin.sha256 reaches the loader, and a name that
// does not fit the backend is refused before dlopen.
class ProviderPluginPinTest : public LoaderSecurityTest {
 protected:
  void SetUp() override {
    LoaderSecurityTest::SetUp();
    installVariant("constructor_marker", root_ / "p");
    auto digest = sha256File(root_ / "p" / "libtestprov.so");
    ASSERT_TRUE(digest.ok());
    digest_ = *digest;
  }

  void addObjects(const std::string& backend, const std::string& plugin_fields) {
    ASSERT_TRUE(client_
                    .create(roles::provider::kProviderType, "team-a",
                            R"({"apiVersion":"banlieue.io/v1alpha1","kind":"Provider",)"
                            R"("metadata":{"name":"lab","namespace":"team-a"},)"
                            R"("spec":{"providerClassRef":{"name":"lab-class"}}})")
                    .ok());
    ASSERT_TRUE(client_
                    .create(roles::provider::kProviderClassType, "",
                            R"({"apiVersion":"banlieue.io/v1alpha1","kind":"ProviderClass",)"
                            R"("metadata":{"name":"lab-class"},"spec":{"backend":")" +
                                backend + R"(","plugin":{"path":"p")" + plugin_fields + "}}}")
                    .ok());
  }

  StatusOr<roles::provider::ResolvedPlugin> resolve(const std::string& backend) {
    return roles::provider::resolvePlugin(client_, backend, "team-a", "lab", root_);
  }

  testing::FakeKubeClient client_;
  std::string digest_;
};

TEST_F(ProviderPluginPinTest, ClassPinMismatchIsRefusedBeforeAnyPluginCodeRuns) {
  std::string pin(64, 'a');
  addObjects("testprov", R"(,"sha256":")" + pin + "\"");
  auto resolved = resolve("testprov");
  ASSERT_FALSE(resolved.ok()) << "the ProviderClass pin was ignored";
  EXPECT_EQ(resolved.status().reason(), "PluginChecksumMismatch");
  EXPECT_THAT(resolved.status().message(), HasSubstr(digest_));
  EXPECT_THAT(resolved.status().message(), HasSubstr("ProviderClass lab-class"));
  EXPECT_THAT(resolved.status().message(), HasSubstr(pin));
  EXPECT_FALSE(constructorRan());
}

TEST_F(ProviderPluginPinTest, ClassPinMatchLoads) {
  addObjects("testprov", R"(,"sha256":")" + digest_ + "\"");
  auto resolved = resolve("testprov");
  ASSERT_TRUE(resolved.ok()) << resolved.status().message();
  EXPECT_EQ(resolved->plugin->manifest().name, "testprov");
  EXPECT_TRUE(constructorRan());
}

TEST_F(ProviderPluginPinTest, PluginOfAnotherBackendIsRefusedBeforeAnyPluginCodeRuns) {
  addObjects("libvirt", "");
  auto resolved = resolve("libvirt");
  ASSERT_FALSE(resolved.ok()) << "a plugin named testprov was loaded for backend libvirt";
  EXPECT_EQ(resolved.status().reason(), "BackendMismatch") << resolved.status().message();
  EXPECT_FALSE(constructorRan()) << "the name check ran after the library was mapped";
}

}  // namespace
}  // namespace banlieue::plugin
