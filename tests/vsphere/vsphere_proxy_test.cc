// The vSphere plugin behind an HTTP proxy (issue #25: one HTTPS client for plugins, with
// HTTPS_PROXY and NO_PROXY honoured): the real plugin, through Debian's tinyproxy, to vcsim.
// The vCenter's certificate is still verified through the tunnel. Label `security`.
#include "tests/support/scoped_env.h"
#include "tests/support/tinyproxy.h"
#include "tests/vsphere/plugin_driver.h"
#include "tests/vsphere/vcsim.h"
#include "tests/vsphere/vcsim_suite.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace banlieue::vsphere::testing {
namespace {

using ::banlieue::testing::ScopedEnv;
using ::banlieue::testing::TinyProxy;
using ::testing::HasSubstr;

class VsphereProxyTest : public VcsimSuite {
 protected:
  void SetUp() override {
    const std::string& url = vcsim_->url();  // https://127.0.0.1:<port>/sdk
    const auto colon = url.rfind(':');
    port_ = std::stoi(url.substr(colon + 1, url.find('/', colon) - colon - 1));
    env_.set("HTTPS_PROXY", std::nullopt).set("https_proxy", std::nullopt);
    env_.set("NO_PROXY", std::nullopt).set("no_proxy", std::nullopt);
  }

  int port_ = 0;
  ScopedEnv env_;
};
TEST_F(VsphereProxyTest, TheSessionTunnelsThroughTheProxyAndTlsIsStillVerified) {
  TinyProxy proxy({port_});
  env_.set("HTTPS_PROXY", proxy.url());
  PluginDriver driver;
  auto created = driver.create(vcsim_->instanceConfig("vcsim", Vcsim::kPassword));
  ASSERT_TRUE(created.ok()) << created.reason << ": " << created.message;
  auto requests = proxy.requests();
  ASSERT_FALSE(requests.empty()) << "the plugin did not use the proxy";
  EXPECT_THAT(requests.front(), HasSubstr("CONNECT 127.0.0.1:" + std::to_string(port_)));
  bool said = false;
  for (const auto& line : driver.host().logs()) {
    said = said || line.message.find("through proxy " + proxy.url()) != std::string::npos;
  }
  EXPECT_TRUE(said) << "the provider's log does not say which proxy it uses";

  // A certificate the Provider's CA did not sign is refused through the tunnel too.
  PluginDriver untrusted;
  auto refused =
      untrusted.create(vcsim_->instanceConfig("vcsim", Vcsim::kPassword, vcsim_->otherCaPem()));
  EXPECT_EQ(refused.reason, "ConnectFailed");
  EXPECT_THAT(refused.message, HasSubstr("TLS handshake"));
  EXPECT_THAT(refused.message, HasSubstr("through proxy"));
}

TEST_F(VsphereProxyTest, NoProxyNamingTheVCenterGoesDirect) {
  TinyProxy proxy({port_});
  env_.set("HTTPS_PROXY", proxy.url()).set("NO_PROXY", "127.0.0.1:" + std::to_string(port_));
  PluginDriver driver;
  auto created = driver.create(vcsim_->instanceConfig("vcsim", Vcsim::kPassword));
  ASSERT_TRUE(created.ok()) << created.reason << ": " << created.message;
  EXPECT_THAT(proxy.requests(), ::testing::IsEmpty());
}

TEST_F(VsphereProxyTest, AProxyNobodyListensOnIsProxyFailed) {
  // A proxy that is not there: the plugin never falls back to a direct connection.
  std::string gone;
  {
    TinyProxy stopped({port_});
    gone = stopped.url();
  }
  env_.set("HTTPS_PROXY", gone);
  PluginDriver driver;
  auto created = driver.create(vcsim_->instanceConfig("vcsim", Vcsim::kPassword));
  EXPECT_EQ(created.code, BANLIEUE_UNAVAILABLE);
  EXPECT_EQ(created.reason, "ProxyFailed");
  EXPECT_THAT(created.message, HasSubstr(gone));
}

}  // namespace
}  // namespace banlieue::vsphere::testing
