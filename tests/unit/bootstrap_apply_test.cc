// What `banlieue bootstrap` reports as changed (host/roles/bootstrap/apply.cc): an object its
// apply changed, never one whose status another writer moved meanwhile. A Deployment's status
// moves while its pods start; counting that as bootstrap's change made a rerun right after an
// install say "1 changed" (BootstrapTest.DryRunAndApplyGiveTheSameStateAndRerunsChangeNothing,
// under load on 2026-12-07).
#include "host/roles/bootstrap/apply.h"
#include "tests/support/fake_kube_client.h"

#include <banlieue/sdk/json.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace banlieue::roles::bootstrap {
namespace {

namespace json = sdk::json;

const char* kDeployment = R"({"apiVersion": "apps/v1", "kind": "Deployment",
  "metadata": {"name": "banlieue-controller", "namespace": "banlieue-system"},
  "spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "c", "image": "IMAGE"}]}}}})";

std::string deployment(const std::string& image) {
  std::string text = kDeployment;
  text.replace(text.find("IMAGE"), 5, image);
  return text;
}

std::vector<rapidjson::Document> objects(const std::string& text) {
  std::vector<rapidjson::Document> list;
  list.push_back(json::parse(text, "manifest"));
  return list;
}

class BootstrapApplyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The installed Deployment, whose status the deployment controller has since written.
    auto installed = json::parse(deployment("banlieue:1"), "manifest");
    auto& a = installed.GetAllocator();
    rapidjson::Value status(rapidjson::kObjectType);
    status.AddMember("observedGeneration", 1, a).AddMember("readyReplicas", 1, a);
    installed.AddMember("status", status, a);
    ASSERT_TRUE(
        client_.create(kube::resources::kDeployment, "banlieue-system", json::serialize(installed))
            .ok());
  }
  banlieue::testing::FakeKubeClient client_;
};

TEST_F(BootstrapApplyTest, AnObjectWhoseStatusAloneMovedIsUnchanged) {
  // The fake stores what is applied as a new resourceVersion without the status, as a status
  // write landing between bootstrap's read and its apply moves the resourceVersion.
  auto report = applyAll(client_, objects(deployment("banlieue:1")));
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_EQ(report->applied, 1u);
  EXPECT_EQ(report->changed, 0u);
}

TEST_F(BootstrapApplyTest, AnObjectWhoseSpecTheApplyChangedIsChanged) {
  auto report = applyAll(client_, objects(deployment("banlieue:2")));
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_EQ(report->changed, 1u);
}

TEST_F(BootstrapApplyTest, ANewObjectIsChanged) {
  auto report = applyAll(client_, objects(R"({"apiVersion": "v1", "kind": "ServiceAccount",
      "metadata": {"name": "banlieue-operator", "namespace": "banlieue-system"}})"));
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_EQ(report->changed, 1u);
}

}  // namespace
}  // namespace banlieue::roles::bootstrap
