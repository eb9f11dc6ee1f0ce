// The SDK's HTTPS policy without a network (issue #25, one HTTPS client for plugins): which
// endpoints a plugin accepts, and which requests HTTPS_PROXY and NO_PROXY send through a proxy.
// The client itself runs against real servers and Debian's tinyproxy in the plugins' proxy
// tests. Label `security`.
#include "tests/support/scoped_env.h"

#include <banlieue/sdk/https.h>
#include <banlieue/sdk/proxy.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace banlieue::sdk::https {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string refusal(const std::string& url, const EndpointRules& rules = {}) {
  try {
    (void)Endpoint::parse(url, rules);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "accepted";
}

TEST(SdkEndpointTest, PlainHttpIsRefusedSayingWhatWouldGoInClearUnlessATestModeAllowsIt) {
  EndpointRules rules;
  rules.plain_http_refusal = "would send the token in clear";
  EXPECT_THAT(refusal("http://pve.example.test:8006", rules), HasSubstr("token in clear"));
  rules.allow_plain_http = true;
  const Endpoint e = Endpoint::parse("http://pve.example.test", rules);
  EXPECT_EQ(e.scheme, "http");
  EXPECT_EQ(e.port, "80");
  EXPECT_FALSE(e.tls());
}

TEST(SdkEndpointTest, HostsPortsAndPaths) {
  EndpointRules rules;
  rules.default_port = "8006";
  rules.default_path = "/sdk";
  Endpoint e = Endpoint::parse("HTTPS://Vc.Example.Test", rules);
  EXPECT_EQ(e.scheme, "https");
  EXPECT_EQ(e.port, "8006");
  EXPECT_EQ(e.path, "/sdk");
  e = Endpoint::parse("https://[fd00::1]:9443/custom?x#y", rules);
  EXPECT_EQ(e.host, "fd00::1");
  EXPECT_EQ(e.port, "9443");
  EXPECT_EQ(e.path, "/custom");
  EXPECT_EQ(e.authority(), "[fd00::1]:9443");
  EXPECT_EQ(e.origin(), "https://[fd00::1]:9443");
  EXPECT_EQ(Endpoint::parse("https://h/", rules).path, "/sdk");
}

TEST(SdkEndpointTest, MalformedEndpointsSayWhatIsWrong) {
  EXPECT_THAT(refusal("vc.example.test"), HasSubstr("no scheme"));
  EXPECT_THAT(refusal("ftp://vc"), HasSubstr("scheme must be https"));
  EXPECT_THAT(refusal("https://user:pw@vc"), HasSubstr("credentials"));
  EXPECT_THAT(refusal("https://vc:abc"), HasSubstr("invalid port"));
  EXPECT_THAT(refusal("https://vc:70000"), HasSubstr("invalid port"));
  EXPECT_THAT(refusal("https://"), HasSubstr("names no host"));
  EXPECT_THAT(refusal("https://[::1"), HasSubstr("unterminated"));
}

TEST(SdkProxyTest, NoHttpsProxyMeansDirect) {
  EXPECT_FALSE(ProxySettings::parse("", "").proxyFor("vc.example.test", "443"));
  EXPECT_FALSE(ProxySettings().proxyFor("vc.example.test", "443"));
}

TEST(SdkProxyTest, TheProxyUrlWithOrWithoutSchemeAndCredentials) {
  auto p = ProxySettings::parse("proxy.example.test:3128", "").proxy();
  ASSERT_TRUE(p);
  EXPECT_EQ(p->host, "proxy.example.test");
  EXPECT_EQ(p->port, "3128");
  p = ProxySettings::parse("http://us%40er:p%3Ass@[fd00::5]/", "").proxy();
  ASSERT_TRUE(p);
  EXPECT_EQ(p->host, "fd00::5");
  EXPECT_EQ(p->port, "80");
  EXPECT_EQ(p->username, "us@er");
  EXPECT_EQ(p->password, "p:ss");
  EXPECT_EQ(p->origin(), "http://[fd00::5]:80");
}

TEST(SdkProxyTest, UnsupportedOrMalformedProxiesAreRefusedWithoutShowingThePassword) {
  auto message = [](const std::string& proxy, const std::string& no_proxy = "") -> std::string {
    try {
      (void)ProxySettings::parse(proxy, no_proxy);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "accepted";
  };
  EXPECT_THAT(message("socks5://proxy:1080"), HasSubstr("only http://"));
  EXPECT_THAT(message("https://user:hunter2@proxy:3128"), HasSubstr("only http://"));
  EXPECT_THAT(message("https://user:hunter2@proxy:3128"), Not(HasSubstr("hunter2")));
  EXPECT_THAT(message("http://user:hunter2@proxy:port"), HasSubstr("invalid port"));
  EXPECT_THAT(message("http://user:hunter2@proxy:port"), Not(HasSubstr("hunter2")));
  EXPECT_THAT(message("http://user:hunter2@"), HasSubstr("names no host"));
  EXPECT_THAT(message("http://proxy", "10.0.0.0/33"), HasSubstr("CIDR"));
  EXPECT_THAT(message("http://proxy", "host:abc"), HasSubstr("invalid port"));
}

TEST(SdkProxyTest, NoProxyNamesHostsDomainsAddressesBlocksAndPorts) {
  const auto s = ProxySettings::parse(
      "http://proxy:3128",
      "Internal.Example.Test, .corp.test 10.1.0.0/16,192.0.2.7,fd00::/8 ,[2001:db8::1]:8443,"
      "pve.example.test:8006");
  auto proxied = [&s](const std::string& host, const std::string& port = "443") {
    return s.proxyFor(host, port).has_value();
  };
  // A name: itself and every subdomain, case-insensitively, a trailing dot ignored.
  EXPECT_FALSE(proxied("internal.example.test"));
  EXPECT_FALSE(proxied("vc.INTERNAL.example.test."));
  EXPECT_TRUE(proxied("notinternal.example.test"));
  // A leading dot: only the subdomains.
  EXPECT_FALSE(proxied("vc.corp.test"));
  EXPECT_TRUE(proxied("corp.test"));
  // Addresses and blocks, IPv4 and IPv6; a name is never matched against a block.
  EXPECT_FALSE(proxied("10.1.200.3"));
  EXPECT_TRUE(proxied("10.2.0.1"));
  EXPECT_FALSE(proxied("192.0.2.7"));
  EXPECT_TRUE(proxied("192.0.2.8"));
  EXPECT_FALSE(proxied("fd12:3456::1"));
  EXPECT_TRUE(proxied("fe80::1"));
  // A port limits an entry to it.
  EXPECT_FALSE(proxied("2001:db8::1", "8443"));
  EXPECT_TRUE(proxied("2001:db8::1", "443"));
  EXPECT_FALSE(proxied("pve.example.test", "8006"));
  EXPECT_TRUE(proxied("pve.example.test", "443"));
  // Loopback is proxied unless named (the list is the whole rule).
  EXPECT_TRUE(proxied("127.0.0.1"));
  EXPECT_TRUE(proxied("localhost"));
}

TEST(SdkProxyTest, AStarBypassesEverything) {
  const auto s = ProxySettings::parse("http://proxy:3128", "example.test,*");
  EXPECT_FALSE(s.proxyFor("anything.test", "443"));
  EXPECT_FALSE(s.proxyFor("10.0.0.1", "443"));
}

TEST(SdkProxyTest, TheEnvironmentUpperCaseFirstThenLowerCase) {
  banlieue::testing::ScopedEnv env;
  env.set("HTTPS_PROXY", "http://upper:1").set("https_proxy", "http://lower:2");
  env.set("NO_PROXY", std::nullopt).set("no_proxy", "skip.test");
  auto s = ProxySettings::fromEnvironment();
  ASSERT_TRUE(s.proxy());
  EXPECT_EQ(s.proxy()->host, "upper");
  EXPECT_FALSE(s.proxyFor("skip.test", "443"));
  env.set("HTTPS_PROXY", "");
  s = ProxySettings::fromEnvironment();
  ASSERT_TRUE(s.proxy());
  EXPECT_EQ(s.proxy()->host, "lower");
  // HTTP_PROXY is for plain http, which plugins do not speak: it is not read.
  env.set("https_proxy", std::nullopt).set("HTTP_PROXY", "http://plain:3");
  EXPECT_FALSE(ProxySettings::fromEnvironment().proxy());
}

}  // namespace
}  // namespace banlieue::sdk::https
