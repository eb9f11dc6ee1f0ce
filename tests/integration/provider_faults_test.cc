// `banlieue provider` as its own process against the real apiserver, with the test plugin's
// `faulty` variant (a slow, hanging or crashing reconcile for the objects that ask for one):
//  - a stopping provider keeps its Lease until its in-flight plugin call has returned;
//  - a call stuck past its deadline plus the grace turns /healthz red, naming slot and object;
//  - after the plugin crashed on one object, the restarted provider holds that object back with
//    Ready=False/PluginCrashed and an event, and serves the others;
//  - a call the watchdog found hung is held back the same way as PluginHung;
//  - an object that crashed the plugin K times in a row is quarantined until a user clears it
//    or its spec changes.
#include "tests/integration/provider_process_fixture.h"

#include <thread>

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

// The watchdog records a hung call in the journal before the kubelet kills the process, so the
// next process says what happened: PluginHung, not a crash.
TEST_F(ProviderFaultsTest, AnObjectWhoseCallHungIsHeldBackAsPluginHungAfterTheRestart) {
  startProvider({"--plugin-hang-grace-seconds", "1", "--plugin-crash-backoff-seconds", "600"});
  int port = healthPort();
  ASSERT_GT(port, 0) << diagnostics();
  applyMachine("stuck", "hang: true");
  std::string healthz =
      "curl -s -w ' %{http_code}' http://127.0.0.1:" + std::to_string(port) + "/healthz";
  ASSERT_TRUE(LocalCluster::eventually(
      [&] { return runCommand(healthz).output.find(" 500") != std::string::npos; }, 60s))
      << diagnostics();
  provider_->stop(SIGKILL);  // the kubelet, after the failed liveness probes

  startProvider({"--plugin-crash-backoff-seconds", "600"});
  EXPECT_TRUE(LocalCluster::eventually([&] { return readyReason("stuck") == "PluginHung"; }, 60s))
      << diagnostics();
  EXPECT_THAT(jsonpath("testmachine stuck", "{.status.conditions[?(@.type==\"Ready\")].message}"),
              HasSubstr("did not return within its deadline"));
  EXPECT_TRUE(LocalCluster::eventually([&] {
    return cluster_
               .kubectl("get events -n " + ns_->name() +
                        " --field-selector reason=PluginHung,involvedObject.name=stuck -o name")
               .output.find("event") != std::string::npos;
  })) << diagnostics();
}

// K crashes in a row (here 2) quarantine the object: no more calls, not even after a back-off,
// until a user clears it (annotation) or its spec changes.
TEST_F(ProviderFaultsTest, AnObjectThatKeepsCrashingThePluginIsQuarantinedUntilClearedOrChanged) {
  const std::vector<std::string> flags{"--plugin-crash-backoff-seconds", "1",
                                       "--plugin-quarantine-after", "2"};
  auto crashesAgain = [&] {
    int code = -1;
    bool exited = LocalCluster::eventually([&] { return provider_->exited(&code); }, 60s);
    return exited && code == 128 + SIGSEGV;
  };
  startProvider(flags);
  applyMachine("bad", "crash: true");
  ASSERT_TRUE(crashesAgain()) << diagnostics();  // crash 1
  startProvider(flags);
  ASSERT_TRUE(crashesAgain()) << diagnostics();  // held 1 s, then crash 2
  startProvider(flags);
  ASSERT_TRUE(LocalCluster::eventually([&] {
    return jsonpath("testmachine bad", "{.status.conditions[?(@.type==\"Ready\")].message}")
               .find("quarantined") != std::string::npos;
  })) << diagnostics();
  EXPECT_EQ(readyReason("bad"), "PluginCrashed");
  // A back-off would have tried again within 2 s; quarantine does not.
  std::this_thread::sleep_for(6s);
  ASSERT_FALSE(provider_->exited()) << "the quarantined object reached the plugin" << diagnostics();

  // A user clears it: the next call happens (and crashes: the spec still asks for it).
  ASSERT_EQ(cluster_
                .kubectl("annotate testmachine bad -n " + ns_->name() +
                         " banlieue.io/clear-quarantine=true")
                .exit_code,
            0);
  ASSERT_TRUE(crashesAgain()) << diagnostics();
  EXPECT_EQ(jsonpath("testmachine bad", "{.metadata.annotations.banlieue\\.io/clear-quarantine}"),
            "")
      << "the annotation is consumed" << diagnostics();
  startProvider(flags);
  ASSERT_TRUE(crashesAgain()) << diagnostics();
  startProvider(flags);
  ASSERT_TRUE(LocalCluster::eventually([&] {
    return jsonpath("testmachine bad", "{.status.conditions[?(@.type==\"Ready\")].message}")
               .find("quarantined") != std::string::npos;
  })) << diagnostics();

  // A spec change lifts it: the fixed object is provisioned.
  ASSERT_EQ(cluster_
                .kubectl("patch testmachine bad -n " + ns_->name() +
                         " --type merge -p '{\"spec\":{\"crash\":false}}'")
                .exit_code,
            0);
  EXPECT_TRUE(LocalCluster::eventually([&] { return readyReason("bad") == "Provisioned"; }, 60s))
      << diagnostics();
  EXPECT_FALSE(provider_->exited()) << diagnostics();
}

}  // namespace
}  // namespace banlieue::testing
