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

}  // namespace
}  // namespace banlieue::testing
