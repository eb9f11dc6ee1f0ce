// The provider runtime's import plan (host/roles/provider/image_import_plan.h): which import
// Jobs a built Url VMImage needs per zone, which go, when a failed one is retried, what the
// force-reimport annotation does, and the row the Jobs' results make. Labels: unit;images.
#include "host/roles/images/import_exit.h"
#include "host/roles/images/import_job.h"
#include "host/roles/provider/image_import_plan.h"

#include <banlieue/sdk/json.h>
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <set>

namespace banlieue::roles::provider {
namespace {

namespace json = sdk::json;

constexpr std::time_t kNow = 1800000000;  // 2027-01-15T08:00:00Z

rapidjson::Document parse(const std::string& text) {
  return json::parse(text, "test");
}

class ImportPlanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    domains_ = parse(R"([{"name":"host-a"},{"name":"host-b"}])");
    settings_.backend = "file";
    settings_.container_image = "localhost/banlieue:1.0";
    settings_.plugin_dir = "/usr/lib/banlieue/plugins";
    settings_.job_namespace = "banlieue-imagebuild";
    settings_.plugin_imports = true;
    settings_.image_formats = {"raw", "qcow2"};
    settings_.retry_after = std::chrono::seconds(300);
  }

  ImageRowContext context() const { return {"file", "infra", "fp1", &domains_}; }

  static rapidjson::Document image(const std::string& annotations = "{}",
                                   const std::string& checksum = "sha256:abc") {
    return parse(R"({"apiVersion":"banlieue.io/v1alpha1","kind":"VMImage","metadata":)"
                 R"({"name":"tiny","uid":"img-1","annotations":)" +
                 annotations +
                 R"(},"spec":{"sources":[{"providerClass":"file","kind":"Url","ref":"x"}]},)"
                 R"("status":{"buildArtifact":{"kind":"cloudImage","phase":"Ready",)"
                 R"("osArtifactRef":"tiny-build","osArtifactUid":"osa-1",)"
                 R"("pvcRef":"tiny-build-artifacts","file":"tiny-build.raw","checksum":")" +
                 checksum + R"("}}})");
  }

  // A Job as the API server would hold it: the planned manifest plus a status.
  std::unique_ptr<rapidjson::Document> job(const std::string& manifest, const std::string& created,
                                           const std::string& status = "{}") {
    auto doc = std::make_unique<rapidjson::Document>(parse(manifest));
    auto& a = doc->GetAllocator();
    (*doc)["metadata"].AddMember("creationTimestamp", json::stringValue(created, a), a);
    rapidjson::Document s = parse(status);
    doc->AddMember("status", rapidjson::Value(s, a), a);
    return doc;
  }

  static std::unique_ptr<rapidjson::Document> pod(int exit_code) {
    return std::make_unique<rapidjson::Document>(
        parse(R"({"status":{"containerStatuses":[{"name":"import","state":{"terminated":)"
              R"({"exitCode":)" +
              std::to_string(exit_code) + "}}}]}}"));
  }

  static std::string failedAt(const std::string& when) {
    return R"({"failed":1,"conditions":[{"type":"Failed","status":"True",)"
           R"("reason":"BackoffLimitExceeded","lastTransitionTime":")" +
           when + R"("}]})";
  }
  static constexpr const char* kComplete =
      R"({"succeeded":1,"conditions":[{"type":"Complete","status":"True"}]})";

  static std::string nameOf(const std::string& manifest) {
    auto doc = parse(manifest);
    return json::stringOr(&doc, "metadata.name");
  }

  rapidjson::Document domains_;
  ImportSettings settings_;
};

TEST_F(ImportPlanTest, ABuiltImageGetsOneJobPerZoneAndIsImportingUntilTheyEnd) {
  auto img = image();
  settings_.artifacts_host_root = "/var/lib/artifacts";
  auto plan = planImports(img, context(), settings_, {}, kNow);
  ASSERT_EQ(plan.create.size(), 2u);
  EXPECT_TRUE(plan.remove.empty());
  EXPECT_FALSE(plan.ready);
  EXPECT_EQ(plan.reason, "Importing");
  ASSERT_EQ(plan.zones.size(), 2u);
  EXPECT_EQ(plan.zones[0].name, "host-a");
  EXPECT_EQ(plan.zones[0].reason, "Importing");
  std::set<std::string> zones;
  for (const auto& m : plan.create) {
    auto doc = parse(m);
    EXPECT_EQ(json::stringOr(&doc, "metadata.namespace"), "banlieue-imagebuild");
    zones.insert(doc["metadata"]["annotations"]["banlieue.io/failure-domain"].GetString());
    const auto& spec = doc["spec"]["template"]["spec"];
    EXPECT_EQ(json::stringOr(&spec, "serviceAccountName"), "banlieue-image-import");
    EXPECT_EQ(json::stringOr(&spec["containers"][0], "image"), "localhost/banlieue:1.0");
    // Dev nodes: the artifacts PVC's directory under the host root.
    EXPECT_EQ(json::stringOr(&spec["volumes"][0], "hostPath.path"),
              "/var/lib/artifacts/tiny-build-artifacts");
    EXPECT_EQ(doc["metadata"]["ownerReferences"][0]["uid"].GetString(), std::string("img-1"));
  }
  EXPECT_EQ(zones, (std::set<std::string>{"host-a", "host-b"}));

  // Without a host root the PVC itself is mounted.
  settings_.artifacts_host_root.clear();
  auto pvc_plan = planImports(img, context(), settings_, {}, kNow);
  auto doc = parse(pvc_plan.create[0]);
  EXPECT_EQ(json::stringOr(&doc["spec"]["template"]["spec"]["volumes"][0],
                           "persistentVolumeClaim.claimName"),
            "tiny-build-artifacts");
}

TEST_F(ImportPlanTest, FinishedJobsBecomeZoneRowsAndTheRowSaysWhy) {
  auto img = image();
  auto first = planImports(img, context(), settings_, {}, kNow);
  auto a = job(first.create[0], "2027-01-15T07:00:00Z", kComplete);
  auto b = job(first.create[1], "2027-01-15T07:00:00Z", failedAt("2027-01-15T07:01:00Z"));
  auto b_pod = pod(images::kImportChecksumMismatch);
  auto plan =
      planImports(img, context(), settings_, {{a.get(), nullptr}, {b.get(), b_pod.get()}}, kNow);
  EXPECT_TRUE(plan.create.empty());
  EXPECT_TRUE(plan.remove.empty());  // a terminal failure stays visible
  EXPECT_FALSE(plan.ready);
  EXPECT_EQ(plan.reason, "ChecksumMismatch");
  EXPECT_NE(plan.message.find("host-b"), std::string::npos) << plan.message;
  EXPECT_TRUE(plan.zones[0].ready);
  EXPECT_EQ(plan.zones[0].reason, "Imported");
  EXPECT_FALSE(plan.zones[1].ready);
  EXPECT_EQ(plan.zones[1].reason, "ChecksumMismatch");
  EXPECT_FALSE(plan.requeue_after.has_value());

  auto b_done = job(first.create[1], "2027-01-15T07:00:00Z", kComplete);
  auto done =
      planImports(img, context(), settings_, {{a.get(), nullptr}, {b_done.get(), nullptr}}, kNow);
  EXPECT_TRUE(done.ready);
  EXPECT_EQ(done.reason, "Imported");
  EXPECT_TRUE(done.create.empty());

  auto row = parse(R"({"providerName":"fp1","providerNamespace":"infra","ready":false,)"
                   R"("reason":"ImportPending","message":"m","zones":[]})");
  applyImportPlan(row, done);
  EXPECT_TRUE(json::boolean(&row, "ready"));
  EXPECT_EQ(json::stringOr(&row, "reason"), "Imported");
  EXPECT_EQ(row["zones"].Size(), 2u);
  EXPECT_TRUE(json::boolean(&row["zones"][1], "ready"));
}

TEST_F(ImportPlanTest, RetryableFailuresAreRetriedAfterTheDelayOnly) {
  auto img = image();
  auto first = planImports(img, context(), settings_, {}, kNow);
  auto a = job(first.create[0], "2027-01-15T07:00:00Z", kComplete);
  auto unreachable = pod(images::kImportConnectFailed);
  // Failed 100 s ago: wait the rest of the 300 s.
  auto recent = job(first.create[1], "2027-01-15T07:50:00Z", failedAt("2027-01-15T07:58:20Z"));
  auto plan = planImports(img, context(), settings_,
                          {{a.get(), nullptr}, {recent.get(), unreachable.get()}}, kNow);
  EXPECT_TRUE(plan.remove.empty());
  ASSERT_TRUE(plan.requeue_after.has_value());
  EXPECT_EQ(plan.requeue_after->count(), 200);
  EXPECT_EQ(plan.reason, "ProviderConnectFailed");
  // Failed 400 s ago: the Job goes, and the next plan (it gone) makes it again.
  auto old = job(first.create[1], "2027-01-15T07:50:00Z", failedAt("2027-01-15T07:53:20Z"));
  auto retry = planImports(img, context(), settings_,
                           {{a.get(), nullptr}, {old.get(), unreachable.get()}}, kNow);
  EXPECT_EQ(retry.remove, std::vector<std::string>{nameOf(first.create[1])});
  auto again = planImports(img, context(), settings_, {{a.get(), nullptr}}, kNow);
  EXPECT_EQ(again.create.size(), 1u);
  EXPECT_EQ(nameOf(again.create[0]), nameOf(first.create[1]));
}

TEST_F(ImportPlanTest, ForceReimportIsOneShotPerToken) {
  auto plain = image();
  auto first = planImports(plain, context(), settings_, {}, kNow);
  auto a = job(first.create[0], "2027-01-15T07:00:00Z", kComplete);
  auto b = job(first.create[1], "2027-01-15T07:00:00Z", kComplete);

  auto forced = image(R"({"banlieue.io/force-reimport":" t1 "})");
  EXPECT_EQ(forceReimportToken(forced), "t1");
  auto plan =
      planImports(forced, context(), settings_, {{a.get(), nullptr}, {b.get(), nullptr}}, kNow);
  ASSERT_EQ(plan.create.size(), 2u);
  EXPECT_NE(nameOf(plan.create[0]), nameOf(first.create[0]));
  EXPECT_TRUE(plan.remove.empty());  // the old Jobs go once their replacements exist
  EXPECT_EQ(plan.reason, "Importing");

  auto a2 = job(plan.create[0], "2027-01-15T07:30:00Z", kComplete);
  auto b2 = job(plan.create[1], "2027-01-15T07:30:00Z");
  std::vector<ExistingImportJob> all = {
      {a.get(), nullptr}, {b.get(), nullptr}, {a2.get(), nullptr}, {b2.get(), nullptr}};
  auto settled = planImports(forced, context(), settings_, all, kNow);
  EXPECT_TRUE(settled.create.empty());
  EXPECT_EQ(std::set<std::string>(settled.remove.begin(), settled.remove.end()),
            (std::set<std::string>{nameOf(first.create[0]), nameOf(first.create[1])}));
  EXPECT_EQ(settled.reason, "Importing");  // b2 still runs

  // Removing the annotation later re-imports nothing: the newest Jobs still stand.
  auto after =
      planImports(plain, context(), settings_, {{a2.get(), nullptr}, {b2.get(), nullptr}}, kNow);
  EXPECT_TRUE(after.create.empty());
  EXPECT_TRUE(after.remove.empty());
}

TEST_F(ImportPlanTest, JobsOfAnotherArtifactOrZoneGo) {
  auto old_image = image("{}", "sha256:old");
  auto old = planImports(old_image, context(), settings_, {}, kNow);
  auto stale = job(old.create[0], "2027-01-15T07:00:00Z", kComplete);
  auto plan = planImports(image(), context(), settings_, {{stale.get(), nullptr}}, kNow);
  EXPECT_EQ(plan.create.size(), 2u);
  EXPECT_EQ(plan.remove, std::vector<std::string>{nameOf(old.create[0])});
}

TEST_F(ImportPlanTest, WhatCannotBeImportedSaysWhyOnEveryZone) {
  auto img = image();
  auto no_slot = settings_;
  no_slot.plugin_imports = false;
  auto plan = planImports(img, context(), no_slot, {}, kNow);
  EXPECT_TRUE(plan.create.empty());
  EXPECT_EQ(plan.reason, "ImportUnsupported");
  ASSERT_EQ(plan.zones.size(), 2u);
  EXPECT_EQ(plan.zones[1].reason, "ImportUnsupported");

  auto iso_only = settings_;
  iso_only.image_formats = {"iso"};
  EXPECT_EQ(planImports(img, context(), iso_only, {}, kNow).reason, "ImportUnsupported");

  auto external = settings_;
  external.container_image.clear();
  EXPECT_EQ(planImports(img, context(), external, {}, kNow).reason, "ImportUnavailable");

  auto unpinned = image("{}", "");
  auto missing = planImports(unpinned, context(), settings_, {}, kNow);
  EXPECT_EQ(missing.reason, "ChecksumMissing");
  EXPECT_TRUE(missing.create.empty());
}

// A failure domain that publishes importTargets (libvirt: its pools) gets one Job and one row
// per target, named <failureDomain>/<target>; one without keeps one Job and one row. The
// Provider's row is Ready only once every row is.
TEST_F(ImportPlanTest, ImportTargetsGetAJobAndARowEach) {
  domains_ = parse(R"([{"name":"host-a","attributes":{"importTargets":["pool-a","pool-b"]}},)"
                   R"({"name":"host-b"}])");
  auto img = image();
  auto plan = planImports(img, context(), settings_, {}, kNow);
  ASSERT_EQ(plan.create.size(), 3u);
  std::set<std::string> names;
  std::map<std::string, std::string> target_of;  // Job name -> its import-target annotation
  for (const auto& m : plan.create) {
    auto doc = parse(m);
    names.insert(nameOf(m));
    const auto& annotations = doc["metadata"]["annotations"];
    target_of[nameOf(m)] = annotations.HasMember(images::kImportTargetAnnotation)
                               ? annotations[images::kImportTargetAnnotation].GetString()
                               : "";
  }
  EXPECT_EQ(names.size(), 3u);
  std::multiset<std::string> targets;
  for (const auto& [name, target] : target_of) targets.insert(target);
  EXPECT_EQ(targets, (std::multiset<std::string>{"", "pool-a", "pool-b"}));
  ASSERT_EQ(plan.zones.size(), 3u);
  EXPECT_EQ(plan.zones[0].name, "host-a/pool-a");
  EXPECT_EQ(plan.zones[0].failure_domain, "host-a");
  EXPECT_EQ(plan.zones[0].target, "pool-a");
  EXPECT_EQ(plan.zones[1].name, "host-a/pool-b");
  EXPECT_EQ(plan.zones[1].target, "pool-b");
  EXPECT_EQ(plan.zones[2].name, "host-b");
  EXPECT_EQ(plan.zones[2].failure_domain, "");
  EXPECT_EQ(plan.zones[2].target, "");

  // Two of three done: not ready, and the message counts rows.
  auto a = job(plan.create[0], "2027-01-15T07:00:00Z", kComplete);
  auto b = job(plan.create[1], "2027-01-15T07:00:00Z");
  auto c = job(plan.create[2], "2027-01-15T07:00:00Z", kComplete);
  auto partial = planImports(img, context(), settings_,
                             {{a.get(), nullptr}, {b.get(), nullptr}, {c.get(), nullptr}}, kNow);
  EXPECT_TRUE(partial.create.empty());
  EXPECT_TRUE(partial.remove.empty());
  EXPECT_FALSE(partial.ready);
  EXPECT_EQ(partial.reason, "Importing");
  EXPECT_TRUE(partial.zones[0].ready);
  EXPECT_FALSE(partial.zones[1].ready);
  EXPECT_TRUE(partial.zones[2].ready);

  // A failed target says which target it is.
  auto b_failed = job(plan.create[1], "2027-01-15T07:00:00Z", failedAt("2027-01-15T07:01:00Z"));
  auto b_pod = pod(images::kImportRejected);
  auto failed =
      planImports(img, context(), settings_,
                  {{a.get(), nullptr}, {b_failed.get(), b_pod.get()}, {c.get(), nullptr}}, kNow);
  EXPECT_FALSE(failed.ready);
  EXPECT_NE(failed.message.find("host-a"), std::string::npos) << failed.message;
  EXPECT_NE(failed.message.find("pool-b"), std::string::npos) << failed.message;

  auto b_done = job(plan.create[1], "2027-01-15T07:00:00Z", kComplete);
  auto done = planImports(img, context(), settings_,
                          {{a.get(), nullptr}, {b_done.get(), nullptr}, {c.get(), nullptr}}, kNow);
  EXPECT_TRUE(done.ready);
  EXPECT_EQ(done.reason, "Imported");

  auto row = parse(R"({"providerName":"fp1","providerNamespace":"infra","ready":false,)"
                   R"("reason":"ImportPending","message":"m","zones":[]})");
  applyImportPlan(row, done);
  ASSERT_EQ(row["zones"].Size(), 3u);
  EXPECT_EQ(json::stringOr(&row["zones"][1], "name"), "host-a/pool-b");
  EXPECT_EQ(json::stringOr(&row["zones"][1], "failureDomain"), "host-a");
  EXPECT_EQ(json::stringOr(&row["zones"][1], "target"), "pool-b");
  EXPECT_FALSE(row["zones"][2].HasMember("failureDomain"));
  EXPECT_FALSE(row["zones"][2].HasMember("target"));
}

// A failure domain that starts publishing importTargets (an upgrade of its plugin) swaps its
// one Job for one per target; a target no longer published loses its Job.
TEST_F(ImportPlanTest, JobsFollowTheImportTargets) {
  auto img = image();
  domains_ = parse(R"([{"name":"host-a"}])");
  auto before = planImports(img, context(), settings_, {}, kNow);
  ASSERT_EQ(before.create.size(), 1u);
  auto whole = job(before.create[0], "2027-01-15T07:00:00Z", kComplete);

  domains_ = parse(R"([{"name":"host-a","attributes":{"importTargets":["pool-a","pool-b"]}}])");
  auto after = planImports(img, context(), settings_, {{whole.get(), nullptr}}, kNow);
  EXPECT_EQ(after.create.size(), 2u);
  EXPECT_EQ(after.remove, std::vector<std::string>{nameOf(before.create[0])});
  ASSERT_EQ(after.zones.size(), 2u);
  EXPECT_EQ(after.zones[0].reason, "Importing");

  auto a = job(after.create[0], "2027-01-15T07:00:00Z", kComplete);
  auto b = job(after.create[1], "2027-01-15T07:00:00Z", kComplete);
  domains_ = parse(R"([{"name":"host-a","attributes":{"importTargets":["pool-a"]}}])");
  auto fewer =
      planImports(img, context(), settings_, {{a.get(), nullptr}, {b.get(), nullptr}}, kNow);
  EXPECT_TRUE(fewer.create.empty());
  EXPECT_EQ(fewer.remove, std::vector<std::string>{nameOf(after.create[1])});
  ASSERT_EQ(fewer.zones.size(), 1u);
  EXPECT_EQ(fewer.zones[0].name, "host-a/pool-a");
  EXPECT_TRUE(fewer.ready);
}

TEST_F(ImportPlanTest, WhatCannotBeImportedSaysWhyOnEveryTarget) {
  domains_ = parse(R"([{"name":"host-a","attributes":{"importTargets":["pool-a","pool-b"]}}])");
  auto no_slot = settings_;
  no_slot.plugin_imports = false;
  auto plan = planImports(image(), context(), no_slot, {}, kNow);
  EXPECT_TRUE(plan.create.empty());
  ASSERT_EQ(plan.zones.size(), 2u);
  EXPECT_EQ(plan.zones[1].name, "host-a/pool-b");
  EXPECT_EQ(plan.zones[1].failure_domain, "host-a");
  EXPECT_EQ(plan.zones[1].target, "pool-b");
  EXPECT_EQ(plan.zones[1].reason, "ImportUnsupported");
}

TEST(ImportPlanHelpers, FormatsAndTimes) {
  EXPECT_EQ(importArtifactFormat("iso", "x.iso"), "iso");
  EXPECT_EQ(importArtifactFormat("cloudImage", "x.qcow2"), "qcow2");
  EXPECT_EQ(importArtifactFormat("cloudImage", "x.raw"), "raw");
  EXPECT_EQ(parseRfc3339("2027-01-15T08:00:00Z"), std::optional<std::time_t>(kNow));
  EXPECT_FALSE(parseRfc3339("2027-01-15 08:00:00").has_value());
  EXPECT_FALSE(parseRfc3339("").has_value());
}

}  // namespace
}  // namespace banlieue::roles::provider
