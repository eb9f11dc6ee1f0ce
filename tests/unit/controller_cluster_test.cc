// VSphereCluster failure-domain aggregation (banlieue-spec §4.1.10 with §9's quirks fixed).
#include "host/roles/controller/cluster_aggregate.h"
#include "host/roles/controller/status_mirror.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace banlieue::controller {
namespace {

using ::testing::HasSubstr;

api::Provider provider(const std::string& name, api::StringMap labels,
                       std::vector<std::string> fds) {
  api::Provider p;
  p.metadata.name = name;
  p.metadata.namespace_ = "capi";
  p.metadata.labels = std::move(labels);
  for (const auto& fd : fds) {
    api::ProviderFailureDomain d;
    d.name = fd;
    d.labels = {{"name", fd}, {"tier", fd == "fd-cp" ? "control" : "worker"}};
    d.attributes.raw = {{"datacenter", "dc1"}, {"name", "raw-" + fd}};
    p.status.failure_domains.push_back(d);
  }
  return p;
}

const api::Condition& ready(const api::InfraClusterStatus& status) {
  static const api::Condition kMissing;
  const auto* found = findCondition(status.conditions, "Ready");
  return found != nullptr ? *found : kMissing;
}

TEST(ClusterAggregateTest, SelectedProvidersFailureDomainsWithControlPlaneAndAttributes) {
  api::InfraCluster cluster;
  cluster.metadata.generation = 4;
  cluster.spec.provider_selector = api::LabelSelector{.match_labels = {{"env", "prod"}}};
  cluster.spec.control_plane_failure_domain_selector =
      api::LabelSelector{.match_labels = {{"tier", "control"}}};
  cluster.spec.control_plane_endpoint = api::ApiEndpoint{.host = "10.0.0.1", .port = 6443};
  std::vector<api::Provider> providers = {provider("vc2", {{"env", "prod"}}, {"fd-w"}),
                                          provider("vc1", {{"env", "prod"}}, {"fd-cp"}),
                                          provider("lab", {{"env", "dev"}}, {"fd-lab"})};
  auto status = aggregateCluster(cluster, providers, "t1");
  ASSERT_EQ(status.failure_domains.size(), 2u);
  EXPECT_EQ(status.failure_domains[0].name, "fd-cp");  // providers in name order
  EXPECT_EQ(status.failure_domains[0].control_plane, std::optional<bool>(true));
  EXPECT_EQ(status.failure_domains[1].control_plane, std::optional<bool>(false));
  EXPECT_EQ(status.failure_domains[0].attributes.at("name"), "raw-fd-cp");  // raw wins
  EXPECT_EQ(status.failure_domains[0].attributes.at("tier"), "control");
  ASSERT_TRUE(status.initialization && status.initialization->provisioned);
  EXPECT_TRUE(*status.initialization->provisioned);
  EXPECT_EQ(status.control_plane_endpoint->port, 6443);
  EXPECT_EQ(status.observed_generation, 4);
  EXPECT_EQ(ready(status).status, "True");
  EXPECT_EQ(ready(status).message, "aggregated 2 failure domain(s) from 2 provider(s)");
}

TEST(ClusterAggregateTest, ProviderRefsReportMissingOnesAndNamesAreDeduplicated) {
  api::InfraCluster cluster;
  cluster.spec.provider_refs = {{"vc1"}, {"ghost"}, {"vc2"}};
  std::vector<api::Provider> providers = {provider("vc1", {}, {"fd-a"}),
                                          provider("vc2", {}, {"fd-a", "fd-b"})};
  auto status = aggregateCluster(cluster, providers, "t1");
  ASSERT_EQ(status.failure_domains.size(), 2u);
  EXPECT_EQ(status.failure_domains[1].name, "fd-b");
  EXPECT_THAT(ready(status).message, HasSubstr("providerRefs not found: ghost"));
  EXPECT_THAT(ready(status).message, HasSubstr("duplicate failure-domain names skipped: vc2/fd-a"));
}

TEST(ClusterAggregateTest, NoFailureDomainsIsNotReadyAndPausedKeepsTheList) {
  api::InfraCluster cluster;
  cluster.spec.provider_selector = api::LabelSelector{.match_labels = {{"env", "none"}}};
  auto status = aggregateCluster(cluster, {provider("vc1", {}, {"fd-a"})}, "t1");
  EXPECT_TRUE(status.failure_domains.empty());
  EXPECT_EQ(ready(status).reason, "NoFailureDomains");
  EXPECT_FALSE(*status.initialization->provisioned);

  cluster.spec.provider_selector.reset();
  cluster.status = aggregateCluster(cluster, {provider("vc1", {}, {"fd-a"})}, "t1");
  cluster.spec.paused = true;
  status = aggregateCluster(cluster, {}, "t2");
  EXPECT_EQ(status.failure_domains.size(), 1u) << "pausing must not drop the list";
  EXPECT_EQ(ready(status).reason, "Paused");
  ASSERT_NE(findCondition(status.conditions, "Paused"), nullptr);
  cluster.spec.paused = false;
  cluster.status = status;
  status = aggregateCluster(cluster, {provider("vc1", {}, {"fd-a"})}, "t3");
  EXPECT_EQ(findCondition(status.conditions, "Paused"), nullptr);
  EXPECT_EQ(ready(status).status, "True");
}

}  // namespace
}  // namespace banlieue::controller
