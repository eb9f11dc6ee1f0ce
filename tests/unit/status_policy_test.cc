#include "host/plugin/status_policy.h"

#include <banlieue/sdk/status.h>

#include <gtest/gtest.h>

namespace banlieue::plugin {
namespace {

TEST(StatusPolicyTest, EveryCanonicalCodeHasADeliberateDisposition) {
  EXPECT_EQ(policyFor(BANLIEUE_OK).disposition, Disposition::kDone);
  EXPECT_EQ(policyFor(BANLIEUE_IN_PROGRESS).disposition, Disposition::kPoll);
  for (auto code : {BANLIEUE_UNAVAILABLE, BANLIEUE_DEADLINE_EXCEEDED, BANLIEUE_ABORTED,
                    BANLIEUE_RESOURCE_EXHAUSTED, BANLIEUE_CANCELLED}) {
    EXPECT_EQ(policyFor(code).disposition, Disposition::kRetry) << sdk::codeName(code);
    EXPECT_FALSE(policyFor(code).warning_event) << sdk::codeName(code);
  }
  for (auto code : {BANLIEUE_INVALID_ARGUMENT, BANLIEUE_OUT_OF_RANGE, BANLIEUE_UNIMPLEMENTED}) {
    EXPECT_EQ(policyFor(code).disposition, Disposition::kTerminal) << sdk::codeName(code);
    EXPECT_EQ(policyFor(code).slow_retry.count(), 0) << sdk::codeName(code);
  }
  // Credentials, permissions and the backend's own state are fixed outside the object:
  // terminal, but retried slowly.
  for (auto code : {BANLIEUE_UNAUTHENTICATED, BANLIEUE_PERMISSION_DENIED,
                    BANLIEUE_FAILED_PRECONDITION, BANLIEUE_ALREADY_EXISTS}) {
    EXPECT_EQ(policyFor(code).disposition, Disposition::kTerminal) << sdk::codeName(code);
    EXPECT_GT(policyFor(code).slow_retry.count(), 0) << sdk::codeName(code);
  }
  EXPECT_TRUE(policyFor(BANLIEUE_INTERNAL).warning_event);
  EXPECT_EQ(policyFor(4242).disposition, Disposition::kRetry)
      << "unknown codes never stop retrying";
}

TEST(StatusPolicyTest, RequeueHintsAreClamped) {
  using std::chrono::milliseconds;
  EXPECT_EQ(clampRequeueHint(-1, milliseconds(5000)), milliseconds(5000));
  EXPECT_EQ(clampRequeueHint(1, milliseconds(5000)), kMinRequeue) << "no hot loop";
  EXPECT_EQ(clampRequeueHint(int64_t{1} << 40, milliseconds(5000)), kMaxRequeue);
  EXPECT_EQ(clampRequeueHint(3000, milliseconds(5000)), milliseconds(3000));
}

TEST(StatusNamesTest, CodesAndReasons) {
  EXPECT_EQ(sdk::codeName(BANLIEUE_IN_PROGRESS), "IN_PROGRESS");
  EXPECT_EQ(sdk::codeName(77), "CODE_77");
  EXPECT_TRUE(sdk::isKnownCode(BANLIEUE_UNAUTHENTICATED));
  EXPECT_FALSE(sdk::isKnownCode(17));
  EXPECT_TRUE(sdk::isConditionReason("CloneFailed"));
  EXPECT_FALSE(sdk::isConditionReason("cloneFailed"));
  EXPECT_FALSE(sdk::isConditionReason("Clone Failed"));
  EXPECT_FALSE(sdk::isConditionReason(""));
}

}  // namespace
}  // namespace banlieue::plugin
