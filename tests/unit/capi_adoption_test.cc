// Machines Cluster API makes from banlieue's templates (docs/adr/0050, issue #24): which copies
// the controller adopts, and the Provider, place and bootstrap reference it gives them.
#include "host/roles/controller/capi_adoption.h"

#include <banlieue/sdk/json.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace banlieue::controller::capi {
namespace {

namespace json = sdk::json;
using ::testing::HasSubstr;

// Cluster API's copy of a template: owned by Machine `machine`, labelled with cluster `c1`.
std::string copyOf(const std::string& kind, const std::string& spec,
                   const std::string& extra_metadata = "") {
  return R"({"apiVersion":"infrastructure.banlieue.io/v1beta2","kind":")" + kind +
         R"(","metadata":{"name":"md-0-abc12","namespace":"capi","labels":)"
         R"({"cluster.x-k8s.io/cluster-name":"c1"},"ownerReferences":[{"apiVersion":)"
         R"("cluster.x-k8s.io/v1beta2","kind":"Machine","name":"md-0-abc12","uid":"u1"}])" +
         extra_metadata + R"(},"spec":)" + spec + "}";
}

rapidjson::Document machineWith(const std::string& failure_domain,
                                const std::string& data_secret = "md-0-abc12-bootstrap") {
  return json::parse(R"({"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Machine","metadata":)"
                     R"({"name":"md-0-abc12","namespace":"capi"},"spec":{"clusterName":"c1",)"
                     R"("failureDomain":")" +
                         failure_domain + R"(","bootstrap":{"dataSecretName":")" + data_secret +
                         R"("}}})",
                     "machine");
}

api::Provider provider(const std::string& name, const std::string& fd, api::StringMap raw) {
  api::Provider p;
  p.metadata.name = name;
  p.metadata.namespace_ = "capi";
  api::ProviderFailureDomain d;
  d.name = fd;
  d.attributes.raw = std::move(raw);
  d.attributes.available_storage_classes = {"gold", "silver"};
  p.status.failure_domains.push_back(d);
  api::ProviderCapabilities capabilities;
  capabilities.storage_classes.push_back({.name = "gold", .target = {{"datastore", "ds-" + fd}}});
  capabilities.storage_classes.push_back(
      {.name = "silver", .target = {{"datastore", "slow-" + fd}}});
  p.spec.capabilities = capabilities;
  return p;
}

class CapiAdoptionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    providers_ = {provider("vc1", "fd-a", {{"datacenter", "dc1"}, {"cluster", "c-a"}}),
                  provider("vc2", "fd-b", {{"datacenter", "dc1"}, {"cluster", "c-b"}})};
  }

  // Plans `object` (JSON) with the fixture's Machine, Cluster, VSphereCluster and Providers.
  StatusOr<Adoption> plan(const std::string& object, const std::string& failure_domain = "fd-b",
                          const std::string& cluster_kind = "VSphereCluster") {
    object_ = json::parse(object, "copy");
    machine_ = machineWith(failure_domain);
    AdoptionInput in;
    in.infra_machine = &object_;
    in.machine = &machine_;
    in.cluster = &cluster_;
    in.infra_cluster = &infra_cluster_;
    in.infra_cluster_kind = cluster_kind;
    in.providers = &providers_;
    in.bootstrap_secret_type = secret_type_;
    in.bootstrap_secret_revision = "42";
    return planAdoption(in);
  }

  rapidjson::Document object_;
  rapidjson::Document machine_;
  rapidjson::Document cluster_ = json::parse(
      R"({"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Cluster","metadata":{"name":"c1"},)"
      R"("spec":{"infrastructureRef":{"apiGroup":"infrastructure.banlieue.io",)"
      R"("kind":"VSphereCluster","name":"c1"}}})",
      "cluster");
  api::InfraCluster infra_cluster_;
  std::vector<api::Provider> providers_;
  std::optional<std::string> secret_type_ = std::string(kBootstrapSecretType);
};

const std::string kNoPlace = R"({"template":"ubuntu","numCpus":2,"memoryMiB":4096})";

TEST_F(CapiAdoptionTest, OnlyCopiesClusterApiMadeThatNoProviderServesAwaitAdoption) {
  EXPECT_TRUE(awaitsAdoption(json::parse(copyOf("VSphereMachine", kNoPlace), "copy")));
  EXPECT_EQ(owningMachine(json::parse(copyOf("VSphereMachine", kNoPlace), "copy")),
            std::optional<std::string>("md-0-abc12"));
  // Adopted already: the label says which Provider serves it.
  std::string adopted = copyOf("VSphereMachine", kNoPlace);
  adopted.replace(adopted.find(R"("cluster.x-k8s.io/cluster-name":"c1")"), 0,
                  R"("banlieue.io/provider":"vc2",)");
  EXPECT_FALSE(awaitsAdoption(json::parse(adopted, "copy")));
  // banlieue's own objects (a VirtualMachine's) carry no Cluster API label or owner.
  EXPECT_FALSE(awaitsAdoption(json::parse(
      R"({"kind":"VSphereMachine","metadata":{"name":"vm","labels":{"banlieue.io/provider":"vc1"}}})",
      "own")));
  // An owner that is not Cluster API's Machine.
  std::string other = copyOf("VSphereMachine", kNoPlace);
  other.replace(other.find("cluster.x-k8s.io/v1beta2"),
                std::string("cluster.x-k8s.io/v1beta2").size(), "example.com/v1");
  EXPECT_FALSE(awaitsAdoption(json::parse(other, "copy")));
}

TEST_F(CapiAdoptionTest, TheStampedFailureDomainPicksItsProviderAndFillsThePlace) {
  auto planned = plan(copyOf("VSphereMachine", kNoPlace));
  ASSERT_TRUE(planned.ok()) << planned.status().reason() << ": " << planned.status().message();
  EXPECT_EQ(planned->provider, "vc2");
  EXPECT_EQ(planned->failure_domain, "fd-b");
  using Field = std::pair<std::string, std::string>;
  EXPECT_EQ(
      planned->place,
      (std::vector<Field>{{"datacenter", "dc1"}, {"cluster", "c-b"}, {"datastore", "ds-fd-b"}}));

  auto body = adoptionBody(object_, *planned);
  EXPECT_EQ(json::stringOr(&body, "kind"), "VSphereMachine");
  EXPECT_EQ(json::stringOr(&body, "metadata.name"), "md-0-abc12");
  EXPECT_STREQ(body["metadata"]["labels"]["banlieue.io/provider"].GetString(), "vc2");
  const auto& annotations = body["metadata"]["annotations"];
  EXPECT_STREQ(annotations["banlieue.io/user-data-secret"].GetString(), "md-0-abc12-bootstrap");
  EXPECT_STREQ(annotations["banlieue.io/user-data-revision"].GetString(), "42");
  EXPECT_STREQ(annotations["banlieue.io/user-data-key"].GetString(), "value");
  EXPECT_EQ(json::stringOr(&body, "spec.providerRef.name"), "vc2");
  EXPECT_EQ(json::stringOr(&body, "spec.failureDomain"), "fd-b");
  EXPECT_EQ(json::stringOr(&body, "spec.datastore"), "ds-fd-b");
  EXPECT_FALSE(body["spec"].HasMember("numCpus")) << "the apply sets only what adoption decides";
}

TEST_F(CapiAdoptionTest, TheTemplatesOwnChoicesAreKeptAndAContradictionIsRefused) {
  // A storage class by annotation, and a datastore the template states itself.
  auto planned = plan(copyOf("VSphereMachine", kNoPlace,
                             R"(,"annotations":{"banlieue.io/storage-class":"silver"})"));
  ASSERT_TRUE(planned.ok()) << planned.status().message();
  EXPECT_EQ(planned->place.back(), (std::pair<std::string, std::string>{"datastore", "slow-fd-b"}));

  planned = plan(
      copyOf("VSphereMachine", R"({"template":"ubuntu","datastore":"shared","cluster":"c-b"})"));
  ASSERT_TRUE(planned.ok()) << planned.status().message();
  ASSERT_EQ(planned->place.size(), 1u);
  EXPECT_EQ(planned->place[0].first, "datacenter");

  planned = plan(copyOf("VSphereMachine", R"({"template":"ubuntu","cluster":"c-a"})"));
  ASSERT_FALSE(planned.ok());
  EXPECT_EQ(planned.status().reason(), reasons::kPlacementConflict);
  EXPECT_THAT(planned.status().message(), HasSubstr("spec.cluster is c-a"));

  planned = plan(copyOf("VSphereMachine", R"({"template":"ubuntu","providerRef":{"name":"vc1"}})"));
  ASSERT_FALSE(planned.ok());
  EXPECT_EQ(planned.status().reason(), reasons::kPlacementConflict);
  EXPECT_THAT(planned.status().message(), HasSubstr("Provider vc1"));

  planned = plan(copyOf("VSphereMachine", kNoPlace,
                        R"(,"annotations":{"banlieue.io/storage-class":"platinum"})"));
  ASSERT_FALSE(planned.ok());
  EXPECT_EQ(planned.status().reason(), reasons::kPlacementUnresolved);
  EXPECT_THAT(planned.status().message(), HasSubstr("available: gold, silver"));
}

TEST_F(CapiAdoptionTest, AFailureDomainTheClusterDoesNotAdvertiseIsNamedWithThoseItDoes) {
  auto planned = plan(copyOf("VSphereMachine", kNoPlace), "fd-z");
  ASSERT_FALSE(planned.ok());
  EXPECT_EQ(planned.status().reason(), reasons::kFailureDomainUnknown);
  EXPECT_THAT(planned.status().message(), HasSubstr("(fd-a, fd-b)"));

  // The cluster selects only vc1: fd-b is not one of its failure domains.
  infra_cluster_.spec.provider_refs = {{"vc1"}};
  planned = plan(copyOf("VSphereMachine", kNoPlace), "fd-b");
  ASSERT_FALSE(planned.ok());
  EXPECT_EQ(planned.status().reason(), reasons::kFailureDomainUnknown);
  EXPECT_THAT(planned.status().message(), HasSubstr("(fd-a)"));

  planned = plan(copyOf("VSphereMachine", kNoPlace), "fd-a", "LibvirtCluster");
  ASSERT_FALSE(planned.ok());
  EXPECT_EQ(planned.status().reason(), reasons::kClusterKindMismatch);
}

TEST_F(CapiAdoptionTest, NoMachineIsPlacedBeforeItsBootstrapDataExistsAndIsClusterApis) {
  object_ = json::parse(copyOf("VSphereMachine", kNoPlace), "copy");
  machine_ = machineWith("fd-b", "");
  AdoptionInput in{.infra_machine = &object_,
                   .machine = &machine_,
                   .cluster = &cluster_,
                   .infra_cluster = &infra_cluster_,
                   .infra_cluster_kind = "VSphereCluster",
                   .providers = &providers_,
                   .bootstrap_secret_type = std::nullopt};
  auto planned = planAdoption(in);
  ASSERT_FALSE(planned.ok());
  EXPECT_EQ(planned.status().reason(), reasons::kWaitingForBootstrapData);

  secret_type_.reset();  // named, not there yet
  planned = plan(copyOf("VSphereMachine", kNoPlace));
  ASSERT_FALSE(planned.ok());
  EXPECT_EQ(planned.status().reason(), reasons::kWaitingForBootstrapData);

  // A Machine naming a Secret its bootstrap provider did not make (a Provider's credentials).
  secret_type_ = "Opaque";
  planned = plan(copyOf("VSphereMachine", kNoPlace));
  ASSERT_FALSE(planned.ok());
  EXPECT_EQ(planned.status().reason(), reasons::kUserDataNotAllowed);
  EXPECT_THAT(planned.status().message(), HasSubstr("cluster.x-k8s.io/secret"));
}

TEST_F(CapiAdoptionTest, PausedCopiesAndClustersAreLeftAloneAndMissingObjectsAwaited) {
  auto planned =
      plan(copyOf("VSphereMachine", kNoPlace, R"(,"annotations":{"cluster.x-k8s.io/paused":""})"));
  ASSERT_FALSE(planned.ok());
  EXPECT_EQ(planned.status().reason(), reasons::kPaused);

  cluster_["spec"].AddMember("paused", true, cluster_.GetAllocator());
  planned = plan(copyOf("VSphereMachine", kNoPlace));
  ASSERT_FALSE(planned.ok());
  EXPECT_EQ(planned.status().reason(), reasons::kPaused);

  object_ = json::parse(copyOf("VSphereMachine", kNoPlace), "copy");
  AdoptionInput in{.infra_machine = &object_, .providers = &providers_};
  planned = planAdoption(in);
  ASSERT_FALSE(planned.ok());
  EXPECT_EQ(planned.status().reason(), reasons::kWaitingForMachine);

  planned = plan(copyOf("VSphereMachineTemplate", kNoPlace));
  ASSERT_FALSE(planned.ok());
  EXPECT_EQ(planned.status().reason(), reasons::kUnsupportedKind);
}

TEST_F(CapiAdoptionTest, WithoutAFailureDomainTheTemplateNamesTheProviderAndTheWholePlace) {
  auto planned = plan(copyOf("VSphereMachine", kNoPlace), "");
  ASSERT_FALSE(planned.ok());
  EXPECT_EQ(planned.status().reason(), reasons::kPlacementUnresolved);
  EXPECT_THAT(planned.status().message(),
              HasSubstr("spec.providerRef, spec.datacenter, spec.cluster, spec.datastore"));

  planned = plan(copyOf("VSphereMachine",
                        R"({"template":"ubuntu","providerRef":{"name":"vc1"},"datacenter":"dc1",)"
                        R"("cluster":"c-a","datastore":"ds"})"),
                 "");
  ASSERT_TRUE(planned.ok()) << planned.status().message();
  EXPECT_EQ(planned->provider, "vc1");
  EXPECT_TRUE(planned->place.empty());
  auto body = adoptionBody(object_, *planned);
  EXPECT_FALSE(body["spec"].HasMember("failureDomain"));
}

TEST_F(CapiAdoptionTest, LibvirtAndProxmoxCopiesGetTheirOwnPlaces) {
  providers_ = {provider("kvm", "rack-1", {})};
  auto planned = plan(copyOf("LibvirtMachine", R"({"vcpus":2})"), "rack-1", "LibvirtCluster");
  ASSERT_TRUE(planned.ok()) << planned.status().message();
  using Field = std::pair<std::string, std::string>;
  EXPECT_EQ(planned->place,
            (std::vector<Field>{{"pool", "ds-rack-1"}, {"domainName", "capi-md-0-abc12"}}));

  providers_ = {provider("pve", "pve1", {{"node", "pve1"}})};
  planned = plan(copyOf("ProxmoxMachine", R"({"cores":2})"), "pve1", "ProxmoxCluster");
  ASSERT_TRUE(planned.ok()) << planned.status().message();
  EXPECT_EQ(planned->place, (std::vector<Field>{{"node", "pve1"}, {"storage", "ds-pve1"}}));

  providers_ = {provider("pve", "pve1", {})};  // a failure domain that names no node
  planned = plan(copyOf("ProxmoxMachine", R"({"cores":2})"), "pve1", "ProxmoxCluster");
  ASSERT_FALSE(planned.ok());
  EXPECT_EQ(planned.status().reason(), reasons::kPlacementUnresolved);
  EXPECT_THAT(planned.status().message(), HasSubstr("reports no node"));
}

}  // namespace
}  // namespace banlieue::controller::capi
