// The EventRecorder against the real apiserver: the events it writes are accepted for both a
// namespaced and a cluster-scoped object (a VMImage, a Provider class, a Namespace), where the
// apiserver's rule for the Event's own namespace differs by version. The unit test
// (tests/unit/events_test.cc) covers series and rate limits with a fake client; only the real
// apiserver can say whether an Event is valid.
#include "host/kube/client.h"
#include "host/runtime/events.h"
#include "tests/support/local_cluster.h"

#include <banlieue/sdk/json.h>

#include <gtest/gtest.h>

namespace banlieue::runtime {
namespace {

using testing::LocalCluster;
namespace json = sdk::json;

// The Events that name `uid` in `regarding`, in every namespace.
std::vector<std::string> eventsAbout(kube::KubeClient& client, const std::string& uid) {
  std::vector<std::string> reasons;
  auto list = client.list(kube::resources::kEvent, "", {.field_selector = "regarding.uid=" + uid});
  if (!list.ok()) return reasons;
  const auto* items = json::find(&*list, "items");
  if (items == nullptr || !items->IsArray()) return reasons;
  for (const auto& item : items->GetArray()) reasons.push_back(json::stringOr(&item, "reason"));
  return reasons;
}

TEST(EventRecorderIntegrationTest, EventsAboutNamespacedAndClusterScopedObjectsAreWritten) {
  auto& cluster = LocalCluster::shared();
  LocalCluster::TestNamespace ns(cluster);
  auto client = cluster.client();
  ASSERT_NE(client, nullptr);

  auto configmap = client->create(
      kube::resources::kConfigMap, ns.name(),
      R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"subject","namespace":")" +
          ns.name() + R"("}})");
  ASSERT_TRUE(configmap.ok()) << configmap.status().message();
  auto namespace_object = client->get(kube::resources::kNamespace, "", ns.name());
  ASSERT_TRUE(namespace_object.ok()) << namespace_object.status().message();
  // Namespace is cluster-scoped, like VMImage and ProviderClass, and always there.
  namespace_object->AddMember("kind", "Namespace", namespace_object->GetAllocator());

  {
    EventRecorder recorder(*client, {"banlieue.io/test", "event-recorder-test"});
    recorder.normal(*configmap, "NamespacedThing", "Test", "about a ConfigMap");
    recorder.warning(*namespace_object, "ClusterScopedThing", "Test", "about a Namespace");
    recorder.flush();
  }

  const std::string configmap_uid = json::stringOr(&*configmap, "metadata.uid");
  const std::string namespace_uid = json::stringOr(&*namespace_object, "metadata.uid");
  EXPECT_TRUE(LocalCluster::eventually([&] {
    return eventsAbout(*client, configmap_uid) == std::vector<std::string>{"NamespacedThing"};
  })) << "an Event about a namespaced object lives in the object's namespace";
  EXPECT_TRUE(LocalCluster::eventually([&] {
    return eventsAbout(*client, namespace_uid) == std::vector<std::string>{"ClusterScopedThing"};
  })) << "the apiserver accepts the Event about a cluster-scoped object";
}

}  // namespace
}  // namespace banlieue::runtime
