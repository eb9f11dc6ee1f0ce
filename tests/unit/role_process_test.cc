#include "host/roles/common/role_process.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <CLI/CLI.hpp>

namespace banlieue::roles {
namespace {

// docs/adr/0048: no client-side rate limit by default; the API server's priority and fairness
// and the roles' bounded workers keep a shared API server safe.
TEST(RoleProcessFlagsTest, NoClientRateLimitByDefault) {
  CLI::App app("role");
  RoleProcessOptions options;
  addRoleProcessFlags(&app, &options);
  app.parse("", /*program_name_included=*/false);
  EXPECT_EQ(options.kube_qps, 0);
  EXPECT_EQ(options.kube_burst, 100);
  EXPECT_EQ(options.kube_qps, kube::ClientOptions{}.qps) << "one default for every client";
  EXPECT_EQ(options.kube_burst, kube::ClientOptions{}.burst);
  EXPECT_THAT(app.help(), ::testing::HasSubstr("--kube-qps FLOAT=0 ")) << "--help shows it";
  EXPECT_THAT(app.help(), ::testing::HasSubstr("--kube-burst INT=100 "));
}

TEST(RoleProcessFlagsTest, ALimitCanBeSet) {
  CLI::App app("role");
  RoleProcessOptions options;
  addRoleProcessFlags(&app, &options);
  app.parse("--kube-qps 200 --kube-burst 300", /*program_name_included=*/false);
  EXPECT_EQ(options.kube_qps, 200);
  EXPECT_EQ(options.kube_burst, 300);
}

}  // namespace
}  // namespace banlieue::roles
