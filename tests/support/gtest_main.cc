// The main() of every banlieue test binary: GoogleTest's, plus an exit code that tells CTest
// a test skipped itself.
//
// GoogleTest exits 0 when a test calls GTEST_SKIP, and when a suite's SetUpTestSuite fails it
// marks the suite's tests SKIPPED but exits 1. CTest's default for discovered tests (a "[
// SKIPPED ]" regular expression) turned both into "skipped", so a fixture that could not start
// its vcsim or install its CRDs read as skipped instead of failed. Here a failure always wins,
// and only a run with no failure and at least one skip exits BANLIEUE_SKIPPED_EXIT_CODE, which
// cmake/BanlieueTargets.cmake defines and registers as the tests' SKIP_RETURN_CODE.
// scripts/test.sh then refuses every skip that tests/skip_allowlist.txt does not list.
#include <gtest/gtest.h>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const int result = RUN_ALL_TESTS();
  if (result != 0) return result;
  if (::testing::UnitTest::GetInstance()->skipped_test_count() > 0) {
    return BANLIEUE_SKIPPED_EXIT_CODE;
  }
  return 0;
}
