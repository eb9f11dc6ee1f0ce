// Plugin replies are checked at run time (issue #25 item 6): `banlieue provider` as its own
// process against the real apiserver, with the test plugin's `faulty` variant
// (provider_process_fixture.h).
//  - A reconcile reply that breaks sdk/schemas/reconcile.response.json (addresses not a list)
//    is not copied: Ready=False, reason ProviderProtocolError naming the field, and the object
//    is tried again after a minute instead of at once.
//  - A reply the protocol allows but the kind's CRD refuses (status.capacity is an integer
//    there) gets the same reason with the apiserver's words, instead of a refused status write
//    on every pass with nothing on the object.
//  - The other objects of the same provider are served.
//  - A plugin's own conditions are set beside Ready; the runtime's fields it sends are refused.
#include "tests/integration/provider_process_fixture.h"

namespace banlieue::testing {
namespace {

using ::testing::HasSubstr;

class ProviderProtocolTest : public ProviderProcessTest {
 protected:
  std::string readyMessage(const std::string& machine) {
    return jsonpath("testmachine " + machine, "{.status.conditions[?(@.type==\"Ready\")].message}");
  }
};

TEST_F(ProviderProtocolTest, AReplyThatBreaksTheSchemaIsAConditionAndBacksOff) {
  startProvider();
  applyMachine("good", "");
  applyMachine("liar", "badReply: true");
  ASSERT_TRUE(
      LocalCluster::eventually([&] { return readyReason("liar") == "ProviderProtocolError"; }, 60s))
      << diagnostics();
  EXPECT_THAT(readyMessage("liar"), HasSubstr("/status/addresses"));
  EXPECT_EQ(jsonpath("testmachine liar", "{.status.addresses}"), "") << "a bad reply was copied";
  EXPECT_EQ(jsonpath("testmachine liar", "{.status.initialization.provisioned}"), "");
  EXPECT_TRUE(LocalCluster::eventually([&] { return readyReason("good") == "Provisioned"; }, 60s))
      << diagnostics();
  // Backed off for a minute, as the condition says, rather than retried at once.
  EXPECT_THAT(readyMessage("liar"), HasSubstr("next try in 60 s"));
}

TEST_F(ProviderProtocolTest, AStatusTheCrdRefusesIsAConditionNotALoop) {
  startProvider();
  applyMachine("big", "badStatus: true");
  ASSERT_TRUE(
      LocalCluster::eventually([&] { return readyReason("big") == "ProviderProtocolError"; }, 60s))
      << diagnostics();
  EXPECT_THAT(readyMessage("big"), HasSubstr("capacity"));
  EXPECT_THAT(readyMessage("big"), HasSubstr("apiserver refused"));
  EXPECT_THAT(readyMessage("big"), HasSubstr("next try in 60 s"));
}

// Issue #21: a plugin's own conditions reach the object beside the runtime's Ready (they were
// dropped), and a later reply's list replaces them.
TEST_F(ProviderProtocolTest, APluginsConditionsAreSetBesideReadyAndReplacedByTheNextList) {
  startProvider();
  applyMachine("talker", "condition: BackendReachable");
  auto condition = [&](const std::string& type, const std::string& field) {
    return jsonpath("testmachine talker",
                    "{.status.conditions[?(@.type==\"" + type + "\")]." + field + "}");
  };
  ASSERT_TRUE(LocalCluster::eventually(
      [&] { return condition("BackendReachable", "reason") == "Answered"; }, 60s))
      << diagnostics();
  EXPECT_EQ(condition("BackendReachable", "status"), "True");
  EXPECT_EQ(condition("BackendReachable", "message"), "the test backend answered");
  // The generation the reply answered (the runtime's providerID write moved it past 1).
  EXPECT_EQ(condition("BackendReachable", "observedGeneration"),
            jsonpath("testmachine talker", "{.metadata.generation}"));
  EXPECT_NE(condition("BackendReachable", "lastTransitionTime"), "");
  EXPECT_EQ(readyReason("talker"), "Provisioned");

  applyMachine("talker", "condition: GuestReady");
  ASSERT_TRUE(LocalCluster::eventually(
      [&] { return condition("GuestReady", "reason") == "Answered"; }, 60s))
      << diagnostics();
  EXPECT_EQ(condition("GuestReady", "observedGeneration"),
            jsonpath("testmachine talker", "{.metadata.generation}"));
  EXPECT_EQ(condition("BackendReachable", "status"), "") << "the earlier list was not replaced";
  EXPECT_EQ(readyReason("talker"), "Provisioned");
}

// Fields the runtime owns, sent by a plugin, are refused by name instead of silently dropped.
TEST_F(ProviderProtocolTest, TheRuntimesOwnFieldsFromAPluginAreAProtocolErrorNamingThem) {
  startProvider();
  applyMachine("forger", "forgeToken: true");
  applyMachine("usurper", "claimReady: true");
  for (const auto& [machine, pointer] : {std::pair{"forger", "/status/operationToken"},
                                         std::pair{"usurper", "/status/conditions/0/type"}}) {
    ASSERT_TRUE(LocalCluster::eventually(
        [&] { return readyReason(machine) == "ProviderProtocolError"; }, 60s))
        << machine << diagnostics();
    EXPECT_THAT(readyMessage(machine), HasSubstr(pointer)) << machine;
  }
  EXPECT_NE(jsonpath("testmachine forger", "{.status.operationToken}"), "forged");
}

}  // namespace
}  // namespace banlieue::testing
