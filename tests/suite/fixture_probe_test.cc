// A test binary whose environment the harness check (fixture_verdicts_test.sh) breaks on
// purpose. Run as the unit tier runs it (no BANLIEUE_PROBE_MODE) every test passes; with
//   BANLIEUE_PROBE_MODE=fail   SetUpTestSuite fails an assertion (as a vcsim that does not start)
//   BANLIEUE_PROBE_MODE=throw  SetUpTestSuite throws (as a CRD that fails to install)
//   BANLIEUE_PROBE_MODE=skip   one test skips itself
// and CTest must report the fixture's tests failed (not skipped) and the skip as skipped.
#include <gtest/gtest.h>

#include <cstdlib>
#include <stdexcept>
#include <string>

namespace {

std::string probeMode() {
  const char* mode = std::getenv("BANLIEUE_PROBE_MODE");
  return mode == nullptr ? "" : mode;
}

class FixtureProbe : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (probeMode() == "fail") FAIL() << "probe fixture: the backend did not start";
    if (probeMode() == "throw") throw std::runtime_error("probe fixture: the CRD did not install");
    ready_ = true;
  }
  static bool ready_;
};
bool FixtureProbe::ready_ = false;

TEST_F(FixtureProbe, RunsOnlyAfterItsFixtureStarted) {
  EXPECT_TRUE(ready_);
}

TEST(SkipProbe, SkipsOnlyWhenAsked) {
  if (probeMode() == "skip") GTEST_SKIP() << "probe: asked to skip";
  SUCCEED();
}

}  // namespace
