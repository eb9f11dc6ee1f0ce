// ABI 1.1 against 1.0, both ways (docs/adr/0036-abi-1-1.md). A plugin compiled against the
// frozen 1.0 header (tests/abi/fixtures/abi-1.0: the C example, in plugin-root/abi_1_0) on this
// host; this host's new slot as today's plugins see it. The other direction, today's plugin on
// a 1.0 host, is fake_host_1_0.c (test abi_1_1_plugin_on_1_0_host).
#include "host/plugin/loader.h"
#include "tests/abi/run_banlieue.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace banlieue::plugin {
namespace {

using ::testing::HasSubstr;

PluginLoader loader() {
  LoadOptions options;
  const char* root = std::getenv("BANLIEUE_TEST_PLUGIN_ROOT");
  options.plugin_root = root ? root : "";
  return PluginLoader(options);
}

const char* kConfig =
    R"({"provider":{"apiVersion":"banlieue.io/v1alpha1","kind":"Provider","metadata":{"name":"p","namespace":"default"},"spec":{"connection":{"endpoint":"test://local"}}},"credentials":{"password":"right"}})";

std::unique_ptr<PluginInstance> instanceOf(const Plugin& plugin) {
  CallResult result;
  auto instance = plugin.createInstance(kConfig, {}, result);
  EXPECT_TRUE(result.ok()) << result.outcome.message;
  return instance;
}

// SINCE 1.1: the host's remaining_ms slot is in its table, and a plugin built with the SDK
// takes its time left from it (the fake 1.0 host test shows the fallback when it is absent).
TEST(AbiCompatTest, Host1_1_Plugin1_1_SeesRemainingMs) {
  auto plugin = loader().load("current");
  ASSERT_TRUE(plugin.ok());
  EXPECT_EQ((*plugin)->services().table()->header.struct_size, sizeof(banlieue_host_v1));
  EXPECT_EQ((*plugin)->services().table()->header.abi_minor, 1);
  auto instance = instanceOf(**plugin);
  const std::string object =
      R"({"object":{"apiVersion":"infrastructure.test.banlieue.io/v1beta2","kind":"TestMachine","metadata":{"name":"vm1","namespace":"default","uid":"uid-r"},"spec":{"reportHost":true}},"operation":{"token":"task-uid-r"}})";
  auto done = instance->reconcile("TestMachine", object,
                                  {.timeout = std::chrono::seconds(20), .object_uid = "uid-r"});
  ASSERT_TRUE(done.ok()) << done.outcome.message;
  EXPECT_THAT(done.outcome.body, HasSubstr(R"("remainingMs":"present")"));
  // 20 s from the host's monotonic deadline, read moments later: 19 whole seconds (18 on a
  // loaded machine).
  EXPECT_THAT(done.outcome.body, ::testing::ContainsRegex(R"("secondsLeft":1[89][,}])"));
}

// A plugin compiled against the frozen 1.0 header (tests/abi/fixtures/abi-1.0: the C example,
// built into plugin-root/abi_1_0) on this 1.1 host: everything it has works, and every request
// it predates ends in a clear answer, never a call through a slot it does not have.
TEST(AbiCompatTest, Host1_1_Plugin1_0Frozen_WorksAndNewRequestsAreNotSupported) {
  auto plugin = loader().load("abi_1_0");
  ASSERT_TRUE(plugin.ok()) << plugin.status().message();
  const auto& table = (*plugin)->client().table();
  EXPECT_EQ(table.header.abi_minor, 0) << "not built against the frozen 1.0 header";
  EXPECT_EQ(table.header.struct_size, 96u) << "1.0's provider table is 96 bytes";
  EXPECT_EQ(table.delete_image, nullptr);
  ASSERT_TRUE((*plugin)->describe().ok());

  auto dir =
      std::filesystem::temp_directory_path() / ("banlieue-abi-1-0-" + std::to_string(::getpid()));
  CallResult created;
  auto instance = (*plugin)->createInstance(
      R"({"provider":{"apiVersion":"banlieue.io/v1alpha1","kind":"Provider","metadata":{"name":"c","namespace":"default"},"spec":{"connection":{"endpoint":"file://)" +
          dir.string() + R"("}}}})",
      {}, created);
  ASSERT_NE(instance, nullptr) << created.outcome.message;
  const std::string machine =
      R"({"object":{"apiVersion":"infrastructure.cfile.example.com/v1alpha1","kind":"CFileMachine","metadata":{"name":"m","namespace":"default","uid":"uid-m","generation":1},"spec":{"cpus":1,"memoryMiB":512,"desiredPowerState":"PoweredOn"}}})";
  auto reconciled = instance->reconcile("CFileMachine", machine, {.object_uid = "uid-m"});
  EXPECT_TRUE(reconciled.ok()) << reconciled.outcome.message;
  EXPECT_THAT(reconciled.outcome.body, HasSubstr("providerID"));

  auto deleted = instance->deleteImage(
      R"({"image":{"metadata":{"name":"img","uid":"uid-img"}},"failureDomain":"default"})",
      {.object_uid = "uid-img"});
  EXPECT_EQ(deleted.code(), BANLIEUE_UNIMPLEMENTED);
  EXPECT_EQ(deleted.outcome.reason, "NotSupportedByBackend");
  EXPECT_THAT(deleted.outcome.message, HasSubstr("delete_image is not supported by this backend"));
  EXPECT_THAT(deleted.outcome.message, HasSubstr("table of ABI 1.0, 96 bytes"));
  EXPECT_TRUE(deleted.violations.empty());

  EXPECT_TRUE(instance->finalize("CFileMachine", machine, {.object_uid = "uid-m"}).ok());
  instance.reset();
  std::filesystem::remove_all(dir);
}

// A plugin built against the frozen 1.0 header (no delete_image slot) passes the 1.1 check:
// the step it predates is "not offered", not a failure.
TEST(AbiCompatTest, PluginBuiltFor1_0PassesTheStrictCheck) {
  std::filesystem::path temp = ::testing::TempDir();
  std::string config = (temp / "abi-1-0-config.json").string();
  std::ofstream(config) << R"({"provider":{"apiVersion":"banlieue.io/v1alpha1","kind":"Provider",)"
                           R"("metadata":{"name":"c","namespace":"default"},"spec":{"connection":)"
                           R"({"endpoint":"file://)"
                        << (temp / "abi-1-0-vms").string() << R"("}}}})";
  auto run = banlieue::testing::checkVariant("abi_1_0", "--config " + config);
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("deleteImage no"));
  EXPECT_THAT(run.output, HasSubstr("PASS  delete_image")) << run.output;
  EXPECT_THAT(run.output, HasSubstr("not offered: UNIMPLEMENTED")) << run.output;
  EXPECT_THAT(run.output, HasSubstr("0 failed"));
}

}  // namespace
}  // namespace banlieue::plugin
