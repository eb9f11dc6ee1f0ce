// The pure parsing seams the fuzz targets (fuzz/) drive: the watch stream's line framing, the
// exec credential reader, the kubeconfig exec policy, provider.json from text, and the health
// endpoints' routing. Each must behave as the code it was cut out of.
#include "host/api/codec.h"
#include "host/kube/api_error.h"
#include "host/kube/config.h"
#include "host/kube/line_framer.h"
#include "host/plugin/manifest.h"
#include "host/plugin/payload_schemas.h"
#include "host/runtime/health_server.h"
#include "plugins/proxmox/src/pve_client.h"

#include <banlieue/sdk/json.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace banlieue {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<std::string> frame(kube::LineFramer& framer, const std::vector<std::string>& chunks,
                               std::vector<kube::LineFramer::Result>* results = nullptr) {
  std::vector<std::string> lines;
  auto collect = [&](std::string_view line) {
    lines.emplace_back(line);
    return true;
  };
  for (const auto& chunk : chunks) {
    auto result = framer.feed(chunk, collect);
    if (results != nullptr) results->push_back(result);
  }
  framer.finish(collect);
  return lines;
}

TEST(LineFramerTest, HandsOverLinesWhateverTheChunking) {
  kube::LineFramer whole(1024);
  EXPECT_THAT(frame(whole, {"{\"a\":1}\n\n{\"b\":2}\ntail"}),
              ElementsAre("{\"a\":1}", "", "{\"b\":2}", "tail"));
  kube::LineFramer bytewise(1024);
  std::vector<std::string> bytes;
  for (char c : std::string("{\"a\":1}\n\n{\"b\":2}\ntail")) bytes.emplace_back(1, c);
  EXPECT_THAT(frame(bytewise, bytes), ElementsAre("{\"a\":1}", "", "{\"b\":2}", "tail"));
}

TEST(LineFramerTest, StopsWhenTheCallerDoesAndCutsALineOverTheLimit) {
  kube::LineFramer framer(8);
  int seen = 0;
  EXPECT_EQ(framer.feed("a\nb\nc\n", [&](std::string_view) { return ++seen < 2; }),
            kube::LineFramer::Result::kStopped);
  EXPECT_EQ(seen, 2);
  kube::LineFramer bounded(8);
  auto ignore = [](std::string_view) { return true; };
  EXPECT_EQ(bounded.feed("12345678", ignore), kube::LineFramer::Result::kMore);
  EXPECT_EQ(bounded.feed("9", ignore), kube::LineFramer::Result::kTooLong);
}

TEST(ExecCredentialTest, ReadsATokenOrACertificateAndRefusesAnythingElse) {
  auto token = kube::parseExecCredential(
      R"({"kind":"ExecCredential","status":{"token":"t","expirationTimestamp":"2026-01-01T00:00:00Z"}})",
      "p");
  ASSERT_TRUE(token.ok()) << token.status().message();
  EXPECT_EQ(token->token, "t");
  EXPECT_TRUE(token->expires.has_value());
  for (const char* bad : {"", "{}", R"({"kind":"ExecCredential","status":{}})", "[1]"}) {
    auto refused = kube::parseExecCredential(bad, "p: 'cmd'");
    ASSERT_FALSE(refused.ok()) << bad;
    EXPECT_EQ(refused.status().code(), Code::kUnauthenticated);
    EXPECT_THAT(refused.status().message(), HasSubstr("p: 'cmd'"));
  }
}

TEST(KubeconfigExecPolicyTest, DeniedExecPluginsRunNothing) {
  auto dir = std::filesystem::path(::testing::TempDir()) / "exec-policy";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  auto marker = dir / "ran";
  std::ofstream(dir / "config") << "current-context: c\n"
                                   "clusters: [{name: k, cluster: {server: https://k.test}}]\n"
                                   "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
                                   "users:\n"
                                   "- name: u\n"
                                   "  user:\n"
                                   "    exec:\n"
                                   "      command: /bin/touch\n"
                                   "      args: ["
                                << marker.string() << "]\n";
  kube::KubeconfigOptions options{.files = {dir / "config"}};
  options.allow_exec_plugins = false;
  auto denied = kube::loadKubeconfig(options);
  ASSERT_FALSE(denied.ok());
  EXPECT_EQ(denied.status().reason(), "ExecPluginDenied");
  EXPECT_FALSE(std::filesystem::exists(marker));
  std::filesystem::remove_all(dir);
}

TEST(ManifestTextTest, ParsesWhatReadManifestReads) {
  auto m = plugin::parseManifest(
      R"({"manifestVersion":1,"name":"x","library":"libx.so","abi":{"major":1},
          "providerVersion":"1","infrastructure":[{"group":"g","version":"v","kind":"K"}]})",
      "/plugins/x");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->libraryPath(), "/plugins/x/libx.so");
  auto escape = plugin::parseManifest(
      R"({"manifestVersion":1,"name":"x","library":"../libx.so","abi":{"major":1},
          "providerVersion":"1","infrastructure":[]})",
      "/plugins/x");
  ASSERT_FALSE(escape.ok());
  EXPECT_THAT(escape.status().message(), HasSubstr("/plugins/x/provider.json"));
}

TEST(HealthRouteTest, RoutesByMethodAndPath) {
  using Endpoint = runtime::HealthRoute::Endpoint;
  EXPECT_EQ(runtime::routeHealthRequest(true, "/healthz").endpoint, Endpoint::kLiveness);
  EXPECT_EQ(runtime::routeHealthRequest(true, "/livez").endpoint, Endpoint::kLiveness);
  auto ready = runtime::routeHealthRequest(true, "/readyz?verbose");
  EXPECT_EQ(ready.endpoint, Endpoint::kReadiness);
  EXPECT_TRUE(ready.verbose);
  EXPECT_EQ(runtime::routeHealthRequest(true, "/metrics").endpoint, Endpoint::kMetrics);
  EXPECT_EQ(runtime::routeHealthRequest(true, "/healthz/x").endpoint, Endpoint::kNotFound);
  EXPECT_EQ(runtime::routeHealthRequest(false, "/healthz").endpoint, Endpoint::kMethodNotAllowed);
}

// A megabyte of '[' overflowed the stack of every RapidJSON reader (found by fuzz/: the
// replays of exec_credential, plugin_reply, api_codec, provider_manifest and proxmox_json
// crashed on it); each now refuses it as invalid JSON.
TEST(DeepNestingTest, EveryJsonReaderRefusesItInsteadOfOverflowingTheStack) {
  const std::string deep = std::string(size_t{1} << 20, '[') + std::string(size_t{1} << 20, ']');
  const std::string wrapped =
      R"({"kind":"ExecCredential","status":{"token":"t","x":)" + deep + "}}";
  EXPECT_TRUE(sdk::json::nestsDeeperThan(deep));
  EXPECT_FALSE(sdk::json::nestsDeeperThan(R"(["[[[[", "\"{{{{"])", 1));
  EXPECT_THROW((void)sdk::json::parse(deep, "deep"), sdk::Error);
  rapidjson::Document doc;
  EXPECT_EQ(api::parseJson(deep, doc).reason(), "InvalidJson");
  EXPECT_EQ(plugin::validatePayload("reconcile.response", deep).reason(), "InvalidJson");
  EXPECT_FALSE(kube::parseExecCredential(wrapped, "p").ok());
  EXPECT_EQ(kube::apiError({.status = 500, .body = deep}, "get").code(), Code::kInternal);

  class Answer final : public proxmox::HttpTransport {
   public:
    explicit Answer(std::string body) : body_(std::move(body)) {}
    proxmox::HttpResponse send(const proxmox::HttpRequest&, std::chrono::milliseconds) override {
      return {.status = 200, .reason = "OK", .body = body_};
    }

   private:
    std::string body_;
  };
  proxmox::PveCredentials credentials;
  credentials.token = "u@pve!t=s";
  proxmox::PveClient client(std::make_unique<Answer>(R"({"data":)" + deep + "}"),
                            proxmox::Endpoint{"pve.test", "8006"}, std::move(credentials));
  EXPECT_THROW(
      (void)client.get("/nodes", std::chrono::steady_clock::now() + std::chrono::seconds(5)),
      proxmox::PveError);
}

}  // namespace
}  // namespace banlieue
