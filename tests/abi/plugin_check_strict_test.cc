// `banlieue plugin check` on hollow and broken plugins that an earlier, more lenient check
// passed: claimed slots left NULL, a second exported symbol, a create that is not idempotent,
// OK without progress, UNIMPLEMENTED for a claimed validate, creates longer than the old
// poll budget, and the steps after a crash or a hang. Each bad variant must fail with the
// step that caught it named.
#include "host/plugin/conformance.h"
#include "host/plugin/elf_exports.h"
#include "tests/abi/run_banlieue.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

namespace banlieue::plugin {
namespace {

using banlieue::testing::checkVariant;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

std::string pluginRoot() {
  return std::getenv("BANLIEUE_TEST_PLUGIN_ROOT");
}

// A config the test plugin connects with; passing it makes the check strict. One file per
// process: CTest runs these cases in parallel, and a shared file being rewritten by one was
// read empty by another (CI, under ASan).
std::string reachableConfig() {
  std::string path = std::string(::testing::TempDir()) + "/plugin-check-config-" +
                     std::to_string(::getpid()) + ".json";
  std::ofstream(path) << R"({"provider":{"apiVersion":"banlieue.io/v1alpha1","kind":"Provider",)"
                         R"("metadata":{"name":"p","namespace":"default"},)"
                         R"("spec":{"connection":{"endpoint":"test://plugin-check"}}}})";
  return path;
}

TEST(StrictPluginCheckTest, WellBehavedPluginPassesEveryStrictStep) {
  auto run = checkVariant("current", "--config " + reachableConfig());
  EXPECT_EQ(run.exit_code, 0) << run.output;
  for (const char* step : {"PASS  exports", "PASS  slots", "PASS  validate TestMachine",
                           "PASS  instance_create", "PASS  reconcile TestMachine ",
                           "PASS  reconcile TestMachine again", "PASS  finalize TestMachine again",
                           "PASS  import_image", "PASS  delete_image", "PASS  instance_destroy"}) {
    EXPECT_THAT(run.output, HasSubstr(step)) << run.output;
  }
  EXPECT_THAT(run.output, HasSubstr("idempotent: same providerID test://"));
  EXPECT_THAT(run.output, HasSubstr("0 failed, 0 skipped"));
}

// --config makes the check strict: a backend the author named must be reachable, and the
// steps that need an instance are listed as not run.
TEST(StrictPluginCheckTest, UnreachableBackendWithConfigFailsInstanceCreate) {
  std::string config =
      std::string(::testing::TempDir()) + "/unreachable-" + std::to_string(::getpid()) + ".json";
  std::ofstream(config)
      << R"({"provider":{"apiVersion":"banlieue.io/v1alpha1","kind":"Provider",)"
         R"("metadata":{"name":"p"},"spec":{"connection":{"endpoint":"unreachable://nowhere"}}}})";
  auto run = checkVariant("current", "--config " + config);
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_THAT(run.output, HasSubstr("FAIL  instance_create"));
  EXPECT_THAT(run.output,
              HasSubstr("UNAVAILABLE BackendUnreachable: cannot reach unreachable://nowhere"));
  EXPECT_THAT(run.output, HasSubstr("SKIP  reconcile TestMachine"));
  EXPECT_THAT(run.output, HasSubstr("not run: instance_create failed"));
}

// instance_create always fails; reconcile, finalize and import_image are NULL while describe
// claims them. Without --config the table check still fails it.
TEST(StrictPluginCheckTest, HollowPluginFailsWithoutConfig) {
  auto run = checkVariant("hollow");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_THAT(run.output, HasSubstr("FAIL  slots"));
  EXPECT_THAT(run.output, HasSubstr("reconcile (claimed for TestMachine)"));
  EXPECT_THAT(run.output, HasSubstr("finalize (claimed for TestMachine)"));
  EXPECT_THAT(run.output, HasSubstr("import_image (operations.importImage is true)"));
  EXPECT_THAT(run.output, HasSubstr("SKIP  reconcile TestMachine"));
}

TEST(StrictPluginCheckTest, HollowPluginFailsWithConfig) {
  auto run = checkVariant("hollow", "--config " + reachableConfig());
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_THAT(run.output, HasSubstr("FAIL  instance_create"));
  EXPECT_THAT(run.output, HasSubstr("instance_create must succeed"));
  EXPECT_THAT(run.output, HasSubstr("FAIL  slots"));
  EXPECT_THAT(run.output, HasSubstr("not run: instance_create failed"));
}

struct StrictBadVariant {
  const char* variant;
  const char* extra_flags;
  const char* step;
  const char* message;
};

void PrintTo(const StrictBadVariant& bad, std::ostream* os) {
  *os << bad.variant;
}

class StrictBadVariantTest : public ::testing::TestWithParam<StrictBadVariant> {};

TEST_P(StrictBadVariantTest, FailsTheStepThatCatchesIt) {
  const auto& bad = GetParam();
  auto run = checkVariant(bad.variant, "--config " + reachableConfig() + " " + bad.extra_flags);
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_THAT(run.output, HasSubstr(std::string("FAIL  ") + bad.step)) << run.output;
  EXPECT_THAT(run.output, HasSubstr(bad.message)) << run.output;
}

INSTANTIATE_TEST_SUITE_P(
    Variants, StrictBadVariantTest,
    ::testing::Values(
        StrictBadVariant{"not_idempotent", "", "reconcile TestMachine again",
                         "reconcile is not idempotent: the same uid answered providerID"},
        StrictBadVariant{"extra_export", "", "exports",
                         "exports 1 symbol(s) besides banlieue_provider_v1_init: "
                         "banlieue_test_extra_export"},
        StrictBadVariant{"ok_no_progress", "", "reconcile TestMachine",
                         "answered OK 3 times in a row without progress (providerID unset"},
        StrictBadVariant{"validate_unimplemented", "", "validate TestMachine",
                         "describe claims validate for TestMachine, but validate answered "
                         "UNIMPLEMENTED"}),
    [](const auto& info) { return std::string(info.param.variant); });

// A create that never finishes fails at --create-timeout, not after a number of polls.
TEST(StrictPluginCheckTest, NeverFinishingCreateFailsAtTheCreateTimeout) {
  auto run =
      checkVariant("never_finishes", "--config " + reachableConfig() + " --create-timeout 1");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_THAT(run.output, HasSubstr("FAIL  reconcile TestMachine")) << run.output;
  EXPECT_THAT(run.output, HasSubstr("still IN_PROGRESS after")) << run.output;
  EXPECT_THAT(run.output, HasSubstr("(--create-timeout 1000 ms)")) << run.output;
}

// A create of many polls, on a backend that refuses polls sooner than the 2.5 s it asks
// for, passes: the check follows the plugin's hint and bounds the create by time.
TEST(StrictPluginCheckTest, LongCreateFollowsThePluginsHint) {
  auto run = checkVariant("slow_create", "--config " + reachableConfig());
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("OK: providerID test://")) << run.output;
  EXPECT_THAT(run.output, HasSubstr("PASS  reconcile TestMachine again")) << run.output;
}

// After a crash, every later step still runs in a fresh process and is listed.
TEST(StrictPluginCheckTest, CrashRunsEveryRemainingStep) {
  auto run = checkVariant("crashing_slot");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_THAT(run.output, HasSubstr("during 'reconcile TestMachine'"));
  for (const char* step :
       {"PASS  finalize TestMachine ", "PASS  finalize TestMachine again",
        "FAIL  reconcile TestMachine stale token", "FAIL  reconcile unknown kind",
        "PASS  import_image", "PASS  instance_destroy"}) {
    EXPECT_THAT(run.output, HasSubstr(step)) << run.output;
  }
  EXPECT_THAT(run.output, Not(HasSubstr("not run"))) << run.output;
}

// After a hang (the watchdog kills the call), every later step still runs and is listed.
TEST(StrictPluginCheckTest, HangRunsEveryRemainingStep) {
  auto run = checkVariant("slow_slot", "--deadline-ms 2500 --grace-ms 1000");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_THAT(run.output, HasSubstr("did not return within its 2500 ms deadline"));
  for (const char* step :
       {"FAIL  reconcile TestMachine ", "PASS  finalize TestMachine again",
        "FAIL  reconcile unknown kind", "PASS  import_image", "PASS  instance_destroy"}) {
    EXPECT_THAT(run.output, HasSubstr(step)) << run.output;
  }
}

// A third party learns about strict mode and the create bound from --help.
TEST(StrictPluginCheckTest, HelpDocumentsStrictModeAndTheCreateTimeout) {
  auto run = banlieue::testing::runBanlieue("plugin check --help");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("With --config the check is strict"));
  EXPECT_THAT(run.output, HasSubstr("--create-timeout"));
  EXPECT_THAT(run.output, HasSubstr("exports only banlieue_provider_v1_init"));
}

TEST(PollDelayTest, FollowsTheHintWithinBoundsAndBacksOffWithoutOne) {
  using std::chrono::milliseconds;
  EXPECT_EQ(pollDelay(2500, 0), milliseconds(2500));
  EXPECT_EQ(pollDelay(120000, 0), kMaxPollInterval);  // a 2 min hint still polls every 30 s
  EXPECT_EQ(pollDelay(1, 0), kMinPollInterval);
  EXPECT_EQ(pollDelay(-1, 0), kFirstPollBackoff);
  EXPECT_EQ(pollDelay(-1, 1), kFirstPollBackoff * 2);
  EXPECT_EQ(pollDelay(0, 50), kMaxPollInterval);
}

TEST(ElfExportsTest, ReadsTheDynamicSymbolTable) {
  auto current = exportedSymbols(pluginRoot() + "/current/libtestprov.so");
  ASSERT_TRUE(current.ok()) << current.status().message();
  EXPECT_THAT(*current, ElementsAre("banlieue_provider_v1_init"));
  auto extra = exportedSymbols(pluginRoot() + "/extra_export/libtestprov.so");
  ASSERT_TRUE(extra.ok()) << extra.status().message();
  EXPECT_THAT(*extra, ElementsAre("banlieue_provider_v1_init", "banlieue_test_extra_export"));
  auto none = exportedSymbols(pluginRoot() + "/missing_symbol/libtestprov.so");
  ASSERT_TRUE(none.ok()) << none.status().message();
  EXPECT_THAT(*none, IsEmpty());
  auto manifest = exportedSymbols(pluginRoot() + "/current/provider.json");
  ASSERT_FALSE(manifest.ok());
  EXPECT_EQ(manifest.status().reason(), "NotAnElfLibrary");
}

}  // namespace
}  // namespace banlieue::plugin
