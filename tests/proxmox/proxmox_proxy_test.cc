// The Proxmox plugin behind an HTTP proxy (issue #25: one HTTPS client for plugins, with
// HTTPS_PROXY and NO_PROXY honoured): the real plugin, through Debian's tinyproxy, to the fake
// PVE API. Label `security` (besides integration, proxmox).
#include "tests/proxmox/fake_pve.h"
#include "tests/proxmox/plugin_driver.h"
#include "tests/support/scoped_env.h"
#include "tests/support/tinyproxy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>

namespace banlieue::proxmox::testing {
namespace {

using ::banlieue::testing::ScopedEnv;
using ::banlieue::testing::TinyProxy;
using sdk::abi::CallOutcome;
using ::testing::HasSubstr;

constexpr const char* kCapabilities = R"({"storageClasses":[],"networkClasses":[]})";

class ProxmoxProxyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fake_ = std::make_unique<FakePve>();
    port_ = std::stoi(fake_->url().substr(fake_->url().rfind(':') + 1));
    env_.set("HTTPS_PROXY", std::nullopt).set("https_proxy", std::nullopt);
    env_.set("NO_PROXY", std::nullopt).set("no_proxy", std::nullopt);
  }

  std::string connectLine() const { return "CONNECT 127.0.0.1:" + std::to_string(port_); }

  std::unique_ptr<FakePve> fake_;
  int port_ = 0;
  ScopedEnv env_;
};

TEST_F(ProxmoxProxyTest, WithHttpsProxySetEveryRequestTunnelsThroughTheProxy) {
  TinyProxy proxy({port_});
  env_.set("HTTPS_PROXY", proxy.url());
  Driver driver;
  CallOutcome created = driver.create(fake_->instanceConfig(FakePve::kSecret, kCapabilities));
  ASSERT_TRUE(created.ok()) << created.reason << ": " << created.message;
  const auto requests = proxy.requests();
  ASSERT_FALSE(requests.empty()) << "the plugin did not use the proxy";
  for (const auto& line : requests) EXPECT_THAT(line, HasSubstr(connectLine()));
  // TLS is still end to end and verified against the Provider's CA: the proxy saw only the
  // tunnel's address, never a request line of the API.
  for (const auto& line : requests) EXPECT_THAT(line, ::testing::Not(HasSubstr("/api2/")));
}

TEST_F(ProxmoxProxyTest, NoProxyNamingTheNodeGoesDirect) {
  TinyProxy proxy({port_});
  env_.set("https_proxy", proxy.url()).set("no_proxy", "example.test, 127.0.0.0/8");
  Driver driver;
  CallOutcome created = driver.create(fake_->instanceConfig(FakePve::kSecret, kCapabilities));
  ASSERT_TRUE(created.ok()) << created.reason << ": " << created.message;
  EXPECT_THAT(proxy.requests(), ::testing::IsEmpty());
}

TEST_F(ProxmoxProxyTest, AProxyThatRefusesTheTunnelIsProxyFailedNamingBoth) {
  TinyProxy proxy({1});  // tunnels only to port 1
  env_.set("HTTPS_PROXY", proxy.url());
  Driver driver;
  CallOutcome created = driver.create(fake_->instanceConfig(FakePve::kSecret, kCapabilities));
  EXPECT_EQ(created.code, BANLIEUE_UNAVAILABLE);
  EXPECT_EQ(created.reason, "ProxyFailed");
  EXPECT_THAT(created.message, HasSubstr(proxy.url()));
  EXPECT_THAT(created.message, HasSubstr("127.0.0.1:" + std::to_string(port_)));
  EXPECT_THAT(created.message, HasSubstr("HTTPS_PROXY"));
}

TEST_F(ProxmoxProxyTest, ProxyCredentialsAreSentAndNeverShown) {
  TinyProxy proxy({port_}, "banlieue:pr0xy-s3cret");
  env_.set("HTTPS_PROXY", proxy.url("banlieue:wrong-one"));
  Driver refused;
  CallOutcome wrong = refused.create(fake_->instanceConfig(FakePve::kSecret, kCapabilities));
  EXPECT_EQ(wrong.reason, "ProxyFailed");
  EXPECT_THAT(wrong.message, ::testing::ContainsRegex("40[17]"));  // tinyproxy says 401
  EXPECT_THAT(wrong.message, ::testing::Not(HasSubstr("wrong-one")));

  env_.set("HTTPS_PROXY", proxy.url("banlieue:pr0xy-s3cret"));
  Driver driver;
  CallOutcome created = driver.create(fake_->instanceConfig(FakePve::kSecret, kCapabilities));
  EXPECT_TRUE(created.ok()) << created.reason << ": " << created.message;
  for (const auto& line : sdk::testing::FakeHost::shared().logs()) {
    EXPECT_THAT(line.message, ::testing::Not(HasSubstr("pr0xy-s3cret")));
  }
}

// The console's websocket (termproxy, then vncwebsocket) tunnels through the proxy like every
// request: TLS and the Provider's CA end to end, the ticket never in the proxy's view.
TEST_F(ProxmoxProxyTest, TheConsoleTunnelsThroughTheProxyToo) {
  namespace json = sdk::json;
  TinyProxy proxy({port_});
  env_.set("HTTPS_PROXY", proxy.url());
  Driver driver;
  CallOutcome created = driver.create(fake_->instanceConfig(FakePve::kSecret, kCapabilities));
  ASSERT_TRUE(created.ok()) << created.reason << ": " << created.message;
  const std::string uid = "a1b2c3d4-0000-4000-8000-00000000c0f1";
  CallOutcome out = driver.drive("reconcile", machine("via-proxy", uid, ""));
  ASSERT_TRUE(out.ok()) << out.reason << ": " << out.message;
  const int vmid = json::parse(out.body, "reply")["status"]["vmid"].GetInt();
  fake_->fake("config?vmid=" + std::to_string(vmid) + "&key=serial0&value=socket");
  std::string object = machine("via-proxy", uid, "");
  object.insert(object.find(R"("spec":{)") + 8,
                R"("providerID":"proxmox://pve1/)" + std::to_string(vmid) + R"(",)");

  const size_t tunnels_before = proxy.requests().size();
  banlieue_console* console = nullptr;
  CallOutcome opened = driver.consoleOpen(object, &console);
  ASSERT_TRUE(opened.ok()) << opened.reason << ": " << opened.message;
  std::string got;
  for (int i = 0; i < 50 && got.find("via-proxy login: ") == std::string::npos; ++i) {
    ASSERT_EQ(driver.consoleRead(console, got, std::chrono::milliseconds(200)), BANLIEUE_OK);
  }
  EXPECT_THAT(got, HasSubstr("via-proxy login: "));
  driver.consoleClose(console);

  const auto requests = proxy.requests();
  // status, config, termproxy and the websocket: a tunnel each.
  EXPECT_GE(requests.size(), tunnels_before + 4);
  for (const auto& line : requests) {
    EXPECT_THAT(line, HasSubstr(connectLine()));
    EXPECT_THAT(line, ::testing::Not(HasSubstr("vncticket")));
  }
  CallOutcome gone = driver.drive("finalize", object);
  EXPECT_TRUE(gone.ok()) << gone.reason << ": " << gone.message;
  EXPECT_EQ(fake_->guestCount(), 0);
}

TEST_F(ProxmoxProxyTest, AMalformedProxySettingIsProxyInvalid) {
  env_.set("HTTPS_PROXY", "socks5://127.0.0.1:1080");
  Driver driver;
  CallOutcome created = driver.create(fake_->instanceConfig(FakePve::kSecret, kCapabilities));
  EXPECT_EQ(created.code, BANLIEUE_INVALID_ARGUMENT);
  EXPECT_EQ(created.reason, "ProxyInvalid");
  EXPECT_THAT(created.message, HasSubstr("socks5"));
}

}  // namespace
}  // namespace banlieue::proxmox::testing
