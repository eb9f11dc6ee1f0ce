// The scheduler's filters, tie-break, rejection text and placement stickiness (spec §4.1.2 with
// the §9 quirks fixed: anti-affinity on topology values excluding the VM itself, image readiness
// by Provider name and namespace and by zone).
#include "host/roles/controller/scheduler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace banlieue::controller {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

api::ProviderFailureDomain fd(const std::string& name, api::StringMap labels = {}) {
  api::ProviderFailureDomain out;
  out.name = name;
  out.labels = std::move(labels);
  out.labels.emplace("name", name);
  out.attributes.available_storage_classes = {"fast"};
  out.attributes.available_network_classes = {"lan"};
  out.attributes.features = {"hotAddCPU"};
  out.attributes.raw = {{"datacenter", "dc1"}, {"cluster", "c-" + name}};
  return out;
}

api::Provider provider(const std::string& name, std::vector<api::ProviderFailureDomain> fds,
                       api::StringMap labels = {}) {
  api::Provider out;
  out.metadata.name = name;
  out.metadata.namespace_ = "team";
  out.metadata.labels = std::move(labels);
  out.spec.provider_class_ref.name = "libvirt";
  out.status.failure_domains = std::move(fds);
  return out;
}

class SchedulerTest : public ::testing::Test {
 protected:
  SchedulerTest() {
    vm_.metadata.name = "web-1";
    vm_.metadata.namespace_ = "team";
    vm_.metadata.labels = {{"app", "web"}};
    class_.metadata.name = "small";
    class_.spec.hardware.disks = {{.name = "os", .size_gib = 10, .storage_class = "fast"}};
    class_.spec.network = api::ClassNetwork{};
    class_.spec.network->interfaces = {{.name = "eth0", .network_class = "lan"}};
    class_.spec.features = {"hotAddCPU"};
    image_.metadata.name = "debian";
  }

  void imageReady(const std::string& provider_name, std::vector<api::ImageZone> zones = {},
                  const std::string& ns = "team") {
    image_.status.per_provider.push_back({.provider_name = provider_name,
                                          .provider_namespace = ns,
                                          .ready = true,
                                          .zones = std::move(zones)});
  }

  SchedulingResult run() {
    SchedulingInput input{.vm = &vm_, .vm_class = &class_, .image = &image_};
    input.providers = providers_;
    input.siblings = siblings_;
    return schedule(input);
  }

  api::VirtualMachine sibling(const std::string& name, const std::string& provider_name,
                              const std::string& failure_domain) {
    api::VirtualMachine out;
    out.metadata.name = name;
    out.metadata.namespace_ = "team";
    out.metadata.labels = {{"app", "web"}};
    out.status.scheduled =
        api::ScheduledPlacement{.provider_name = provider_name, .failure_domain = failure_domain};
    return out;
  }

  api::VirtualMachine vm_;
  api::VMClass class_;
  api::VMImage image_;
  std::vector<api::Provider> providers_;
  std::vector<api::VirtualMachine> siblings_;
};

TEST_F(SchedulerTest, AbsentProviderSelectorMatchesEveryProviderAndTieBreakIsLexicographic) {
  providers_ = {provider("zeta", {fd("a")}), provider("alpha", {fd("z"), fd("b")})};
  imageReady("zeta");
  imageReady("alpha");
  auto result = run();
  ASSERT_TRUE(result.scheduled) << result.message;
  EXPECT_EQ(result.placement.provider_name, "alpha");
  EXPECT_EQ(result.placement.failure_domain, "b");
  EXPECT_EQ(result.placement.provider_class, "libvirt");
  EXPECT_FALSE(result.placement.kept);
}

TEST_F(SchedulerTest, ProviderSelectorFiltersOnProviderLabelsAndNamespace) {
  auto other_namespace = provider("aaa", {fd("a")}, {{"tier", "gold"}});
  other_namespace.metadata.namespace_ = "elsewhere";
  providers_ = {other_namespace, provider("p1", {fd("a")}, {{"tier", "silver"}}),
                provider("p2", {fd("a")}, {{"tier", "gold"}})};
  imageReady("aaa", {}, "elsewhere");
  imageReady("p1");
  imageReady("p2");
  vm_.spec.placement.provider_selector = api::LabelSelector{.match_labels = {{"tier", "gold"}}};
  auto result = run();
  ASSERT_TRUE(result.scheduled) << result.message;
  EXPECT_EQ(result.placement.provider_name, "p2");

  vm_.spec.placement.provider_selector->match_labels = {{"tier", "bronze"}};
  result = run();
  EXPECT_FALSE(result.scheduled);
  EXPECT_EQ(result.reason, "NoProviderMatched");
  EXPECT_EQ(result.message,
            "no Provider in namespace team matches providerSelector tier=bronze: the namespace "
            "holds 2 Providers, none with those labels");
}

TEST_F(SchedulerTest, MatchExpressionsOperators) {
  providers_ = {provider("p1", {fd("a")}, {{"tier", "gold"}}), provider("p2", {fd("a")}),
                provider("p3", {fd("a")}, {{"tier", "silver"}})};
  for (const char* p : {"p1", "p2", "p3"}) imageReady(p);
  auto pick = [&](const std::string& op, std::vector<std::string> values) {
    vm_.spec.placement.provider_selector = api::LabelSelector{
        .match_expressions = {{.key = "tier", .operator_ = op, .values = std::move(values)}}};
    auto result = run();
    return result.scheduled ? result.placement.provider_name : result.reason;
  };
  EXPECT_EQ(pick("In", {"silver", "bronze"}), "p3");
  EXPECT_EQ(pick("NotIn", {"gold"}), "p2");  // absent key satisfies NotIn
  EXPECT_EQ(pick("Exists", {}), "p1");
  EXPECT_EQ(pick("DoesNotExist", {}), "p2");
  EXPECT_EQ(pick("Bogus", {}), "NoProviderMatched");
}

TEST_F(SchedulerTest, FailureDomainSelectorRejectsWithPerCandidateText) {
  providers_ = {provider("p1", {fd("a", {{"zone", "z1"}}), fd("b", {{"zone", "z2"}})})};
  imageReady("p1");
  vm_.spec.placement.failure_domain_selector = api::LabelSelector{.match_labels = {{"zone", "z2"}}};
  auto result = run();
  ASSERT_TRUE(result.scheduled);
  EXPECT_EQ(result.placement.failure_domain, "b");

  vm_.spec.placement.failure_domain_selector->match_labels = {{"zone", "z9"}};
  result = run();
  EXPECT_EQ(result.reason, "NoFailureDomainMatched");
  EXPECT_EQ(result.message,
            "no failure domain matched all constraints: p1/a: failureDomainSelector did not "
            "match; p1/b: failureDomainSelector did not match");
}

TEST_F(SchedulerTest, ImageReadinessIsPerProviderNameAndNamespace) {
  providers_ = {provider("p1", {fd("a")})};
  imageReady("p1", {}, "other-namespace");  // a same-named Provider elsewhere does not count
  auto result = run();
  EXPECT_EQ(result.reason, "ImageNotReady");
  EXPECT_EQ(result.message,
            "image not ready on any candidate provider: p1/a: image debian not ready on this "
            "provider");
  imageReady("p1");
  EXPECT_TRUE(run().scheduled);
}

TEST_F(SchedulerTest, ImageReadinessIsPerZoneWhenTheRowHasZones) {
  providers_ = {provider("p1", {fd("a"), fd("b")})};
  imageReady("p1", {{.name = "a", .ready = false}, {.name = "b", .ready = true}});
  auto result = run();
  ASSERT_TRUE(result.scheduled) << result.message;
  EXPECT_EQ(result.placement.failure_domain, "b");

  image_.status.per_provider[0].zones[1].ready = false;
  result = run();
  EXPECT_EQ(result.reason, "ImageNotReady");
  EXPECT_THAT(result.message, HasSubstr("p1/a: image debian not ready in this failure domain"));
}

// Per-target rows (docs/adr/0053): a failure domain's readiness is that of the row for the pool
// the VM's root disk lands on there; without such a row, any Ready row of the failure domain.
TEST_F(SchedulerTest, ImageReadinessIsThatOfTheRowForTheVmsPool) {
  auto p = provider("p1", {fd("a"), fd("b")});
  p.spec.capabilities = api::ProviderCapabilities{};
  p.spec.capabilities->storage_classes = {{.name = "fast", .target = {{"pool", "pool-a"}}}};
  providers_ = {p};
  auto row = [](const std::string& domain, const std::string& pool, bool ready) {
    return api::ImageZone{
        .name = domain + "/" + pool, .failure_domain = domain, .target = pool, .ready = ready};
  };
  imageReady("p1", {row("a", "pool-a", false), row("a", "pool-b", true), row("b", "pool-a", true),
                    row("b", "pool-b", false)});
  auto result = run();
  ASSERT_TRUE(result.scheduled) << result.message;
  EXPECT_EQ(result.placement.failure_domain, "b");

  auto& zones = image_.status.per_provider[0].zones;
  zones[2].ready = false;
  result = run();
  EXPECT_EQ(result.reason, "ImageNotReady")
      << "pool-b is Ready in a, but the VM's disk is on pool-a";
  EXPECT_THAT(result.message, HasSubstr("p1/a: image debian not ready in this failure domain"));
  EXPECT_THAT(result.message, HasSubstr("p1/b: image debian not ready in this failure domain"));

  zones[0].ready = true;
  result = run();
  ASSERT_TRUE(result.scheduled) << result.message;
  EXPECT_EQ(result.placement.failure_domain, "a");

  // A class whose pool has no row of its own: any Ready row of the failure domain.
  providers_[0].spec.capabilities->storage_classes[0].target = {{"pool", "pool-x"}};
  zones = {row("a", "pool-a", false), row("b", "pool-b", true)};
  result = run();
  ASSERT_TRUE(result.scheduled) << result.message;
  EXPECT_EQ(result.placement.failure_domain, "b");
}

TEST(ImageZoneForTest, TheRowOfTheTargetElseAReadyRowOfTheFailureDomain) {
  api::ImageProviderStatus row;
  row.zones = {{.name = "a/pool-a", .failure_domain = "a", .target = "pool-a", .ready = false},
               {.name = "a/pool-b", .failure_domain = "a", .target = "pool-b", .ready = true},
               {.name = "b", .ready = false}};
  EXPECT_EQ(imageZoneFor(row, "a", "pool-a"), &row.zones[0]);
  EXPECT_EQ(imageZoneFor(row, "a", "pool-b"), &row.zones[1]);
  EXPECT_EQ(imageZoneFor(row, "a", "pool-x"), &row.zones[1]) << "a Ready row of a";
  EXPECT_EQ(imageZoneFor(row, "a", ""), &row.zones[1]);
  EXPECT_EQ(imageZoneFor(row, "b", "pool-a"), &row.zones[2]) << "a row named after the domain";
  EXPECT_EQ(imageZoneFor(row, "c", ""), nullptr);
}

TEST_F(SchedulerTest, StorageNetworkAndFeatureFiltersNameTheFirstMissingItem) {
  providers_ = {provider("p1", {fd("a")})};
  imageReady("p1");
  class_.spec.hardware.disks.push_back({.name = "data", .size_gib = 5, .storage_class = "bulk"});
  auto result = run();
  EXPECT_EQ(result.reason, "NoFailureDomainMatched");
  EXPECT_EQ(result.message,
            "no failure domain matched all constraints: p1/a: storage class 'bulk' not available");

  class_.spec.hardware.disks.pop_back();
  class_.spec.network->interfaces.push_back({.name = "eth1", .network_class = "dmz"});
  EXPECT_THAT(run().message, HasSubstr("p1/a: network class 'dmz' not available"));

  class_.spec.network->interfaces.pop_back();
  class_.spec.features.emplace_back("gpuPassthrough");
  EXPECT_THAT(run().message, HasSubstr("p1/a: feature 'gpuPassthrough' not available"));

  class_.spec.features.pop_back();
  class_.spec.tpm_enabled = true;  // tpmEnabled needs vtpm even when features omit it
  EXPECT_THAT(run().message, HasSubstr("p1/a: feature 'vtpm' not available"));
  providers_[0].status.failure_domains[0].attributes.features.emplace_back("vtpm");
  EXPECT_TRUE(run().scheduled);
}

TEST_F(SchedulerTest, EfiSecureFirmwareNeedsSecureBootFeature) {
  providers_ = {provider("p1", {fd("a")})};
  imageReady("p1");
  class_.spec.firmware = "bios";
  EXPECT_TRUE(run().scheduled);
  class_.spec.firmware = "efi-secure";
  auto result = run();
  EXPECT_EQ(result.reason, "FirmwareUnsupported");
  EXPECT_THAT(result.message,
              HasSubstr("p1/a: efi-secure firmware requested but 'efiSecureBoot' feature absent"));
  providers_[0].status.failure_domains[0].attributes.features.emplace_back("efiSecureBoot");
  EXPECT_TRUE(run().scheduled);
}

TEST_F(SchedulerTest, ProviderWithoutFailureDomainsIsNamedInTheRefusal) {
  providers_ = {provider("p1", {})};
  imageReady("p1");
  auto result = run();
  EXPECT_EQ(result.reason, "NoFailureDomainMatched");
  EXPECT_THAT(result.message, HasSubstr("p1: no failure domains reported"));
}

TEST_F(SchedulerTest, RejectionMessageIsCappedAtTenReasons) {
  std::vector<api::ProviderFailureDomain> fds;
  for (int i = 0; i < 12; ++i) fds.push_back(fd("fd" + std::to_string(10 + i)));
  providers_ = {provider("p1", fds)};
  imageReady("p1");
  class_.spec.features.emplace_back("gpuPassthrough");
  auto result = run();
  EXPECT_EQ(result.reason, "NoFailureDomainMatched");
  EXPECT_THAT(result.message, HasSubstr("p1/fd19: feature"));
  EXPECT_THAT(result.message, Not(HasSubstr("p1/fd20")));
  EXPECT_THAT(result.message, HasSubstr("; … and 2 more"));
  EXPECT_EQ(joinCapped({"a", "b", "c"}, 2), "a; b; … and 1 more");
  EXPECT_EQ(joinCapped({"a", "b"}, 2), "a; b");
}

TEST_F(SchedulerTest, RequiredAntiAffinityComparesTopologyValuesNotNames) {
  // Sibling in failure domain "x" (zone z1). Candidate "a" has no sibling by name but shares
  // zone z1, so it is blocked; "b" is in z2.
  providers_ = {provider(
      "p1", {fd("a", {{"zone", "z1"}}), fd("b", {{"zone", "z2"}}), fd("x", {{"zone", "z1"}})})};
  imageReady("p1");
  siblings_ = {sibling("web-0", "p1", "x")};
  vm_.spec.placement.anti_affinity = {
      {.topology_key = "zone", .label_selector = {.match_labels = {{"app", "web"}}}}};
  auto result = run();
  ASSERT_TRUE(result.scheduled) << result.message;
  EXPECT_EQ(result.placement.failure_domain, "b");

  // A sibling that the selector does not match blocks nothing.
  siblings_[0].metadata.labels = {{"app", "db"}};
  EXPECT_EQ(run().placement.failure_domain, "a");
}

TEST_F(SchedulerTest, AntiAffinityExcludesTheVmItself) {
  providers_ = {provider("p1", {fd("a", {{"zone", "z1"}})})};
  imageReady("p1");
  // The sibling list comes from the cache and includes this VM, placed in "a" already.
  siblings_ = {sibling("web-1", "p1", "a")};
  vm_.spec.placement.anti_affinity = {
      {.topology_key = "zone", .label_selector = {.match_labels = {{"app", "web"}}}}};
  auto result = run();
  ASSERT_TRUE(result.scheduled) << result.message;
  EXPECT_EQ(result.placement.failure_domain, "a");
}

TEST_F(SchedulerTest, RequiredAntiAffinityWithNoCandidateLeftFails) {
  providers_ = {provider("p1", {fd("a", {{"zone", "z1"}}), fd("b", {{"zone", "z2"}})})};
  imageReady("p1");
  siblings_ = {sibling("web-0", "p1", "a"), sibling("web-2", "p1", "b")};
  vm_.spec.placement.anti_affinity = {
      {.topology_key = "zone", .label_selector = {.match_labels = {{"app", "web"}}}}};
  auto result = run();
  EXPECT_EQ(result.reason, "AntiAffinityUnsatisfied");
  EXPECT_EQ(result.message, "required anti-affinity rule on topologyKey=zone left no candidates");

  // Failure domains without the topology label are never blocked.
  providers_[0].status.failure_domains.push_back(fd("c"));
  EXPECT_EQ(run().placement.failure_domain, "c");
}

TEST_F(SchedulerTest, PreferredAntiAffinityRanksButNeverRefuses) {
  providers_ = {provider("p1", {fd("a", {{"zone", "z1"}}), fd("b", {{"zone", "z2"}})})};
  imageReady("p1");
  siblings_ = {sibling("web-0", "p1", "a")};
  vm_.spec.placement.anti_affinity = {{.topology_key = "zone",
                                       .label_selector = {.match_labels = {{"app", "web"}}},
                                       .mode = "preferred"}};
  EXPECT_EQ(run().placement.failure_domain, "b");
  siblings_.push_back(sibling("web-2", "p1", "b"));
  auto result = run();
  ASSERT_TRUE(result.scheduled);
  EXPECT_EQ(result.placement.failure_domain, "a");  // all violate equally: tie-break
}

TEST_F(SchedulerTest, PreferredAntiAffinitySpreadsByCount) {
  providers_ = {provider(
      "p1", {fd("a", {{"zone", "z1"}}), fd("b", {{"zone", "z2"}}), fd("c", {{"zone", "z3"}})})};
  imageReady("p1");
  vm_.spec.placement.anti_affinity = {{.topology_key = "zone",
                                       .label_selector = {.match_labels = {{"app", "web"}}},
                                       .mode = "preferred"}};
  siblings_ = {sibling("w0", "p1", "a"), sibling("w1", "p1", "b"), sibling("w2", "p1", "c"),
               sibling("w3", "p1", "a"), sibling("w4", "p1", "b")};
  EXPECT_EQ(run().placement.failure_domain, "c");  // the only zone with one replica
  siblings_.push_back(sibling("w5", "p1", "c"));
  EXPECT_EQ(run().placement.failure_domain, "a");  // 2/2/2: tie-break
}

TEST_F(SchedulerTest, ExistingPlacementIsKeptUntilTheUserSelectsElsewhere) {
  providers_ = {provider("p1", {fd("a")}, {{"site", "one"}}),
                provider("p2", {fd("b")}, {{"site", "two"}})};
  imageReady("p1");
  imageReady("p2");
  vm_.status.scheduled = api::ScheduledPlacement{
      .provider_name = "p2", .provider_class = "libvirt", .failure_domain = "b"};
  auto result = run();
  ASSERT_TRUE(result.scheduled);
  EXPECT_EQ(result.placement.provider_name, "p2");  // tie-break would say p1
  EXPECT_TRUE(result.placement.kept);

  // Capability churn (the image being re-imported) does not move a placed VM.
  image_.status.per_provider[1].ready = false;
  EXPECT_EQ(run().placement.provider_name, "p2");

  // The user points the VM elsewhere: it moves.
  vm_.spec.placement.provider_selector = api::LabelSelector{.match_labels = {{"site", "one"}}};
  result = run();
  ASSERT_TRUE(result.scheduled);
  EXPECT_EQ(result.placement.provider_name, "p1");
  EXPECT_FALSE(result.placement.kept);

  // Its failure domain vanishing from the Provider also frees it.
  vm_.spec.placement.provider_selector.reset();
  providers_[1].status.failure_domains.clear();
  EXPECT_EQ(run().placement.provider_name, "p1");
}

// A Provider being deleted takes no new VM and keeps none: its workload is removing its
// machines (docs/adr/0024-provider-deletion-order.md).
TEST_F(SchedulerTest, AProviderBeingDeletedIsNeverChosenNorKept) {
  providers_ = {provider("p1", {fd("a")}), provider("p2", {fd("b")})};
  imageReady("p1");
  imageReady("p2");
  vm_.status.scheduled = api::ScheduledPlacement{
      .provider_name = "p1", .provider_class = "libvirt", .failure_domain = "a"};
  providers_[0].metadata.deletion_timestamp = "2026-12-01T00:00:00Z";
  auto result = run();
  ASSERT_TRUE(result.scheduled) << result.message;
  EXPECT_EQ(result.placement.provider_name, "p2");
  EXPECT_FALSE(result.placement.kept);

  providers_[1].metadata.deletion_timestamp = "2026-12-01T00:00:00Z";
  result = run();
  EXPECT_FALSE(result.scheduled);
  EXPECT_EQ(result.reason, "NoProviderMatched");
  EXPECT_EQ(result.message, "no Provider in namespace team can take VMs: p1, p2 being deleted");
}

TEST_F(SchedulerTest, BackendIdsComeFromZoneTargetThenDefaultThenClassName) {
  auto p = provider("p1", {fd("a")});
  p.spec.capabilities = api::ProviderCapabilities{};
  p.spec.capabilities->storage_classes = {
      {.name = "fast",
       .target = {{"pool", "default-pool"}},
       .per_zone = {{.datacenter = "dc1", .cluster = "c-a", .target = {{"pool", "zone-pool"}}}}}};
  p.spec.capabilities->network_classes = {{.name = "other", .target = {{"network", "x"}}}};
  providers_ = {p};
  imageReady("p1");
  auto result = run();
  ASSERT_TRUE(result.scheduled);
  ASSERT_EQ(result.placement.resolved_storage.size(), 1u);
  EXPECT_EQ(result.placement.resolved_storage[0].class_name, "fast");
  EXPECT_EQ(result.placement.resolved_storage[0].backend_id, "zone-pool");
  ASSERT_EQ(result.placement.resolved_networks.size(), 1u);
  EXPECT_EQ(result.placement.resolved_networks[0].backend_id, "lan");  // no mapping

  providers_[0].spec.capabilities->storage_classes[0].per_zone[0].cluster = "c-other";
  EXPECT_EQ(run().placement.resolved_storage[0].backend_id, "default-pool");
  EXPECT_EQ(run().placement.failure_domain_raw.at("datacenter"), "dc1");
}

}  // namespace
}  // namespace banlieue::controller
