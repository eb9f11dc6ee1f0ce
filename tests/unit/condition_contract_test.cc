// Every condition banlieue writes is one the CRDs accept: they validate conditions as
// metav1.Condition is (type, status, lastTransitionTime, reason matching its pattern, message
// all required), and a Kubernetes 1.20 apiserver turns an applied "" into null, which a
// required string refuses. So both condition writers (the runtime's JSON one, used by the
// operator and the provider runtime, and the controller's typed one) turn another party's
// reason (a plugin's, a backend's) into a valid one and never leave a message empty.
#include "host/roles/controller/status_mirror.h"
#include "host/runtime/object_helpers.h"

#include <banlieue/sdk/json.h>
#include <gtest/gtest.h>

namespace banlieue {
namespace {

namespace json = sdk::json;

TEST(ConditionContractTest, ReasonsFollowMetav1ConditionsPattern) {
  for (const char* ok : {"Ready", "NoProviderMatched", "A", "x1", "Has_Under", "a:b,c"}) {
    EXPECT_TRUE(runtime::isConditionReason(ok)) << ok;
  }
  for (const char* bad : {"", "1Bad", "has space", "trailing:", "trailing,", "dash-ed", "ünï"}) {
    EXPECT_FALSE(runtime::isConditionReason(bad)) << bad;
  }
  EXPECT_FALSE(runtime::isConditionReason(std::string(1025, 'a')));
  EXPECT_EQ(runtime::conditionReason("NoProviderMatched"), "NoProviderMatched");
  EXPECT_EQ(runtime::conditionReason("vm not found"), "VmNotFound");
  EXPECT_EQ(runtime::conditionReason("404 not-found: gone"), "NotFoundGone");
  EXPECT_EQ(runtime::conditionReason(""), "Unspecified");
  EXPECT_EQ(runtime::conditionReason("---"), "Unspecified");
  EXPECT_TRUE(runtime::isConditionReason(runtime::conditionReason(std::string(3000, 'x'))));
}

TEST(ConditionContractTest, TheRuntimeWriterSetsEveryRequiredField) {
  rapidjson::Document doc(rapidjson::kObjectType);
  rapidjson::Value conditions(rapidjson::kArrayType);
  ASSERT_TRUE(runtime::setCondition(
      conditions, doc.GetAllocator(),
      {.type = "Ready", .status = "False", .reason = "plugin said no"}, "2026-12-02T08:00:00Z"));
  ASSERT_EQ(conditions.Size(), 1u);
  const auto& c = conditions[0];
  EXPECT_EQ(json::stringOr(&c, "type"), "Ready");
  EXPECT_EQ(json::stringOr(&c, "status"), "False");
  EXPECT_EQ(json::stringOr(&c, "reason"), "PluginSaidNo");
  EXPECT_EQ(json::stringOr(&c, "message"), "plugin said no");  // never ""
  EXPECT_EQ(json::stringOr(&c, "lastTransitionTime"), "2026-12-02T08:00:00Z");

  // Unchanged input is still "unchanged" once normalised, so steady state writes nothing.
  EXPECT_FALSE(runtime::setCondition(
      conditions, doc.GetAllocator(),
      {.type = "Ready", .status = "False", .reason = "plugin said no"}, "2026-12-02T09:00:00Z"));
  // A message past metav1.Condition's 32768 characters is cut there.
  ASSERT_TRUE(runtime::setCondition(
      conditions, doc.GetAllocator(),
      {.type = "Ready", .status = "False", .reason = "Long", .message = std::string(40000, 'm')},
      "2026-12-02T09:00:00Z"));
  EXPECT_EQ(json::stringOr(&conditions[0], "message").size(), 32768u);
}

TEST(ConditionContractTest, TheControllerWriterSetsEveryRequiredField) {
  std::vector<api::Condition> list;
  controller::setCondition(list, "InfrastructureReady", "False", "backend: not yet", "", 3,
                           "2026-12-02T08:00:00Z");
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0].reason, "BackendNotYet");
  EXPECT_EQ(list[0].message, "backend: not yet");
  EXPECT_EQ(list[0].last_transition_time, "2026-12-02T08:00:00Z");
  EXPECT_EQ(list[0].observed_generation, 3);

  controller::setCondition(list, "InfrastructureReady", "True", "Provisioned", "", 4,
                           "2026-12-02T09:00:00Z");
  EXPECT_EQ(list[0].reason, "Provisioned");
  EXPECT_EQ(list[0].message, "Provisioned");
  EXPECT_EQ(list[0].last_transition_time, "2026-12-02T09:00:00Z");
}

}  // namespace
}  // namespace banlieue
