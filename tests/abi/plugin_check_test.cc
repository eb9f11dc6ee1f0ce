// `banlieue plugin check` as a user runs it: on the good plugin it passes; on each bad
// variant it fails with a message that says what is wrong.
#include "tests/abi/run_banlieue.h"
#include "tests/support/build_paths.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

using ::testing::HasSubstr;

banlieue::testing::Run check(const std::string& variant, const std::string& extra = "") {
  return banlieue::testing::checkVariant(variant, extra);
}

TEST(PluginCheckTest, CurrentPluginPassesEveryStep) {
  auto run = check("current");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  for (const char* step :
       {"PASS  manifest", "PASS  load", "PASS  describe", "PASS  validate TestMachine",
        "PASS  validate malformed JSON", "PASS  instance_create", "PASS  introspect",
        "PASS  reconcile TestMachine", "PASS  finalize TestMachine again",
        "PASS  finalize TestMachine never reconciled", "PASS  reconcile TestMachine stale token",
        "PASS  reconcile unknown kind", "PASS  import_image", "PASS  delete_image",
        "PASS  instance_destroy"}) {
    EXPECT_THAT(run.output, HasSubstr(step)) << run.output;
  }
  EXPECT_THAT(run.output, HasSubstr("deleted from zone-a, and again (idempotent)"));
  EXPECT_THAT(run.output, HasSubstr("0 failed"));
}

TEST(PluginCheckTest, JsonOutputCarriesManifestAndDescriptor) {
  auto run = check("current", "--output json");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr(R"("passed":true)"));
  EXPECT_THAT(run.output, HasSubstr(R"("descriptor":{"name":"testprov")"));
}

TEST(PluginCheckTest, OlderMinorPassesWithoutImportImage) {
  auto run = check("older_minor");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("not offered: UNIMPLEMENTED"));
}

struct BadVariant {
  const char* variant;
  const char* step;
  const char* message;
};

void PrintTo(const BadVariant& bad, std::ostream* os) {
  *os << bad.variant;
}

class BadPluginCheckTest : public ::testing::TestWithParam<BadVariant> {};

TEST_P(BadPluginCheckTest, FailsWithASpecificMessage) {
  const auto& bad = GetParam();
  // Only the slow variant needs a short deadline; under ASan on a busy machine even
  // 'describe' once took longer than 1 s, so the others keep the default.
  auto run =
      check(bad.variant,
            std::string(bad.variant) == "slow_slot" ? "--deadline-ms 2500 --grace-ms 1000" : "");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_THAT(run.output, HasSubstr(std::string("FAIL  ") + bad.step)) << run.output;
  EXPECT_THAT(run.output, HasSubstr(bad.message)) << run.output;
}

INSTANTIATE_TEST_SUITE_P(
    Variants, BadPluginCheckTest,
    ::testing::Values(
        BadVariant{"requires_newer_minor", "manifest", "needs ABI 1.9 or later"},
        BadVariant{"manifest_wrong_major", "manifest", "needs ABI major 2"},
        BadVariant{"wrong_major", "load", "provider table says ABI major 2"},
        BadVariant{"bad_magic", "load", "magic 0xDEADBEEF"},
        BadVariant{"bad_fingerprint", "load", "layout fingerprint 0xB1044020"},
        BadVariant{"missing_symbol", "load", "does not export banlieue_provider_v1_init"},
        BadVariant{"init_fails", "load", "refusing to initialise on purpose"},
        BadVariant{"throwing_slot", "reconcile TestMachine",
                   "plugin bug: INTERNAL PluginException: reconcile threw"},
        BadVariant{"slow_slot", "reconcile TestMachine",
                   "did not return within its 2500 ms deadline"},
        BadVariant{"crashing_slot", "reconcile TestMachine", "during 'reconcile TestMachine'"},
        BadVariant{"bad_reason", "reconcile TestMachine", "which is not CamelCase"}),
    [](const auto& info) { return std::string(info.param.variant); });

TEST(PluginCheckTest, MissingManifestIsNamed) {
  auto dir = std::string(::testing::TempDir()) + "/empty-plugin";
  std::string mk = "mkdir -p " + dir;
  ASSERT_EQ(std::system(mk.c_str()), 0);
  std::string command = std::string(BANLIEUE_BINARY) + " plugin check " + dir + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  std::string output;
  std::array<char, 4096> buffer{};
  while (fgets(buffer.data(), buffer.size(), pipe) != nullptr) output += buffer.data();
  int status = pclose(pipe);
  EXPECT_EQ(WEXITSTATUS(status), 1);
  EXPECT_THAT(output, HasSubstr("provider.json: missing"));
}

}  // namespace
