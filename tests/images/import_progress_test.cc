// Import progress on the VMImage zone row (issue #22): the import Job logs one progress line
// per phase step, the provider reads the last one from the running pod's log tail, and the
// plan puts it on the zone (phase, percent, bytes) and looks again every few seconds.
// Labels: unit;images;ux.
#include "host/roles/images/import_progress.h"
#include "host/roles/provider/image_import_plan.h"

#include <banlieue/sdk/json.h>
#include <gtest/gtest.h>

#include <memory>

namespace banlieue::roles {
namespace {

namespace json = sdk::json;

TEST(ImportProgressTest, TheLastLineOfATextOrJsonLogCounts) {
  auto line = images::importProgressLine(images::importProgress("Uploading", 1048576, 4194304));
  EXPECT_EQ(line,
            "import progress: phase=Uploading bytesDone=1048576 bytesTotal=4194304 percent=25");
  std::string text_log =
      "2026-12-02T10:00:00.000 info  banlieue: import progress: phase=Verifying bytesDone=10 "
      "bytesTotal=10 percent=100\n"
      "2026-12-02T10:00:03.000 info  banlieue: " +
      line +
      "\n"
      "2026-12-02T10:00:04.000 info  banlieue: still working\n";
  auto last = images::lastImportProgress(text_log);
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ(last->phase, "Uploading");
  EXPECT_EQ(last->bytes_done, 1048576u);
  EXPECT_EQ(last->bytes_total, 4194304u);
  EXPECT_EQ(last->percent, 25);
  EXPECT_EQ(images::describeImportProgress(*last), "Uploading 25% (1.0 MiB of 4.0 MiB)");

  std::string json_log =
      R"({"ts":"x","level":"info","logger":"banlieue","msg":")" + line + R"("})" + "\n";
  auto from_json = images::lastImportProgress(json_log);
  ASSERT_TRUE(from_json.has_value());
  EXPECT_EQ(from_json->percent, 25);

  EXPECT_FALSE(images::lastImportProgress("no progress here\n").has_value());
  EXPECT_FALSE(images::lastImportProgress("import progress: phase=X bytesDone=a bytesTotal=1 "
                                          "percent=1\n")
                   .has_value());
  EXPECT_FALSE(images::lastImportProgress("import progress: phase=X bytesDone=1 bytesTotal=1 "
                                          "percent=101\n")
                   .has_value());
  EXPECT_EQ(images::importProgress("Importing", 5, 0).percent, 0) << "an unknown total";
  EXPECT_EQ(images::describeImportProgress(images::importProgress("Installing", 0, 0)),
            "Installing 0%");
}

class ImportPlanProgressTest : public ::testing::Test {
 protected:
  void SetUp() override {
    domains_ = json::parse(R"([{"name":"host-a"}])", "domains");
    settings_.backend = "file";
    settings_.container_image = "localhost/banlieue:1.0";
    settings_.plugin_dir = "/usr/lib/banlieue/plugins";
    settings_.job_namespace = "banlieue-imagebuild";
    settings_.plugin_imports = true;
    settings_.image_formats = {"raw"};
    image_ = json::parse(
        R"({"metadata":{"name":"tiny","uid":"img-1"},)"
        R"("spec":{"sources":[{"providerClass":"file","kind":"Url","ref":"x"}]},)"
        R"("status":{"buildArtifact":{"kind":"cloudImage","phase":"Ready","pvcRef":"p",)"
        R"("file":"tiny.raw","checksum":"sha256:abc"}}})",
        "image");
  }
  provider::ImageRowContext context() const { return {"file", "infra", "fp1", &domains_}; }

  rapidjson::Document domains_;
  rapidjson::Document image_;
  provider::ImportSettings settings_;
};

TEST_F(ImportPlanProgressTest, ARunningImportsZoneCarriesItsProgressAndIsLookedAtAgain) {
  auto first = provider::planImports(image_, context(), settings_, {}, 1800000000);
  ASSERT_EQ(first.create.size(), 1u);
  auto job = json::parse(first.create[0], "job");
  auto& a = job.GetAllocator();
  job["metadata"].AddMember("creationTimestamp", "2027-01-15T08:00:00Z", a);
  auto active = json::parse(R"({"active":1})", "status");
  job.AddMember("status", rapidjson::Value(active, a), a);  // a copy into job's allocator
  auto pod = json::parse(R"({"status":{"phase":"Running"}})", "pod");

  provider::ExistingImportJob running{&job, &pod, std::nullopt};
  auto without = provider::planImports(image_, context(), settings_, {running}, 1800000000);
  ASSERT_EQ(without.zones.size(), 1u);
  EXPECT_EQ(without.zones[0].reason, "Importing");
  EXPECT_FALSE(without.zones[0].progress.has_value());
  ASSERT_TRUE(without.requeue_after.has_value()) << "progress is polled while the Job runs";
  EXPECT_EQ(*without.requeue_after, provider::kImportProgressPoll);

  running.progress = images::importProgress("Uploading", uint64_t{3} << 30, uint64_t{4} << 30);
  auto with = provider::planImports(image_, context(), settings_, {running}, 1800000000);
  ASSERT_EQ(with.zones.size(), 1u);
  ASSERT_TRUE(with.zones[0].progress.has_value());
  EXPECT_EQ(with.zones[0].progress->phase, "Uploading");
  EXPECT_EQ(with.zones[0].progress->percent, 75);
  EXPECT_EQ(with.zones[0].progress->bytes_done, int64_t{3} << 30);
  EXPECT_EQ(with.zones[0].progress->bytes_total, int64_t{4} << 30);
  EXPECT_NE(with.zones[0].message.find("(Uploading 75% (3.0 GiB of 4.0 GiB))"), std::string::npos)
      << with.zones[0].message;
  // ... and the row the provider applies carries it, as numbers a user (or kubectl wait
  // --for=jsonpath) can read, not only inside the message.
  auto row = json::parse(R"({"providerName":"fp1","zones":[]})", "row");
  provider::applyImportPlan(row, with);
  const auto* progress = json::find(&row["zones"][0], "progress");
  ASSERT_NE(progress, nullptr) << json::serialize(row);
  EXPECT_EQ(json::stringOr(progress, "phase"), "Uploading");
  EXPECT_EQ(json::integer(progress, "percent"), 75);
  EXPECT_EQ(json::integer(progress, "bytesDone"), int64_t{3} << 30);
  EXPECT_EQ(json::integer(progress, "bytesTotal"), int64_t{4} << 30);

  // Done: no progress, no polling.
  auto complete = json::parse(
      R"({"succeeded":1,"conditions":[{"type":"Complete","status":"True"}]})", "status");
  job["status"].CopyFrom(complete, a);
  auto done = provider::planImports(image_, context(), settings_, {running}, 1800000000);
  EXPECT_FALSE(done.zones[0].progress.has_value());
  EXPECT_FALSE(done.requeue_after.has_value());
}

}  // namespace
}  // namespace banlieue::roles
