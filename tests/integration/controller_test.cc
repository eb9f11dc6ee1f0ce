// Controllers and their helpers against the real apiserver: every ConfigMap labelled `demo`
// gets an owned companion ConfigMap, applied with server-side apply; deleting the companion
// brings it back (owned-object watch), and repeated reconciles write nothing new. Finalizer
// helpers leave other controllers' finalizers alone.
#include "host/runtime/controller.h"
#include "host/kube/api_error.h"
#include "host/kube/client.h"
#include "host/runtime/informer.h"
#include "host/runtime/object_helpers.h"
#include "tests/support/local_cluster.h"

#include <banlieue/sdk/json.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

namespace banlieue::runtime {
namespace {

using testing::LocalCluster;
namespace json = sdk::json;

class CompanionReconciler final : public Reconciler {
 public:
  CompanionReconciler(kube::KubeClient& client, Informer& cache) : client_(client), cache_(cache) {}

  Result reconcile(const Request& request) override {
    auto owner = cache_.get(request.key());
    if (!owner || json::stringOr(owner.get(), "metadata.labels.role") != "demo")
      return Result::done();
    std::string companion =
        R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":")" + request.name +
        R"(-companion","namespace":")" + request.ns +
        R"(","labels":{"role":"companion"},"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":")" +
        request.name + R"(","uid":")" + json::stringOr(owner.get(), "metadata.uid") +
        R"(","controller":true}]},"data":{"source":")" + request.name + R"("}})";
    auto applied =
        client_.apply(kube::resources::kConfigMap, request.ns, request.name + "-companion",
                      companion, {.field_manager = "banlieue.io/test-controller", .force = true});
    if (!applied.ok()) return Result::retry(applied.status());
    return Result::done();
  }

 private:
  kube::KubeClient& client_;
  Informer& cache_;
};

TEST(ControllerIntegrationTest, OwnedObjectsAreRecreatedAndReconcilesAreIdempotent) {
  auto& cluster = LocalCluster::shared();
  LocalCluster::TestNamespace ns(cluster);
  auto client = cluster.client();
  ASSERT_NE(client, nullptr);

  Informer configmaps(*client, kube::resources::kConfigMap, {.ns = ns.name()});
  CompanionReconciler reconciler(*client, configmaps);
  Controller controller("companion", reconciler);
  controller.watch(configmaps);
  controller.watchOwned(configmaps, "ConfigMap");

  std::atomic<bool> stop{false};
  std::thread informer_thread([&] { configmaps.run(stop); });
  std::thread controller_thread([&] { controller.run(stop); });

  ASSERT_EQ(cluster.kubectl("create configmap web -n " + ns.name()).exit_code, 0);
  ASSERT_EQ(cluster.kubectl("label configmap web role=demo -n " + ns.name()).exit_code, 0);
  auto companion_version = [&] {
    auto c = client->get(kube::resources::kConfigMap, ns.name(), "web-companion");
    return c.ok() ? json::stringOr(&*c, "metadata.resourceVersion") : std::string();
  };
  ASSERT_TRUE(LocalCluster::eventually([&] { return !companion_version().empty(); }));
  std::string version = companion_version();

  // More reconciles of an unchanged owner write nothing. They have run (and their applies
  // returned) once a reconcile started after the enqueues and nothing is queued or in flight.
  const uint64_t reconciles_before = controller.stats().reconciles;
  for (int i = 0; i < 3; ++i) controller.enqueue(ns.name() + "/web");
  ASSERT_TRUE(LocalCluster::eventually([&] {
    if (controller.stats().reconciles <= reconciles_before) return false;
    auto queue = controller.queue().stats();
    return queue.depth == 0 && queue.processing == 0;
  }));
  EXPECT_EQ(companion_version(), version) << "a no-op apply must not bump resourceVersion";

  ASSERT_EQ(cluster.kubectl("delete configmap web-companion -n " + ns.name()).exit_code, 0);
  EXPECT_TRUE(LocalCluster::eventually([&] {
    auto v = companion_version();
    return !v.empty() && v != version;
  })) << "deleting the owned object must bring the owner back to the queue";

  stop = true;
  informer_thread.join();
  controller_thread.join();
  EXPECT_EQ(controller.stats().errors, 0u);
}

}  // namespace
}  // namespace banlieue::runtime

namespace banlieue::runtime {
namespace {

TEST(ObjectHelpersIntegrationTest, FinalizersOfOthersSurviveAndStaleWritesConflict) {
  auto& cluster = LocalCluster::shared();
  LocalCluster::TestNamespace ns(cluster);
  auto client = cluster.client();
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(
      client
          ->create(
              kube::resources::kConfigMap, ns.name(),
              R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"vm","finalizers":["other.io/keep"]}})")
          .ok());
  ASSERT_TRUE(
      addFinalizer(*client, kube::resources::kConfigMap, ns.name(), "vm", "banlieue.io/vm").isOk());
  auto listed =
      cluster.kubectl("get configmap vm -n " + ns.name() + " -o jsonpath='{.metadata.finalizers}'");
  EXPECT_THAT(listed.output, ::testing::HasSubstr("other.io/keep"));
  EXPECT_THAT(listed.output, ::testing::HasSubstr("banlieue.io/vm"));

  // The precondition the helpers rely on: a merge patch carrying a stale resourceVersion is a
  // Conflict on the real server, exactly as FakeKubeClient models it.
  auto stale = client->patch(kube::resources::kConfigMap, ns.name(), "vm", kube::PatchType::kMerge,
                             R"({"metadata":{"resourceVersion":"1","finalizers":[]}})");
  EXPECT_TRUE(kube::isConflict(stale.status())) << stale.status().message();

  ASSERT_TRUE(
      removeFinalizer(*client, kube::resources::kConfigMap, ns.name(), "vm", "banlieue.io/vm")
          .isOk());
  listed =
      cluster.kubectl("get configmap vm -n " + ns.name() + " -o jsonpath='{.metadata.finalizers}'");
  EXPECT_THAT(listed.output, ::testing::HasSubstr("other.io/keep"));
  EXPECT_THAT(listed.output, ::testing::Not(::testing::HasSubstr("banlieue.io/vm")));
  ASSERT_TRUE(
      removeFinalizer(*client, kube::resources::kConfigMap, ns.name(), "vm", "other.io/keep")
          .isOk());
}

TEST(ObjectHelpersIntegrationTest, ACachedCopyGuardsThePatchAgainstLaterWritesAndDeletion) {
  auto& cluster = LocalCluster::shared();
  LocalCluster::TestNamespace ns(cluster);
  auto client = cluster.client();
  ASSERT_NE(client, nullptr);
  auto created = client->create(
      kube::resources::kConfigMap, ns.name(),
      R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"vm","finalizers":["other.io/keep"]}})");
  ASSERT_TRUE(created.ok()) << created.status().message();
  auto finalizers = [&] {
    return cluster
        .kubectl("get configmap vm -n " + ns.name() + " -o jsonpath='{.metadata.finalizers}'")
        .output;
  };

  // An informer's copy taken before another controller added its finalizer.
  ASSERT_TRUE(
      addFinalizer(*client, kube::resources::kConfigMap, ns.name(), "vm", "third.io/late").isOk());
  ASSERT_TRUE(
      addFinalizer(*client, kube::resources::kConfigMap, *created, "banlieue.io/vm").isOk());
  auto listed = finalizers();
  EXPECT_THAT(listed, ::testing::HasSubstr("other.io/keep"));
  EXPECT_THAT(listed, ::testing::HasSubstr("third.io/late"));
  EXPECT_THAT(listed, ::testing::HasSubstr("banlieue.io/vm"));

  // A deletion that began after the copy was taken: no new finalizer.
  auto before_delete = client->get(kube::resources::kConfigMap, ns.name(), "vm");
  ASSERT_TRUE(before_delete.ok());
  ASSERT_TRUE(client->remove(kube::resources::kConfigMap, ns.name(), "vm", {}).isOk());
  auto refused =
      addFinalizer(*client, kube::resources::kConfigMap, *before_delete, "fourth.io/late");
  EXPECT_EQ(refused.reason(), "ObjectDeleting") << refused.message();
  EXPECT_THAT(finalizers(), ::testing::Not(::testing::HasSubstr("fourth.io/late")));

  // Removal from the same stale copy rereads and lets the object go once all are removed.
  for (const char* f : {"banlieue.io/vm", "third.io/late", "other.io/keep"}) {
    ASSERT_TRUE(removeFinalizer(*client, kube::resources::kConfigMap, *before_delete, f).isOk())
        << f;
  }
  auto gone = client->get(kube::resources::kConfigMap, ns.name(), "vm");
  EXPECT_TRUE(kube::isNotFound(gone.status()));
}

}  // namespace
}  // namespace banlieue::runtime
