// The provider's console server (docs/adr/0040) against the real apiserver's TokenReview and
// SubjectAccessReview: `banlieue provider` as its own process with the test plugin's echo
// console (provider_process_fixture.h), reached by `banlieue vm console --address` as a person
// would reach it once port-forwarded.
//  - A ServiceAccount granted get on virtualmachines/console for the VM types into the
//    console and reads what it typed back; the VM gets ConsoleOpened and ConsoleClosed Events
//    (who, how long, bytes), and the token appears in neither the Events nor the provider's log.
//  - One without the grant is refused (Forbidden, naming what it lacks), and so is a token the
//    apiserver does not know (Unauthenticated), with no console opened.
//  - A VM on another Provider is refused (NotServedHere), before any plugin call.
//  - A webmks console (a ticket URL, vSphere's kind) reaches `banlieue vm console --url` as
//    one line on stdout; the Event says who, never the URL or its ticket.
#include "tests/integration/provider_process_fixture.h"
#include "tests/support/free_port.h"

#include "host/roles/controller/vm_reconciler.h"

#include <sstream>
#include <vector>

namespace banlieue::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class ConsoleServerTest : public ProviderProcessTest {
 protected:
  void SetUp() override {
    ProviderProcessTest::SetUp();
    if (HasFatalFailure()) return;
    console_port_ = freePort();
    startProvider({"--console-port", std::to_string(console_port_)});
    applyMachine("m1", "");
    ASSERT_TRUE(LocalCluster::eventually([&] { return readyReason("m1") == "Provisioned"; }, 60s))
        << diagnostics();
    // A VM placed on this Provider with m1 as its machine. Paused: a controller elsewhere in the
    // shared cluster leaves a paused VM as it is, so the placement written here stays.
    placeVm("vm1", "tests", "m1");
    // Who may, and who may not.
    auto applied = cluster_.apply(R"(apiVersion: v1
kind: ServiceAccount
metadata: {name: console-user, namespace: )" +
                                  ns_->name() + R"(}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: bystander, namespace: )" +
                                  ns_->name() + R"(}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: vm-console, namespace: )" +
                                  ns_->name() + R"(}
rules:
- apiGroups: [banlieue.io]
  resources: [virtualmachines/console]
  verbs: [get]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: vm-console, namespace: )" +
                                  ns_->name() + R"(}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: vm-console}
subjects:
- {kind: ServiceAccount, name: console-user, namespace: )" +
                                  ns_->name() + R"(}
)");
    ASSERT_EQ(applied.exit_code, 0) << applied.output;
  }

  void placeVm(const std::string& name, const std::string& provider, const std::string& machine) {
    auto applied = cluster_.apply(R"(apiVersion: banlieue.io/v1alpha1
kind: VirtualMachine
metadata: {name: )" + name +
                                  ", namespace: " + ns_->name() + R"(}
spec:
  classRef: {name: console-test}
  imageRef: {name: console-test}
  paused: true
)");
    ASSERT_EQ(applied.exit_code, 0) << applied.output;
    auto client = cluster_.client();
    ASSERT_NE(client, nullptr);
    auto patched = client->patch(
        ::banlieue::controller::resources::kVirtualMachine, ns_->name(), name,
        kube::PatchType::kMerge,
        R"({"status":{"scheduled":{"providerName":")" + provider +
            R"("},"infrastructureRef":{"apiGroup":"infrastructure.test.banlieue.io","kind":"TestMachine","name":")" +
            machine + R"("}}})",
        "status");
    ASSERT_TRUE(patched.ok()) << patched.status().message();
  }

  std::string tokenOf(const std::string& service_account) {
    return cluster_.serviceAccountToken(ns_->name(), service_account);
  }

  // `banlieue vm console` with `input` on stdin, for at most `seconds`.
  CommandResult console(const std::string& vm, const std::string& token, const std::string& input,
                        int seconds = 4) {
    return runCommand("printf '" + input + "' | " + std::string(BANLIEUE_BINARY) + " vm console " +
                          vm + " -n " + ns_->name() + " --kubeconfig " +
                          cluster_.kubeconfig().string() +
                          " --address 127.0.0.1:" + std::to_string(console_port_) + " --token " +
                          shellQuote(token) + " --timeout " + std::to_string(seconds) + " 2>&1",
                      std::chrono::seconds(seconds + 30));
  }

  std::string events() {
    return cluster_
        .kubectl("get events -n " + ns_->name() +
                 " --field-selector involvedObject.kind=VirtualMachine -o "
                 "jsonpath='{range .items[*]}{.reason}: {.message}{\"\\n\"}{end}'")
        .output;
  }

  int console_port_ = 0;
};

TEST_F(ConsoleServerTest, AGrantedUserTypesIntoTheConsoleAndEventsSayWhoAndHowLong) {
  const std::string token = tokenOf("console-user");
  ASSERT_FALSE(token.empty());
  auto session = console("vm1", token, "hello console\\n");
  EXPECT_EQ(session.exit_code, 0) << session.output << diagnostics();
  // The echo console greets with the machine's backend VM, then echoes what was typed.
  EXPECT_THAT(session.output, HasSubstr("connected to the serial console of virtualmachine " +
                                        ns_->name() + "/vm1"));
  EXPECT_THAT(session.output, HasSubstr("test console of test://"));
  EXPECT_THAT(session.output, HasSubstr("hello console"));
  EXPECT_THAT(session.output, HasSubstr("console closed: --timeout ran out"));
  const std::string user = "system:serviceaccount:" + ns_->name() + ":console-user";
  std::string said;
  EXPECT_TRUE(LocalCluster::eventually(
      [&] {
        said = events();
        return said.find("ConsoleClosed") != std::string::npos;
      },
      30s))
      << said << diagnostics();
  EXPECT_THAT(said, HasSubstr("ConsoleOpened: " + user + " opened the serial console"));
  EXPECT_THAT(said, HasSubstr("ConsoleClosed: " + user + "'s serial console closed after"));
  EXPECT_THAT(said, HasSubstr("14 bytes typed"));
  EXPECT_THAT(said, Not(HasSubstr(token)));
  EXPECT_THAT(provider_->output(), Not(HasSubstr(token)));
}

// A ticket console (webmks: vSphere's WebMKS, here the test plugin's): the same checks, then
// one line with the URL and the connection closes. `banlieue vm console --url` prints the URL
// alone on stdout and says on stderr that it expires and is a credential; the Event says who
// took which console, and neither it nor the provider's log holds the ticket.
TEST_F(ConsoleServerTest, AWebmksConsoleIsAUrlForTheGrantedUserAndNoEventHoldsTheTicket) {
  const std::string token = tokenOf("console-user");
  ASSERT_FALSE(token.empty());
  // stderr's lines marked, stdout's as they are.
  auto run = runCommand("( " + std::string(BANLIEUE_BINARY) + " vm console vm1 --url -n " +
                            ns_->name() + " --kubeconfig " + cluster_.kubeconfig().string() +
                            " --address 127.0.0.1:" + std::to_string(console_port_) + " --token " +
                            shellQuote(token) + " 2>&1 1>&3 | sed 's/^/stderr: /' ) 3>&1",
                        std::chrono::seconds(60));
  EXPECT_EQ(run.exit_code, 0) << run.output << diagnostics();
  std::vector<std::string> out;
  std::string note;
  std::istringstream lines(run.output);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("stderr: ", 0) == 0)
      note += line;
    else if (!line.empty())
      out.push_back(line);
  }
  ASSERT_EQ(out.size(), 1u) << run.output;
  EXPECT_EQ(out[0].rfind("wss://127.0.0.1:9/ticket/test-webmks-ticket-", 0), 0u) << out[0];
  EXPECT_THAT(note, HasSubstr("expires in 30 s and is a credential"));
  const std::string ticket = out[0].substr(out[0].rfind('/') + 1);
  ASSERT_FALSE(ticket.empty());

  const std::string user = "system:serviceaccount:" + ns_->name() + ":console-user";
  std::string said;
  EXPECT_TRUE(LocalCluster::eventually(
      [&] {
        said = events();
        return said.find("ConsoleOpened") != std::string::npos;
      },
      30s))
      << said << diagnostics();
  EXPECT_THAT(said, HasSubstr("ConsoleOpened: " + user +
                              " opened the webmks console (a ticket valid for 30 s)"));
  EXPECT_THAT(said, Not(HasSubstr("ConsoleClosed")));  // nothing streamed, nothing to close
  EXPECT_THAT(said, Not(HasSubstr(ticket)));
  EXPECT_THAT(said, Not(HasSubstr("wss://")));
  EXPECT_THAT(provider_->output(), Not(HasSubstr(ticket)));
  EXPECT_THAT(provider_->output(), Not(HasSubstr(token)));

  // Without the grant, no ticket.
  auto refused = runCommand(std::string(BANLIEUE_BINARY) + " vm console vm1 --url -n " +
                                ns_->name() + " --kubeconfig " + cluster_.kubeconfig().string() +
                                " --address 127.0.0.1:" + std::to_string(console_port_) +
                                " --token " + shellQuote(tokenOf("bystander")) + " 2>&1",
                            std::chrono::seconds(60));
  EXPECT_NE(refused.exit_code, 0) << refused.output;
  EXPECT_THAT(refused.output, HasSubstr("Forbidden"));
  EXPECT_THAT(refused.output, Not(HasSubstr("wss://")));
}

TEST_F(ConsoleServerTest, WithoutTheGrantOrWithAnUnknownTokenNoConsoleOpens) {
  auto refused = console("vm1", tokenOf("bystander"), "nothing\\n");
  EXPECT_NE(refused.exit_code, 0) << refused.output;
  EXPECT_THAT(refused.output,
              HasSubstr("Forbidden: user \"system:serviceaccount:" + ns_->name() +
                        ":bystander\" may not open the console of virtualmachine " + ns_->name() +
                        "/vm1: it needs get on virtualmachines/console"));
  EXPECT_THAT(refused.output, Not(HasSubstr("test console of")));

  auto unknown = console("vm1", "not-a-token-the-apiserver-issued", "nothing\\n");
  EXPECT_NE(unknown.exit_code, 0) << unknown.output;
  EXPECT_THAT(unknown.output, HasSubstr("Unauthenticated: the token was not accepted"));
  EXPECT_THAT(events(), Not(HasSubstr("ConsoleOpened")));
}

TEST_F(ConsoleServerTest, AVmOnAnotherProviderIsNotServedHere) {
  placeVm("vm2", "elsewhere", "m1");
  auto refused = console("vm2", tokenOf("console-user"), "");
  EXPECT_NE(refused.exit_code, 0) << refused.output;
  EXPECT_THAT(refused.output,
              HasSubstr("NotServedHere: virtualmachine " + ns_->name() + "/vm2 is on Provider " +
                        ns_->name() + "/elsewhere, not on " + ns_->name() + "/tests"));
}

}  // namespace
}  // namespace banlieue::testing
