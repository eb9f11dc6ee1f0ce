#include "host/roles/common/role_process.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <CLI/CLI.hpp>

namespace banlieue::roles {
namespace {

TEST(RoleProcessFlagsTest, ClientRateLimitDefaultsToFiftyPerSecondBurstingToAHundred) {
  CLI::App app("role");
  RoleProcessOptions options;
  addRoleProcessFlags(&app, &options);
  app.parse("", /*program_name_included=*/false);
  EXPECT_EQ(options.kube_qps, 50);
  EXPECT_EQ(options.kube_burst, 100);
  EXPECT_EQ(options.kube_qps, kube::ClientOptions{}.qps) << "one default for every client";
  EXPECT_EQ(options.kube_burst, kube::ClientOptions{}.burst);
  EXPECT_THAT(app.help(), ::testing::HasSubstr("--kube-qps FLOAT=50 ")) << "--help shows it";
  EXPECT_THAT(app.help(), ::testing::HasSubstr("--kube-burst INT=100 "));
}

TEST(RoleProcessFlagsTest, TheLimitCanBeRaisedOrTurnedOff) {
  CLI::App app("role");
  RoleProcessOptions options;
  addRoleProcessFlags(&app, &options);
  app.parse("--kube-qps 0 --kube-burst 300", /*program_name_included=*/false);
  EXPECT_EQ(options.kube_qps, 0);
  EXPECT_EQ(options.kube_burst, 300);
}

}  // namespace
}  // namespace banlieue::roles
