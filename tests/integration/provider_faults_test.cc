// `banlieue provider` as its own process against the real apiserver, with the test plugin's
// `faulty` variant (a slow, hanging or crashing reconcile for the objects that ask for one):
//  - a stopping provider keeps its Lease until its in-flight plugin call has returned;
//  - a call stuck past its deadline plus the grace turns /healthz red, naming slot and object;
//  - after the plugin crashed on one object, the restarted provider holds that object back with
//    Ready=False/PluginCrashed and an event, and serves the others.
#include "tests/integration/provider_process_fixture.h"

namespace banlieue::testing {
namespace {

using ::testing::HasSubstr;
using ProviderFaultsTest = ProviderProcessTest;

TEST_F(ProviderFaultsTest, AStoppingProviderKeepsItsLeaseUntilItsPluginCallsReturn) {
  startProvider();
  applyMachine("slow", "slowSeconds: 4");
  ASSERT_TRUE(LocalCluster::eventually([&] { return outputHas("slow reconcile of"); }, 60s))
      << diagnostics();
  ASSERT_EQ(::kill(provider_->pid(), SIGTERM), 0);
  // The Lease is released only once the call (which ignores cancellation) has returned: the
  // host logs its late return before anything else happens.
  bool released = LocalCluster::eventually(
      [&] {
        if (jsonpath(lease(), "{.spec.holderIdentity}").empty()) {
          EXPECT_TRUE(outputHas("ms after its 1000 ms deadline"))
              << "the Lease was released while a plugin call was still running" << diagnostics();
          return true;
        }
        return provider_->exited();
      },
      60s);
  EXPECT_TRUE(released) << diagnostics();
  int code = -1;
  EXPECT_TRUE(LocalCluster::eventually([&] { return provider_->exited(&code); }, 30s));
  EXPECT_EQ(code, 0) << diagnostics();
  EXPECT_EQ(jsonpath(lease(), "{.spec.holderIdentity}"), "") << diagnostics();
}

TEST_F(ProviderFaultsTest, ACallStuckPastDeadlineAndGraceFailsTheLivenessCheck) {
  startProvider({"--plugin-hang-grace-seconds", "2"});
  int port = healthPort();
  ASSERT_GT(port, 0) << diagnostics();
  std::string healthz =
      "curl -s -w ' %{http_code}' http://127.0.0.1:" + std::to_string(port) + "/healthz";
  EXPECT_THAT(runCommand(healthz).output, HasSubstr(" 200"));
  applyMachine("stuck", "hang: true");
  std::string answer;
  EXPECT_TRUE(LocalCluster::eventually(
      [&] {
        answer = runCommand(healthz).output;
        return answer.find(" 500") != std::string::npos;
      },
      60s))
      << answer << diagnostics();
  EXPECT_THAT(answer, HasSubstr("plugin-calls"));
  EXPECT_THAT(answer, HasSubstr("reconcile of TestMachine " + ns_->name() + "/stuck"));
  provider_->stop(SIGKILL);  // a hung call never returns; the kubelet would kill it the same way
}

TEST_F(ProviderFaultsTest, AnObjectThePluginCrashesOnIsHeldBackAndTheOthersProceed) {
  startProvider({"--plugin-crash-backoff-seconds", "600"});
  applyMachine("good", "");
  ASSERT_TRUE(LocalCluster::eventually([&] { return readyReason("good") == "Provisioned"; }, 60s))
      << diagnostics();
  applyMachine("bad", "crash: true");
  int code = -1;
  ASSERT_TRUE(LocalCluster::eventually([&] { return provider_->exited(&code); }, 60s))
      << diagnostics();
  EXPECT_EQ(code, 128 + SIGSEGV) << diagnostics();

  // What the kubelet does: start it again, with the same state directory.
  applyMachine("later", "");
  startProvider({"--plugin-crash-backoff-seconds", "600"});
  EXPECT_TRUE(LocalCluster::eventually([&] { return readyReason("bad") == "PluginCrashed"; }, 60s))
      << diagnostics();
  EXPECT_THAT(jsonpath("testmachine bad", "{.status.conditions[?(@.type==\"Ready\")].message}"),
              HasSubstr("reconcile of TestMachine " + ns_->name() + "/bad"));
  EXPECT_TRUE(LocalCluster::eventually([&] { return readyReason("later") == "Provisioned"; }, 60s))
      << diagnostics();
  EXPECT_TRUE(LocalCluster::eventually([&] {
    return cluster_
               .kubectl("get events -n " + ns_->name() +
                        " --field-selector reason=PluginCrashed,involvedObject.name=bad -o name")
               .output.find("event") != std::string::npos;
  })) << diagnostics();
  EXPECT_FALSE(provider_->exited()) << "crashed again on the held-back object" << diagnostics();
}

}  // namespace
}  // namespace banlieue::testing
