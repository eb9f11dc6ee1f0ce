// The import Jobs load the plugin under the ProviderClass's pin too (docs/adr/0025): the
// provider runtime passes spec.plugin.sha256 to every Job it plans as --plugin-sha256.
// Labels: unit;images;security.
#include "host/roles/provider/image_import_plan.h"

#include <banlieue/sdk/json.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace banlieue::roles::provider {
namespace {

namespace json = sdk::json;
using ::testing::Contains;
using ::testing::Not;

constexpr std::time_t kNow = 1800000000;

std::vector<std::string> argsOf(const std::string& manifest) {
  auto job = json::parse(manifest, "job");
  std::vector<std::string> out;
  const auto* args = json::find(&job, "spec.template.spec.containers");
  if (args == nullptr || !args->IsArray() || args->Empty()) return out;
  for (const auto& a : (*args)[0]["args"].GetArray()) out.emplace_back(a.GetString());
  return out;
}

std::vector<std::string> planArgs(const std::string& pin) {
  auto domains = json::parse(R"([{"name":"host-a"}])", "domains");
  auto image = json::parse(
      R"({"apiVersion":"banlieue.io/v1alpha1","kind":"VMImage","metadata":{"name":"tiny","uid":"img-1"},)"
      R"("spec":{"sources":[{"providerClass":"file","kind":"Url","ref":"x"}]},)"
      R"("status":{"buildArtifact":{"kind":"cloudImage","phase":"Ready","osArtifactRef":"tiny-build",)"
      R"("osArtifactUid":"osa-1","pvcRef":"tiny-build-artifacts","file":"tiny-build.raw",)"
      R"("checksum":"sha256:abc"}}})",
      "image");
  ImportSettings settings;
  settings.backend = "file";
  settings.container_image = "localhost/banlieue:1.0";
  settings.plugin_dir = "/usr/lib/banlieue/plugins";
  settings.plugin_sha256 = pin;
  settings.job_namespace = "banlieue-imagebuild";
  settings.plugin_imports = true;
  ImageRowContext context{"file", "infra", "fp1", &domains};
  auto plan = planImports(image, context, settings, {}, kNow);
  EXPECT_EQ(plan.create.size(), 1u) << plan.reason << ": " << plan.message;
  return plan.create.empty() ? std::vector<std::string>{} : argsOf(plan.create[0]);
}

TEST(ImportPin, TheClassPinReachesEveryImportJob) {
  std::string pin(64, 'e');
  auto args = planArgs(pin);
  auto flag = std::find(args.begin(), args.end(), "--plugin-sha256");
  ASSERT_TRUE(flag != args.end()) << "the import Job loads the plugin without the class's pin";
  ASSERT_TRUE(flag + 1 != args.end());
  EXPECT_EQ(*(flag + 1), pin);
}

TEST(ImportPin, NoPinNoFlag) {
  EXPECT_THAT(planArgs(""), Not(Contains("--plugin-sha256")));
}

}  // namespace
}  // namespace banlieue::roles::provider
