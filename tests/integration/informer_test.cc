// The informer against the real apiserver: initial list, live updates, handler calls.
#include "host/runtime/informer.h"
#include "host/kube/client.h"
#include "tests/support/local_cluster.h"

#include <banlieue/sdk/json.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

namespace banlieue::runtime {
namespace {

using testing::LocalCluster;
namespace json = sdk::json;

TEST(InformerIntegrationTest, CacheFollowsTheApiServer) {
  auto& cluster = LocalCluster::shared();
  LocalCluster::TestNamespace ns(cluster);
  auto client = cluster.client();
  ASSERT_NE(client, nullptr);
  auto cm = [&](const std::string& name, const std::string& value) {
    return R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":")" + name +
           R"(","namespace":")" + ns.name() + R"("},"data":{"v":")" + value + R"("}})";
  };
  for (const char* name : {"one", "two", "three"}) {
    ASSERT_TRUE(client->create(kube::resources::kConfigMap, ns.name(), cm(name, "0")).ok());
  }

  Informer informer(*client, kube::resources::kConfigMap, {.ns = ns.name(), .page_size = 2});
  std::atomic<int> deletes{0};
  informer.addHandler({nullptr, nullptr, [&](const Object&) { ++deletes; }});
  std::atomic<bool> stop{false};
  std::thread runner([&] { informer.run(stop); });

  EXPECT_TRUE(LocalCluster::eventually([&] { return informer.hasSynced(); }));
  EXPECT_EQ(informer.list().size(), 3u) << "listed in pages of two";
  ASSERT_TRUE(client
                  ->patch(kube::resources::kConfigMap, ns.name(), "two", kube::PatchType::kMerge,
                          R"({"data":{"v":"1"}})")
                  .ok());
  ASSERT_TRUE(client->remove(kube::resources::kConfigMap, ns.name(), "three").isOk());
  ASSERT_TRUE(client->create(kube::resources::kConfigMap, ns.name(), cm("four", "0")).ok());
  EXPECT_TRUE(LocalCluster::eventually([&] {
    auto two = informer.get(ns.name() + "/two");
    return two && json::stringOr(two.get(), "data.v") == "1" && informer.get(ns.name() + "/four") &&
           !informer.get(ns.name() + "/three");
  }));
  EXPECT_EQ(deletes.load(), 1);
  EXPECT_EQ(informer.stats().lists, 1u) << "live changes come from the watch, not from relisting";

  // A stop that did not reach the quiet watch would end it only when the server closes it
  // after the informer's watch timeout: the bound is a fraction of that, not a guess at how
  // fast a loaded machine is.
  const auto watch_timeout = std::chrono::seconds(InformerOptions{}.watch_timeout_seconds);
  auto stopping = std::chrono::steady_clock::now();
  stop = true;
  runner.join();
  EXPECT_LT(std::chrono::steady_clock::now() - stopping, watch_timeout / 4)
      << "a quiet watch must end when the informer is stopped, not at its server timeout";
}

}  // namespace
}  // namespace banlieue::runtime
