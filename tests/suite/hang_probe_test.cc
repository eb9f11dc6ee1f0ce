// A test that hangs when fixture_verdicts_test.sh asks it to (BANLIEUE_PROBE_MODE=hang): CTest
// must end it at its time limit and report it failed, so one hang can never hold a whole run.
// Run as the unit tier runs it (no BANLIEUE_PROBE_MODE), it passes at once.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

namespace {

TEST(HangProbe, EndsAtItsTimeLimitWhenItHangs) {
  const char* mode = std::getenv("BANLIEUE_PROBE_MODE");
  if (mode != nullptr && std::string(mode) == "hang") {
    for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
  }
  SUCCEED();
}

}  // namespace
