// `banlieue crdgen --plugin-dir` and `banlieue bootstrap operator --dry-run` on plugin sets
// whose CRDs are missing, mistyped in provider.json, or shipped twice: both refuse with a
// message naming the plugin and the file, and a nonzero exit code.
#include "tests/abi/run_banlieue.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace banlieue::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

constexpr const char* kAcmeKinds =
    R"([{"group":"infrastructure.acme.example","version":"v1","kind":"AcmeMachine"}])";
constexpr const char* kAcmeCrdName = "acmemachines.infrastructure.acme.example";

class PluginCrdsCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::path(::testing::TempDir()) /
            ("banlieue-plugin-crds-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
    ::chmod(root_.c_str(), 0755);
  }
  void TearDown() override { fs::remove_all(root_); }

  void write(const fs::path& rel, const std::string& text) {
    fs::create_directories((root_ / rel).parent_path());
    for (auto p = (root_ / rel).parent_path(); p != root_; p = p.parent_path()) {
      ::chmod(p.c_str(), 0755);
    }
    std::ofstream(root_ / rel) << text;
    ::chmod((root_ / rel).c_str(), 0644);
  }

  // `crds` is the manifest's raw JSON value for the field, or empty to leave it out.
  void plugin(const std::string& name, const std::string& crds) {
    write(name + "/provider.json",
          R"({"manifestVersion":1,"name":")" + name +
              R"(","library":"lib.so","abi":{"major":1},"providerVersion":"1.0",)"
              R"("infrastructure":)" +
              kAcmeKinds + (crds.empty() ? "" : R"(,"crds":)" + crds) + "}");
  }

  void acmeCrd(const std::string& rel) {
    write(rel,
          "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"
          "metadata:\n  name: acmemachines.infrastructure.acme.example\n"
          "spec:\n  group: infrastructure.acme.example\n"
          "  names: {kind: AcmeMachine, plural: acmemachines}\n  scope: Namespaced\n"
          "  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: "
          "{type: object}}}]\n");
  }

  // Both commands that install plugin CRDs, on this plugin root.
  std::vector<banlieue::testing::Run> both() const {
    return {runBanlieue("crdgen --plugin-dir " + root_.string()),
            runBanlieue("bootstrap operator --dry-run --plugin-dir " + root_.string())};
  }

  fs::path root_;
};

size_t occurrences(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
    ++n;
  }
  return n;
}

// What a third party applies to add its plugin to a running cluster (issue #21): its CRD and
// its two ClusterRoles, labelled for aggregation; the same refusals as bootstrap otherwise.
TEST_F(PluginCrdsCliTest, PluginManifestsPrintsTheCrdAndTheTwoAggregatedRoles) {
  plugin("acme", R"(["crds/acme.yaml"])");
  acmeCrd("acme/crds/acme.yaml");
  auto run = runBanlieue("plugin manifests " + (root_ / "acme").string());
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(occurrences(run.output, std::string("name: ") + kAcmeCrdName), 1u) << run.output;
  EXPECT_EQ(occurrences(run.output, "kind: ClusterRole\n"), 2u) << run.output;
  EXPECT_THAT(run.output, HasSubstr("name: banlieue-provider-acme\n"));
  EXPECT_THAT(run.output, HasSubstr("name: banlieue-infrastructure-acme\n"));
  EXPECT_EQ(occurrences(run.output, "banlieue.io/aggregate-to-operator: \"true\""), 2u)
      << run.output;
  EXPECT_EQ(occurrences(run.output, "banlieue.io/aggregate-to-controller: \"true\""), 1u)
      << run.output;
  EXPECT_THAT(run.output, HasSubstr("- acmemachines/finalizers"));
  // Nothing but its own kinds: no Secret, no banlieue.io resource.
  EXPECT_THAT(run.output, ::testing::Not(HasSubstr("secrets")));
  EXPECT_THAT(run.output, ::testing::Not(HasSubstr("- banlieue.io")));

  plugin("bare", "");
  auto refused = runBanlieue("plugin manifests " + (root_ / "bare").string());
  EXPECT_NE(refused.exit_code, 0) << refused.output;
  EXPECT_THAT(refused.output, HasSubstr("its 'crds' lists no CRD file"));
}

// The control: a plugin with its CRD is accepted and the CRD emitted once.
TEST_F(PluginCrdsCliTest, APluginWithItsCrdIsInstalled) {
  plugin("acme", R"(["crds/acme.yaml"])");
  acmeCrd("acme/crds/acme.yaml");
  for (const auto& run : both()) {
    EXPECT_EQ(run.exit_code, 0) << run.output;
    EXPECT_EQ(occurrences(run.output, std::string("name: ") + kAcmeCrdName), 1u) << run.output;
  }
}

TEST_F(PluginCrdsCliTest, RefusesAPluginWithoutItsCrd) {
  plugin("acme", "");
  for (const auto& run : both()) {
    EXPECT_NE(run.exit_code, 0) << run.output;
    EXPECT_THAT(run.output, HasSubstr("acme/provider.json: plugin 'acme' serves "
                                      "AcmeMachine.infrastructure.acme.example"));
    EXPECT_THAT(run.output, HasSubstr("its 'crds' lists no CRD file"));
  }
}

TEST_F(PluginCrdsCliTest, RefusesACrdsFieldOfTheWrongType) {
  plugin("acme", R"("crds/acme.yaml")");
  acmeCrd("acme/crds/acme.yaml");
  for (const auto& run : both()) {
    EXPECT_NE(run.exit_code, 0) << run.output;
    EXPECT_THAT(run.output, HasSubstr("acme/provider.json"));
    EXPECT_THAT(run.output, HasSubstr("field 'crds' must be a list of CRD file paths"));
  }
}

TEST_F(PluginCrdsCliTest, RefusesTwoPluginsShippingTheSameCrd) {
  plugin("acme", R"(["crds/acme.yaml"])");
  acmeCrd("acme/crds/acme.yaml");
  plugin("acme-copy", R"(["machines.yaml"])");
  acmeCrd("acme-copy/machines.yaml");
  for (const auto& run : both()) {
    EXPECT_NE(run.exit_code, 0) << run.output;
    EXPECT_THAT(run.output, HasSubstr(std::string("CRD ") + kAcmeCrdName + " is shipped by"));
    EXPECT_THAT(run.output, HasSubstr("plugin 'acme' ("));
    EXPECT_THAT(run.output, HasSubstr("acme/crds/acme.yaml"));
    EXPECT_THAT(run.output, HasSubstr("plugin 'acme-copy' ("));
    EXPECT_THAT(run.output, HasSubstr("acme-copy/machines.yaml"));
  }
}

}  // namespace
}  // namespace banlieue::testing
