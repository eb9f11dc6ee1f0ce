// Who may open which console (host/roles/provider/console_access.h): the hello a client sends,
// the TokenReview and SubjectAccessReview the provider asks the apiserver for, what their
// answers decide, and the verdict line the client reads back.
#include "host/roles/provider/console_access.h"

#include <banlieue/sdk/json.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace banlieue::roles::provider {
namespace {

namespace json = sdk::json;
using ::testing::HasSubstr;

rapidjson::Document parsed(const std::string& text) {
  return json::parse(text, "test");
}

TEST(ConsoleAccessTest, AHelloRoundTripsAndMissingPartsAreNamed) {
  ConsoleHello hello{"t0k3n", "team-a", "web-1", "serial"};
  std::string line = encodeConsoleHello(hello);
  ASSERT_EQ(line.back(), '\n');
  line.pop_back();
  auto back = parseConsoleHello(line);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->token, "t0k3n");
  EXPECT_EQ(back->ns, "team-a");
  EXPECT_EQ(back->virtual_machine, "web-1");
  EXPECT_EQ(back->console, "serial");

  auto no_token = parseConsoleHello(R"({"namespace":"a","virtualMachine":"b"})");
  ASSERT_FALSE(no_token.ok());
  EXPECT_EQ(no_token.status().reason(), "BadConsoleRequest");
  EXPECT_THAT(no_token.status().message(), HasSubstr("no token"));
  auto no_vm = parseConsoleHello(R"({"token":"x","namespace":"a"})");
  ASSERT_FALSE(no_vm.ok());
  EXPECT_THAT(no_vm.status().message(), HasSubstr("virtualMachine"));
  auto vnc =
      parseConsoleHello(R"({"token":"x","namespace":"a","virtualMachine":"b","console":"vnc"})");
  ASSERT_FALSE(vnc.ok());
  EXPECT_THAT(vnc.status().message(), HasSubstr("'vnc' is not one this provider serves"));
  auto garbage = parseConsoleHello("GET / HTTP/1.1");
  ASSERT_FALSE(garbage.ok());
  EXPECT_EQ(garbage.status().code(), Code::kInvalidArgument);
  auto huge = parseConsoleHello(std::string(kMaxConsoleHello + 1, ' '));
  ASSERT_FALSE(huge.ok());
  EXPECT_THAT(huge.status().message(), HasSubstr("longer than"));
}

TEST(ConsoleAccessTest, TheTokenReviewNamesTheUserOrRefuses) {
  auto body = parsed(tokenReviewBody("abc"));
  EXPECT_EQ(json::stringOr(&body, "kind"), "TokenReview");
  EXPECT_EQ(json::stringOr(&body, "spec.token"), "abc");

  auto user = reviewedUser(parsed(R"({"status":{"authenticated":true,"user":{
      "username":"system:serviceaccount:a:b","uid":"u-1","groups":["system:serviceaccounts"],
      "extra":{"authentication.kubernetes.io/pod-name":["p"]}}}})"));
  ASSERT_TRUE(user.ok());
  EXPECT_EQ(user->username, "system:serviceaccount:a:b");
  EXPECT_EQ(user->uid, "u-1");
  EXPECT_EQ(user->groups, std::vector<std::string>{"system:serviceaccounts"});
  EXPECT_EQ(user->extra["authentication.kubernetes.io/pod-name"], std::vector<std::string>{"p"});

  auto refused = reviewedUser(parsed(R"({"status":{"authenticated":false,"error":"expired"}})"));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Code::kUnauthenticated);
  EXPECT_EQ(refused.status().reason(), "Unauthenticated");
  EXPECT_THAT(refused.status().message(), HasSubstr("expired"));
  EXPECT_FALSE(reviewedUser(parsed(R"({"status":{}})")).ok());
}

TEST(ConsoleAccessTest, TheAccessReviewAsksForTheConsoleSubresourceOfThatVm) {
  ConsoleUser user{"alice", "u-9", {"devs", "system:authenticated"}, {{"scopes", {"s1"}}}};
  auto body = parsed(consoleAccessReviewBody(user, "team-a", "web-1"));
  EXPECT_EQ(json::stringOr(&body, "kind"), "SubjectAccessReview");
  EXPECT_EQ(json::stringOr(&body, "spec.user"), "alice");
  EXPECT_EQ(json::stringOr(&body, "spec.uid"), "u-9");
  EXPECT_EQ(json::find(&body, "spec.groups")->Size(), 2U);
  EXPECT_EQ(json::find(&body, "spec.extra.scopes")->Size(), 1U);
  EXPECT_EQ(json::stringOr(&body, "spec.resourceAttributes.namespace"), "team-a");
  EXPECT_EQ(json::stringOr(&body, "spec.resourceAttributes.verb"), "get");
  EXPECT_EQ(json::stringOr(&body, "spec.resourceAttributes.group"), "banlieue.io");
  EXPECT_EQ(json::stringOr(&body, "spec.resourceAttributes.resource"), "virtualmachines");
  EXPECT_EQ(json::stringOr(&body, "spec.resourceAttributes.subresource"), "console");
  EXPECT_EQ(json::stringOr(&body, "spec.resourceAttributes.name"), "web-1");

  EXPECT_TRUE(
      consoleAccessDecision(parsed(R"({"status":{"allowed":true}})"), user, "team-a", "web-1")
          .isOk());
  auto denied = consoleAccessDecision(parsed(R"({"status":{"allowed":false,"reason":"no RBAC"}})"),
                                      user, "team-a", "web-1");
  EXPECT_EQ(denied.code(), Code::kPermissionDenied);
  EXPECT_EQ(denied.reason(), "Forbidden");
  EXPECT_THAT(denied.message(), HasSubstr("user \"alice\" may not open the console of "
                                          "virtualmachine team-a/web-1"));
  EXPECT_THAT(denied.message(), HasSubstr("(no RBAC)"));
  // No answer at all is no permission.
  EXPECT_FALSE(consoleAccessDecision(parsed("{}"), user, "team-a", "web-1").isOk());
}

TEST(ConsoleAccessTest, TheVerdictLineCarriesTheFailureOrTheConsole) {
  std::string connected = consoleVerdictLine(Status::ok(), "serial", "serial0 of web-1");
  ASSERT_EQ(connected.back(), '\n');
  std::string description;
  EXPECT_TRUE(parseConsoleVerdict(connected.substr(0, connected.size() - 1), &description).isOk());
  EXPECT_EQ(description, "serial0 of web-1");

  std::string failed =
      consoleVerdictLine({Code::kFailedPrecondition, "ConsoleBusy", "someone else has it"});
  auto back = parseConsoleVerdict(failed.substr(0, failed.size() - 1));
  EXPECT_EQ(back.code(), Code::kFailedPrecondition);
  EXPECT_EQ(back.reason(), "ConsoleBusy");
  EXPECT_EQ(back.message(), "someone else has it");

  auto nonsense = parseConsoleVerdict("SSH-2.0-OpenSSH_9.2");
  EXPECT_EQ(nonsense.reason(), "ConsoleProtocolError");
}

// A ticket console (webmks): the hello may ask for it, and the verdict carries its URL and
// lifetime, which a serial verdict does not.
TEST(ConsoleAccessTest, AWebmksHelloIsAcceptedAndItsVerdictCarriesTheUrl) {
  auto hello =
      parseConsoleHello(R"({"token":"x","namespace":"a","virtualMachine":"b","console":"webmks"})");
  ASSERT_TRUE(hello.ok()) << hello.status().message();
  EXPECT_EQ(hello->console, "webmks");

  ConsoleConnected ticket{"webmks", "WebMKS of vm-1 on esx-1", "wss://esx-1:443/ticket/abc", 30};
  std::string line = consoleVerdictLine(ticket);
  ASSERT_EQ(line.back(), '\n');
  ConsoleConnected back;
  ASSERT_TRUE(parseConsoleVerdict(line.substr(0, line.size() - 1), &back).isOk());
  EXPECT_EQ(back.console, "webmks");
  EXPECT_EQ(back.description, "WebMKS of vm-1 on esx-1");
  EXPECT_EQ(back.url, "wss://esx-1:443/ticket/abc");
  EXPECT_EQ(back.expires_in_seconds, 30);

  ConsoleConnected serial;
  std::string stream = consoleVerdictLine(Status::ok(), "serial", "serial0");
  ASSERT_TRUE(parseConsoleVerdict(stream.substr(0, stream.size() - 1), &serial).isOk());
  EXPECT_TRUE(serial.url.empty());
  EXPECT_EQ(serial.expires_in_seconds, 0);
}

}  // namespace
}  // namespace banlieue::roles::provider
