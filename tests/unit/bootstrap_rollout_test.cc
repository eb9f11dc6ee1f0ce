// `banlieue bootstrap operator` waits for its Deployments (issue #22): a rollout's state read
// as `kubectl rollout status` reads it, and the wait over a scripted list and watch.
#include "host/roles/bootstrap/rollout.h"

#include <banlieue/sdk/json.h>
#include <gtest/gtest.h>

#include <deque>
#include <sstream>

namespace banlieue::roles::bootstrap {
namespace {

namespace json = sdk::json;

struct Shape {
  int generation = 1;
  int observed = 1;
  int replicas = 1;         // spec
  int status_replicas = 1;  // pods, old and new
  int updated = 1;
  int ready = 0;
  int available = 0;
  std::string conditions =
      R"([{"type":"Available","status":"False","reason":"MinimumReplicasUnavailable",)"
      R"("message":"Deployment does not have minimum availability."},)"
      R"({"type":"Progressing","status":"True","reason":"ReplicaSetUpdated"}])";
};

std::string deploymentJson(const Shape& s) {
  return R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"banlieue-controller",)"
         R"("namespace":"banlieue-system","generation":)" +
         std::to_string(s.generation) + R"(},"spec":{"replicas":)" + std::to_string(s.replicas) +
         R"(,"selector":{"matchLabels":{"app.kubernetes.io/component":"controller"}}},)"
         R"("status":{"observedGeneration":)" +
         std::to_string(s.observed) + R"(,"replicas":)" + std::to_string(s.status_replicas) +
         R"(,"updatedReplicas":)" + std::to_string(s.updated) + R"(,"readyReplicas":)" +
         std::to_string(s.ready) + R"(,"availableReplicas":)" + std::to_string(s.available) +
         R"(,"conditions":)" + s.conditions + "}}";
}

RolloutStatus statusOf(const Shape& s) {
  auto doc = json::parse(deploymentJson(s), "deployment");
  return rolloutStatus(doc);
}

TEST(BootstrapRolloutTest, AStartingDeploymentIsWaitedForAndSaysWhyItIsNotReady) {
  auto s = statusOf({});
  EXPECT_FALSE(s.done);
  EXPECT_FALSE(s.failed);
  EXPECT_EQ(s.progress, "0/1 ready");
  EXPECT_EQ(s.unready,
            "Available=False (MinimumReplicasUnavailable: Deployment does not have minimum "
            "availability.)");
}

TEST(BootstrapRolloutTest, ARolledOutDeploymentIsDone) {
  auto s = statusOf(
      {.ready = 1, .available = 1, .conditions = R"([{"type":"Available","status":"True"}])"});
  EXPECT_TRUE(s.done);
  EXPECT_EQ(s.progress, "1/1 ready");
  EXPECT_EQ(s.unready, "");
}

// Available while its old pod still serves is not rolled out (found by the e2e flows).
TEST(BootstrapRolloutTest, OldReplicasOrANewGenerationAreNotDone) {
  auto old = statusOf({.status_replicas = 2, .updated = 1, .ready = 1, .available = 1});
  EXPECT_FALSE(old.done);
  EXPECT_EQ(old.progress, "1/1 ready, 1 old replica pending termination");
  auto updating = statusOf({.updated = 0, .ready = 1, .available = 1});
  EXPECT_FALSE(updating.done);
  EXPECT_EQ(updating.progress, "1/1 ready, 0/1 updated, 1 old replica pending termination");
  auto unobserved = statusOf({.generation = 2, .observed = 1, .ready = 1, .available = 1});
  EXPECT_FALSE(unobserved.done);
  EXPECT_EQ(unobserved.progress, "spec change not yet observed");
}

TEST(BootstrapRolloutTest, ProgressDeadlineExceededFails) {
  auto s = statusOf({.conditions = R"([{"type":"Progressing","status":"False",)"
                                   R"("reason":"ProgressDeadlineExceeded",)"
                                   R"("message":"ReplicaSet has timed out progressing."}])"});
  EXPECT_TRUE(s.failed);
  EXPECT_FALSE(s.done);
}

TEST(BootstrapRolloutTest, DeploymentsOfKeepsOrderAndSkipsOtherKinds) {
  std::vector<rapidjson::Document> objects;
  objects.push_back(json::parse(R"({"kind":"Namespace","metadata":{"name":"x"}})", "o"));
  objects.push_back(
      json::parse(R"({"kind":"Deployment","metadata":{"name":"b","namespace":"ns"}})", "o"));
  objects.push_back(
      json::parse(R"({"kind":"Deployment","metadata":{"name":"a","namespace":"ns"}})", "o"));
  auto refs = deploymentsOf(objects);
  ASSERT_EQ(refs.size(), 2u);
  EXPECT_EQ(refs[0].display(), "ns/b");
  EXPECT_EQ(refs[1].display(), "ns/a");
}

// Lists answer the current Deployment (and a pod); a watch delivers the scripted objects.
class ScriptedClient final : public kube::KubeClient {
 public:
  std::string current;
  std::deque<std::string> watch_events;  // MODIFIED objects, one watch request delivers all
  std::string pods = R"({"metadata":{},"items":[]})";
  std::vector<std::string> field_selectors;
  int watches = 0;

  StatusOr<rapidjson::Document> list(const kube::ResourceType& type, const std::string&,
                                     const kube::ListOptions& options) override {
    if (type.plural == "pods") return json::parse(pods, "pods");
    field_selectors.push_back(options.field_selector);
    return json::parse(R"({"metadata":{"resourceVersion":"7"},"items":[)" + current + "]}", "list");
  }
  Status watch(const kube::ResourceType&, const std::string&, const kube::WatchOptions& options,
               const std::function<bool(kube::WatchEvent&)>& on_event,
               const std::atomic<bool>*) override {
    ++watches;
    if (options.resource_version != "7") return error(Code::kInvalidArgument, "Bad", "rv");
    while (!watch_events.empty()) {
      kube::WatchEvent event{"MODIFIED", json::parse(watch_events.front(), "event")};
      current = watch_events.front();
      watch_events.pop_front();
      if (!on_event(event)) break;
    }
    return Status::ok();
  }

  StatusOr<rapidjson::Document> get(const kube::ResourceType&, const std::string&,
                                    const std::string&, const std::string&) override {
    return unused();
  }
  StatusOr<rapidjson::Document> create(const kube::ResourceType&, const std::string&,
                                       const std::string&) override {
    return unused();
  }
  StatusOr<rapidjson::Document> update(const kube::ResourceType&, const std::string&,
                                       const std::string&, const std::string&,
                                       const std::string&) override {
    return unused();
  }
  StatusOr<rapidjson::Document> patch(const kube::ResourceType&, const std::string&,
                                      const std::string&, kube::PatchType, const std::string&,
                                      const std::string&) override {
    return unused();
  }
  StatusOr<rapidjson::Document> apply(const kube::ResourceType&, const std::string&,
                                      const std::string&, const std::string&,
                                      const kube::ApplyOptions&) override {
    return unused();
  }
  Status remove(const kube::ResourceType&, const std::string&, const std::string&,
                const kube::DeleteOptions&) override {
    return unused();
  }

 private:
  static Status unused() { return error(Code::kUnimplemented, "Unused", "not scripted"); }
};

const std::vector<DeploymentRef> kController = {{"banlieue-system", "banlieue-controller"}};

TEST(BootstrapRolloutTest, WaitsThroughTheWatchAndPrintsEachStep) {
  ScriptedClient client;
  client.current = deploymentJson({});
  client.watch_events = {
      deploymentJson({.ready = 0}),  // no change: no line
      deploymentJson(
          {.ready = 1, .available = 1, .conditions = R"([{"type":"Available","status":"True"}])"}),
  };
  std::ostringstream out;
  auto status = waitForRollouts(client, kController, std::chrono::seconds(60), out);
  EXPECT_TRUE(status.isOk()) << status.message();
  EXPECT_EQ(out.str(),
            "waiting for deployment banlieue-system/banlieue-controller: 0/1 ready\n"
            "deployment banlieue-system/banlieue-controller rolled out: 1/1 ready\n");
  EXPECT_EQ(client.watches, 1);
  ASSERT_FALSE(client.field_selectors.empty());
  EXPECT_EQ(client.field_selectors[0], "metadata.name=banlieue-controller");
}

TEST(BootstrapRolloutTest, ATimeoutNamesTheDeploymentItsConditionAndItsPodsTrouble) {
  ScriptedClient client;
  client.current = deploymentJson({});
  client.pods = R"({"items":[{"metadata":{"name":"banlieue-controller-5d8f"},"status":{)"
                R"("phase":"Pending","containerStatuses":[{"name":"controller","ready":false,)"
                R"("state":{"waiting":{"reason":"ErrImagePull",)"
                R"("message":"pull access denied for nope"}}}]}}]})";
  std::ostringstream out;
  auto status = waitForRollouts(client, kController, std::chrono::seconds(0), out);
  ASSERT_FALSE(status.isOk());
  EXPECT_EQ(status.code(), Code::kDeadlineExceeded);
  EXPECT_EQ(status.reason(), "RolloutTimeout");
  EXPECT_EQ(status.message(),
            "deployment banlieue-system/banlieue-controller did not roll out within 0s: 0/1 "
            "ready; Available=False (MinimumReplicasUnavailable: Deployment does not have "
            "minimum availability.); pod banlieue-controller-5d8f: container controller "
            "waiting: ErrImagePull (pull access denied for nope)");
}

TEST(BootstrapRolloutTest, ProgressDeadlineExceededEndsTheWaitAtOnce) {
  ScriptedClient client;
  client.current = deploymentJson({});
  client.watch_events = {deploymentJson(
      {.conditions = R"([{"type":"Progressing","status":"False",)"
                     R"("reason":"ProgressDeadlineExceeded","message":"timed out"}])"})};
  std::ostringstream out;
  auto status = waitForRollouts(client, kController, std::chrono::seconds(60), out);
  ASSERT_FALSE(status.isOk());
  EXPECT_EQ(status.code(), Code::kFailedPrecondition);
  EXPECT_EQ(status.reason(), "ProgressDeadlineExceeded");
  EXPECT_NE(status.message().find("banlieue-system/banlieue-controller"), std::string::npos)
      << status.message();
}

TEST(BootstrapRolloutTest, AMissingDeploymentIsNotFound) {
  ScriptedClient client;
  std::ostringstream out;
  auto status = waitForRollouts(client, kController, std::chrono::seconds(60), out);
  EXPECT_EQ(status.code(), Code::kNotFound);
  EXPECT_NE(status.message().find("banlieue-system/banlieue-controller"), std::string::npos);
}

}  // namespace
}  // namespace banlieue::roles::bootstrap
