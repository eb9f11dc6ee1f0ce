#include "host/runtime/object_helpers.h"
#include "host/kube/api_error.h"
#include "tests/support/fake_kube_client.h"

#include <banlieue/sdk/json.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace banlieue::runtime {
namespace {

namespace json = sdk::json;
using testing::FakeKubeClient;

TEST(ConditionsTest, TransitionTimeMovesOnlyWhenTheStatusChanges) {
  rapidjson::Document status(rapidjson::kObjectType);
  auto& a = status.GetAllocator();
  rapidjson::Value conditions(rapidjson::kArrayType);
  Condition ready{"Ready", "False", "Provisioning", "cloning", 1};
  EXPECT_TRUE(setCondition(conditions, a, ready, "2026-11-29T10:00:00Z"));
  EXPECT_FALSE(setCondition(conditions, a, ready, "2026-11-29T10:01:00Z"))
      << "identical: nothing to write";
  ready.message = "powering on";
  EXPECT_TRUE(setCondition(conditions, a, ready, "2026-11-29T10:02:00Z"));
  EXPECT_EQ(json::stringOr(&conditions[0], "lastTransitionTime"), "2026-11-29T10:00:00Z")
      << "same status";
  ready = {"Ready", "True", "Provisioned", "running", 2};
  EXPECT_TRUE(setCondition(conditions, a, ready, "2026-11-29T10:03:00Z"));
  EXPECT_EQ(json::stringOr(&conditions[0], "lastTransitionTime"), "2026-11-29T10:03:00Z");
  EXPECT_EQ(json::integer(&conditions[0], "observedGeneration"), 2);
  EXPECT_TRUE(
      setCondition(conditions, a, {"Paused", "False", "NotPaused", "", 2}, "2026-11-29T10:04:00Z"));
  ASSERT_EQ(conditions.Size(), 2u);
  EXPECT_EQ(json::stringOr(&conditions[0], "status"), "True") << "other conditions untouched";
}

class FinalizerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(
        client_
            .create(kube::resources::kConfigMap, "ns",
                    R"({"metadata":{"name":"vm","namespace":"ns","finalizers":["other.io/keep"]}})")
            .ok());
  }
  std::vector<std::string> finalizers() {
    auto o = client_.get(kube::resources::kConfigMap, "ns", "vm", "");
    std::vector<std::string> out;
    if (!o.ok()) return out;
    if (const auto* list = json::find(&*o, "metadata.finalizers"); list && list->IsArray()) {
      for (const auto& f : list->GetArray()) out.emplace_back(f.GetString());
    }
    return out;
  }
  FakeKubeClient client_;
};

TEST_F(FinalizerTest, AddAndRemoveLeaveOtherFinalizersAlone) {
  ASSERT_TRUE(
      addFinalizer(client_, kube::resources::kConfigMap, "ns", "vm", "banlieue.io/vm").isOk());
  ASSERT_TRUE(
      addFinalizer(client_, kube::resources::kConfigMap, "ns", "vm", "banlieue.io/vm").isOk());
  EXPECT_THAT(finalizers(), ::testing::ElementsAre("other.io/keep", "banlieue.io/vm"))
      << "added once";
  ASSERT_TRUE(
      removeFinalizer(client_, kube::resources::kConfigMap, "ns", "vm", "banlieue.io/vm").isOk());
  EXPECT_THAT(finalizers(), ::testing::ElementsAre("other.io/keep"));
  EXPECT_TRUE(
      removeFinalizer(client_, kube::resources::kConfigMap, "ns", "gone", "banlieue.io/vm").isOk())
      << "an object that no longer exists has no finalizer to remove";
}

TEST_F(FinalizerTest, AConcurrentWriterIsNotClobbered) {
  bool raced = false;
  client_.failNext([&](const std::string& verb, const std::string&) {
    if (verb == "patch" && !raced) {
      raced = true;
      client_.failNext(nullptr);
      // Another controller adds its finalizer between our read and our write.
      EXPECT_TRUE(
          addFinalizer(client_, kube::resources::kConfigMap, "ns", "vm", "third.io/late").isOk());
    }
    return Status::ok();
  });
  ASSERT_TRUE(
      addFinalizer(client_, kube::resources::kConfigMap, "ns", "vm", "banlieue.io/vm").isOk());
  EXPECT_TRUE(raced);
  EXPECT_THAT(finalizers(),
              ::testing::UnorderedElementsAre("other.io/keep", "third.io/late", "banlieue.io/vm"));
}

// Every request the fake serves from now on, by verb.
void recordRequests(FakeKubeClient& client, std::vector<std::string>& verbs) {
  client.failNext([&verbs](const std::string& verb, const std::string&) {
    verbs.push_back(verb);
    return Status::ok();
  });
}

TEST_F(FinalizerTest, AnUpToDateCachedCopyCostsOnePatchAndNoRead) {
  auto cached = client_.get(kube::resources::kConfigMap, "ns", "vm", "");
  ASSERT_TRUE(cached.ok());
  std::vector<std::string> verbs;
  recordRequests(client_, verbs);
  ASSERT_TRUE(addFinalizer(client_, kube::resources::kConfigMap, *cached, "banlieue.io/vm").isOk());
  EXPECT_THAT(verbs, ::testing::ElementsAre("patch"));
  client_.failNext(nullptr);
  EXPECT_THAT(finalizers(), ::testing::ElementsAre("other.io/keep", "banlieue.io/vm"));

  auto with = client_.get(kube::resources::kConfigMap, "ns", "vm", "");
  ASSERT_TRUE(with.ok());
  verbs.clear();
  recordRequests(client_, verbs);
  ASSERT_TRUE(addFinalizer(client_, kube::resources::kConfigMap, *with, "banlieue.io/vm").isOk());
  EXPECT_THAT(verbs, ::testing::IsEmpty()) << "already there: nothing to write";
  ASSERT_TRUE(
      removeFinalizer(client_, kube::resources::kConfigMap, *with, "banlieue.io/vm").isOk());
  EXPECT_THAT(verbs, ::testing::ElementsAre("patch"));
  client_.failNext(nullptr);
  EXPECT_THAT(finalizers(), ::testing::ElementsAre("other.io/keep"));
}

TEST_F(FinalizerTest, AStaleCachedCopyIsRereadAndAnotherWritersFinalizerKept) {
  auto stale = client_.get(kube::resources::kConfigMap, "ns", "vm", "");
  ASSERT_TRUE(stale.ok());
  // Another controller adds its finalizer after our cache took its copy.
  ASSERT_TRUE(
      addFinalizer(client_, kube::resources::kConfigMap, "ns", "vm", "third.io/late").isOk());
  std::vector<std::string> verbs;
  recordRequests(client_, verbs);
  ASSERT_TRUE(addFinalizer(client_, kube::resources::kConfigMap, *stale, "banlieue.io/vm").isOk());
  EXPECT_THAT(verbs, ::testing::ElementsAre("patch", "get", "patch"))
      << "the guarded patch conflicts, then a read and a second patch";
  client_.failNext(nullptr);
  EXPECT_THAT(finalizers(),
              ::testing::ElementsAre("other.io/keep", "third.io/late", "banlieue.io/vm"));

  // Removal from a stale copy must keep the other writer's finalizer too.
  auto before_third_leaves = client_.get(kube::resources::kConfigMap, "ns", "vm", "");
  ASSERT_TRUE(before_third_leaves.ok());
  ASSERT_TRUE(
      removeFinalizer(client_, kube::resources::kConfigMap, "ns", "vm", "other.io/keep").isOk());
  ASSERT_TRUE(
      removeFinalizer(client_, kube::resources::kConfigMap, *before_third_leaves, "banlieue.io/vm")
          .isOk());
  EXPECT_THAT(finalizers(), ::testing::ElementsAre("third.io/late"));
}

TEST_F(FinalizerTest, ADeletingObjectGetsNoNewFinalizer) {
  auto stale = client_.get(kube::resources::kConfigMap, "ns", "vm", "");
  ASSERT_TRUE(stale.ok());
  ASSERT_TRUE(client_
                  .patch(kube::resources::kConfigMap, "ns", "vm", kube::PatchType::kMerge,
                         R"({"metadata":{"deletionTimestamp":"2026-11-29T10:00:00Z"}})", "")
                  .ok());
  auto deleting = client_.get(kube::resources::kConfigMap, "ns", "vm", "");
  ASSERT_TRUE(deleting.ok());

  std::vector<std::string> verbs;
  recordRequests(client_, verbs);
  auto s = addFinalizer(client_, kube::resources::kConfigMap, *deleting, "banlieue.io/vm");
  EXPECT_EQ(s.reason(), "ObjectDeleting");
  EXPECT_THAT(s.message(), ::testing::HasSubstr("ns/vm"));
  EXPECT_THAT(verbs, ::testing::IsEmpty()) << "the cached copy already says so";

  s = addFinalizer(client_, kube::resources::kConfigMap, *stale, "banlieue.io/vm");
  EXPECT_EQ(s.reason(), "ObjectDeleting") << "a deletion that began after the cache's copy";
  EXPECT_THAT(verbs, ::testing::ElementsAre("patch", "get"));
  client_.failNext(nullptr);
  EXPECT_THAT(finalizers(), ::testing::ElementsAre("other.io/keep"));
  EXPECT_TRUE(
      removeFinalizer(client_, kube::resources::kConfigMap, *deleting, "other.io/keep").isOk())
      << "removal from a deleting object is what deletion waits for";
  EXPECT_THAT(finalizers(), ::testing::IsEmpty());
}

TEST_F(FinalizerTest, ACopyOfAnObjectGoneSinceIsNotAnError) {
  auto cached = client_.get(kube::resources::kConfigMap, "ns", "vm", "");
  ASSERT_TRUE(cached.ok());
  ASSERT_TRUE(client_.remove(kube::resources::kConfigMap, "ns", "vm", {}).isOk());
  EXPECT_TRUE(
      removeFinalizer(client_, kube::resources::kConfigMap, *cached, "other.io/keep").isOk());
  EXPECT_TRUE(kube::isNotFound(
      addFinalizer(client_, kube::resources::kConfigMap, *cached, "banlieue.io/vm")))
      << "adding to an object that is gone says so";
}

rapidjson::Document parsed(const char* text) {
  return json::parse(text, "test object");
}

TEST(OwnerReferenceTest, ControllerReferenceBlocksOwnerDeletionAndIsKeyedByUid) {
  auto owner = parsed(R"({"apiVersion":"banlieue.io/v1alpha1","kind":"Provider",
      "metadata":{"name":"lab","namespace":"team-a","uid":"u-1"}})");
  auto owned = parsed(R"({"metadata":{"name":"lab-sa","namespace":"team-a"}})");
  ASSERT_TRUE(setOwnerReference(owned, owned.GetAllocator(), owner).isOk());
  ASSERT_TRUE(setOwnerReference(owned, owned.GetAllocator(), owner).isOk()) << "idempotent";
  const auto* refs = json::find(&owned, "metadata.ownerReferences");
  ASSERT_EQ(refs->Size(), 1u);
  const auto* ref = controllerReference(owned);
  ASSERT_NE(ref, nullptr);
  EXPECT_EQ(json::stringOr(ref, "uid"), "u-1");
  EXPECT_EQ(json::stringOr(ref, "kind"), "Provider");
  EXPECT_EQ(json::stringOr(ref, "apiVersion"), "banlieue.io/v1alpha1");
  EXPECT_TRUE(json::boolean(ref, "blockOwnerDeletion"));
}

TEST(OwnerReferenceTest, RefusesWhatTheGarbageCollectorWouldIgnore) {
  auto owner = parsed(R"({"apiVersion":"banlieue.io/v1alpha1","kind":"Provider",
      "metadata":{"name":"lab","namespace":"team-a","uid":"u-1"}})");
  auto elsewhere = parsed(R"({"metadata":{"name":"x","namespace":"team-b"}})");
  auto s = setOwnerReference(elsewhere, elsewhere.GetAllocator(), owner);
  EXPECT_EQ(s.reason(), "CrossNamespaceOwner");
  EXPECT_THAT(s.message(), ::testing::HasSubstr("team-b"));

  auto no_uid = parsed(R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}})");
  auto owned = parsed(R"({"metadata":{"name":"x","namespace":"team-a"}})");
  EXPECT_EQ(setOwnerReference(owned, owned.GetAllocator(), no_uid).reason(), "InvalidOwner");

  auto other = parsed(R"({"apiVersion":"banlieue.io/v1alpha1","kind":"Provider",
      "metadata":{"name":"other","namespace":"team-a","uid":"u-2"}})");
  ASSERT_TRUE(setOwnerReference(owned, owned.GetAllocator(), owner).isOk());
  EXPECT_EQ(setOwnerReference(owned, owned.GetAllocator(), other).reason(), "AlreadyControlled");
  EXPECT_TRUE(setOwnerReference(owned, owned.GetAllocator(), other, /*controller=*/false).isOk())
      << "a second, non-controller owner is fine";
  EXPECT_EQ(json::find(&owned, "metadata.ownerReferences")->Size(), 2u);

  auto cluster_owner = parsed(R"({"apiVersion":"banlieue.io/v1alpha1","kind":"ProviderClass",
      "metadata":{"name":"libvirt","uid":"u-3"}})");
  auto ns_object = parsed(R"({"metadata":{"name":"y","namespace":"team-a"}})");
  EXPECT_TRUE(setOwnerReference(ns_object, ns_object.GetAllocator(), cluster_owner).isOk())
      << "cluster-scoped owners may own namespaced objects";
}

}  // namespace
}  // namespace banlieue::runtime
