// ProviderClass spec.plugin.path resolution: only inside the plugin directory.
#include "host/plugin/plugin_path.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace banlieue::plugin {
namespace {

namespace fs = std::filesystem;

class PluginPathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = fs::temp_directory_path() / ("banlieue-plugin-path-" + std::to_string(::getpid()));
    fs::remove_all(base_);
    root_ = base_ / "plugins";
    fs::create_directories(root_ / "libvirt");
    fs::create_directories(base_ / "outside");
    for (const auto& d : {base_, root_, root_ / "libvirt", base_ / "outside"}) {
      ::chmod(d.c_str(), 0755);
    }
    std::ofstream(root_ / "libvirt" / "provider.json")
        << R"({"manifestVersion":1,"name":"libvirt","library":"libp.so","abi":{"major":1},)"
           R"("providerVersion":"1","infrastructure":[]})";
    std::ofstream(root_ / "libvirt" / "libp.so") << "ELF";
    std::ofstream(root_ / "libvirt" / "other.so") << "ELF";
    for (const auto& f : {"provider.json", "libp.so", "other.so"}) {
      ::chmod((root_ / "libvirt" / f).c_str(), 0644);
    }
  }
  void TearDown() override { fs::remove_all(base_); }

  std::string reasonFor(const std::string& path) {
    auto r = resolvePluginPath(root_, path);
    return r.ok() ? "ok:" + r->string() : r.status().reason();
  }

  fs::path base_;
  fs::path root_;
};

TEST_F(PluginPathTest, AcceptsDirectoriesAndTheManifestLibraryInsideTheRoot) {
  auto canonical = fs::canonical(root_ / "libvirt").string();
  EXPECT_EQ(reasonFor("libvirt"), "ok:" + canonical);
  EXPECT_EQ(reasonFor((root_ / "libvirt").string()), "ok:" + canonical);
  EXPECT_EQ(reasonFor("libvirt/libp.so"), "ok:" + canonical);
  EXPECT_EQ(reasonFor("./libvirt/"), "ok:" + canonical);
}

TEST_F(PluginPathTest, RefusesEscapesAndMissingPlugins) {
  EXPECT_EQ(reasonFor(""), "PluginPathInvalid");
  EXPECT_EQ(reasonFor("../outside"), "PluginPathInvalid");
  EXPECT_EQ(reasonFor("libvirt/../../outside"), "PluginPathInvalid");
  EXPECT_EQ(reasonFor((base_ / "outside").string()), "PluginPathEscapes");
  EXPECT_EQ(reasonFor("/"), "PluginPathEscapes");
  EXPECT_EQ(reasonFor("."), "PluginPathEscapes");
  EXPECT_EQ(reasonFor("absent"), "PluginNotFound");
  EXPECT_EQ(reasonFor("libvirt/other.so"), "PluginNotFound");
  fs::create_directory_symlink(base_ / "outside", root_ / "sneaky");
  EXPECT_EQ(reasonFor("sneaky"), "PluginPathEscapes");
  auto message = resolvePluginPath(root_, "sneaky").status().message();
  EXPECT_NE(message.find("outside the plugin directory"), std::string::npos) << message;
}

}  // namespace
}  // namespace banlieue::plugin
