// Today's ABI (1.4) against every older minor, both ways (docs/adr/0036-abi-1-1.md, 0038,
// 0041). A
// plugin compiled against a frozen header (tests/abi/fixtures/abi-1.<minor>: the C example, in
// plugin-root/abi_1_<minor>) on this host; this host's new slots as today's plugins see them.
// The other direction, today's plugin on an older host, is fake_host.c (the tests
// abi_current_plugin_on_1_<minor>_host).
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
TEST(AbiCompatTest, TodaysHostAndPluginSeeRemainingMs) {
  auto plugin = loader().load("current");
  ASSERT_TRUE(plugin.ok());
  EXPECT_EQ((*plugin)->services().table()->header.struct_size, sizeof(banlieue_host_v1));
  EXPECT_EQ((*plugin)->services().table()->header.abi_minor, BANLIEUE_ABI_MINOR);
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

struct Frozen {
  const char* variant;  // plugin-root/<variant>
  uint16_t minor;
  uint32_t table_size;
};
// The test's name in CTest, instead of the parameter's bytes.
void PrintTo(const Frozen& frozen, std::ostream* os) {
  *os << frozen.variant;
}

// A plugin compiled against a frozen header (the C example, built into plugin-root/abi_1_N) on
// this host: everything it has works, and every request it predates ends in a clear answer,
// never a call through a slot it does not have.
class FrozenPluginTest : public ::testing::TestWithParam<Frozen> {};

TEST_P(FrozenPluginTest, WorksAndNewRequestsAreNotSupported) {
  const Frozen frozen = GetParam();
  auto plugin = loader().load(frozen.variant);
  ASSERT_TRUE(plugin.ok()) << plugin.status().message();
  const auto& table = (*plugin)->client().table();
  EXPECT_EQ(table.header.abi_minor, frozen.minor) << "not built against the frozen header";
  EXPECT_EQ(table.header.struct_size, frozen.table_size);
  EXPECT_EQ(table.snapshot, nullptr);
  EXPECT_EQ(table.console_open, nullptr);
  EXPECT_EQ(table.delete_image, nullptr) << "the C example has no image deletion";
  ASSERT_TRUE((*plugin)->describe().ok());

  auto dir = std::filesystem::temp_directory_path() /
             ("banlieue-" + std::string(frozen.variant) + "-" + std::to_string(::getpid()));
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

  const std::string table_text = "table of ABI 1." + std::to_string(frozen.minor) + ", " +
                                 std::to_string(frozen.table_size) + " bytes";
  auto deleted = instance->deleteImage(
      R"({"image":{"metadata":{"name":"img","uid":"uid-img"}},"failureDomain":"default"})",
      {.object_uid = "uid-img"});
  EXPECT_EQ(deleted.code(), BANLIEUE_UNIMPLEMENTED);
  EXPECT_EQ(deleted.outcome.reason, "NotSupportedByBackend");
  EXPECT_THAT(deleted.outcome.message, HasSubstr("delete_image is not supported by this backend"));
  EXPECT_THAT(deleted.outcome.message, HasSubstr(table_text));
  EXPECT_TRUE(deleted.violations.empty());

  // SINCE 1.2: a snapshot of the machine it made.
  auto snapshot = instance->snapshot(
      R"({"action":"create","kind":"CFileMachine","machine":{"metadata":{"name":"m","uid":"uid-m"},"spec":{"providerID":"cfile://m"}},"snapshot":{"name":"before-upgrade"}})",
      {.object_uid = "uid-m"});
  EXPECT_EQ(snapshot.code(), BANLIEUE_UNIMPLEMENTED);
  EXPECT_EQ(snapshot.outcome.reason, "NotSupportedByBackend");
  EXPECT_THAT(snapshot.outcome.message, HasSubstr("snapshot is not supported by this backend"));
  EXPECT_THAT(snapshot.outcome.message, HasSubstr(table_text));
  EXPECT_TRUE(snapshot.violations.empty());

  // SINCE 1.3: the console of the machine it made.
  std::unique_ptr<PluginConsole> console;
  auto opened = instance->openConsole(
      R"({"kind":"CFileMachine","machine":{"metadata":{"name":"m","uid":"uid-m"},"spec":{"providerID":"cfile://m"}},"console":"serial"})",
      console, {.object_uid = "uid-m"});
  EXPECT_EQ(opened.code(), BANLIEUE_UNIMPLEMENTED);
  EXPECT_EQ(opened.outcome.reason, "NotSupportedByBackend");
  EXPECT_THAT(opened.outcome.message, HasSubstr("console is not supported by this backend"));
  EXPECT_THAT(opened.outcome.message, HasSubstr(table_text));
  EXPECT_TRUE(opened.violations.empty());
  EXPECT_EQ(console, nullptr);

  // SINCE 1.4: the change feed. Without it the host keeps the per-machine drift checks.
  EXPECT_EQ(table.watch_changes, nullptr);
  auto watched = instance->watchChanges(R"({"cursor":""})", {.object_uid = "provider-uid"});
  EXPECT_EQ(watched.code(), BANLIEUE_UNIMPLEMENTED);
  EXPECT_EQ(watched.outcome.reason, "NotSupportedByBackend");
  EXPECT_THAT(watched.outcome.message, HasSubstr("watch_changes is not supported by this backend"));
  EXPECT_THAT(watched.outcome.message, HasSubstr(table_text));
  EXPECT_TRUE(watched.violations.empty());

  EXPECT_TRUE(instance->finalize("CFileMachine", machine, {.object_uid = "uid-m"}).ok());
  instance.reset();
  std::filesystem::remove_all(dir);
}

// A plugin built against a frozen header passes today's strict check: the steps it predates
// are "not offered", not failures.
TEST_P(FrozenPluginTest, PassesTheStrictCheck) {
  const Frozen frozen = GetParam();
  std::filesystem::path temp = ::testing::TempDir();
  std::string config = (temp / (std::string(frozen.variant) + "-config.json")).string();
  std::ofstream(config) << R"({"provider":{"apiVersion":"banlieue.io/v1alpha1","kind":"Provider",)"
                           R"("metadata":{"name":"c","namespace":"default"},"spec":{"connection":)"
                           R"({"endpoint":"file://)"
                        << (temp / (std::string(frozen.variant) + "-vms")).string() << R"("}}}})";
  auto run = banlieue::testing::checkVariant(frozen.variant, "--config " + config);
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("deleteImage no, snapshot no, console no, watchChanges no"));
  EXPECT_THAT(run.output, HasSubstr("PASS  delete_image")) << run.output;
  EXPECT_THAT(run.output, HasSubstr("PASS  snapshot CFileMachine")) << run.output;
  EXPECT_THAT(run.output, HasSubstr("PASS  console CFileMachine")) << run.output;
  EXPECT_THAT(run.output, HasSubstr("not offered: UNIMPLEMENTED")) << run.output;
  EXPECT_THAT(run.output, HasSubstr("0 failed"));
}

INSTANTIATE_TEST_SUITE_P(AbiCompat, FrozenPluginTest,
                         ::testing::Values(Frozen{"abi_1_0", 0, 96}, Frozen{"abi_1_1", 1, 104},
                                           Frozen{"abi_1_2", 2, 112}, Frozen{"abi_1_3", 3, 144}),
                         [](const auto& info) { return std::string(info.param.variant); });

}  // namespace
}  // namespace banlieue::plugin
