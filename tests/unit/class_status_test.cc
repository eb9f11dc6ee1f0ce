// VMClass status (issue #22): which Providers can serve a class, and what each lacks when none
// can — the class filters of the scheduler, applied per failure domain.
#include "host/roles/controller/class_status.h"

#include <gtest/gtest.h>

namespace banlieue::controller {
namespace {

api::VMClass smallClass(const std::string& firmware = "efi") {
  api::VMClass c;
  c.metadata.name = "small";
  c.metadata.generation = 4;
  c.spec.hardware.cpus = 2;
  c.spec.hardware.memory_mib = 1024;
  c.spec.hardware.disks.push_back({.name = "root", .size_gib = 10, .storage_class = "fast"});
  c.spec.network = api::ClassNetwork{};
  c.spec.network->interfaces.push_back({.name = "eth0", .network_class = "lan"});
  c.spec.firmware = firmware;
  return c;
}

api::ProviderFailureDomain domain(const std::string& name, std::vector<std::string> storage,
                                  std::vector<std::string> network,
                                  std::vector<std::string> features = {}) {
  api::ProviderFailureDomain fd;
  fd.name = name;
  fd.attributes.available_storage_classes = std::move(storage);
  fd.attributes.available_network_classes = std::move(network);
  fd.attributes.features = std::move(features);
  return fd;
}

api::Provider provider(const std::string& ns, const std::string& name,
                       std::vector<api::ProviderFailureDomain> fds) {
  api::Provider p;
  p.metadata.namespace_ = ns;
  p.metadata.name = name;
  p.status.failure_domains = std::move(fds);
  return p;
}

TEST(ClassStatusTest, ListsTheProvidersWithAFailureDomainThatFitsSortedAndCounted) {
  auto status = classStatus(
      smallClass(),
      {provider("b", "vsphere",
                {domain("dc0", {"fast"}, {"lan"}), domain("dc1", {"slow"}, {"lan"}),
                 domain("dc2", {"fast", "slow"}, {"lan", "dmz"})}),
       provider("a", "libvirt", {domain("host", {"fast"}, {"dmz"})}), provider("a", "pve", {})});
  ASSERT_EQ(status.providers.size(), 1u);
  EXPECT_EQ(status.provider_count, 1);
  EXPECT_EQ(status.providers[0].provider_namespace, "b");
  EXPECT_EQ(status.providers[0].provider_name, "vsphere");
  EXPECT_EQ(status.providers[0].failure_domains, (std::vector<std::string>{"dc0", "dc2"}));
  EXPECT_EQ(status.observed_generation, 4);
  ASSERT_EQ(status.conditions.size(), 1u);
  EXPECT_EQ(status.conditions[0].type, "Ready");
  EXPECT_EQ(status.conditions[0].status, "True");
  EXPECT_EQ(status.conditions[0].reason, "ProvidersAvailable");
  EXPECT_EQ(status.conditions[0].message,
            "served by 1 of 3 Provider(s): b/vsphere (2 failure domains)");
  EXPECT_EQ(status.conditions[0].observed_generation, 4);
}

TEST(ClassStatusTest, WhenNoneFitsTheMessageSaysWhatEachLacks) {
  auto status = classStatus(smallClass("efi-secure"),
                            {provider("ns", "lv", {domain("host", {"fast"}, {"lan"})}),
                             provider("ns", "old", {domain("h", {"fast"}, {"lan"}, {"vtpm"})}),
                             provider("ns", "new", {})});
  EXPECT_TRUE(status.providers.empty());
  EXPECT_EQ(status.provider_count, 0);
  EXPECT_EQ(status.conditions[0].status, "False");
  EXPECT_EQ(status.conditions[0].reason, "NoProviderSatisfies");
  EXPECT_EQ(status.conditions[0].message,
            "none of 3 Provider(s) can serve this class: ns/lv: efi-secure firmware requested but "
            "'efiSecureBoot' feature absent; ns/new: publishes no failure domain yet; ns/old: "
            "efi-secure firmware requested but 'efiSecureBoot' feature absent");
}

TEST(ClassStatusTest, WithoutProvidersTheClassSaysSo) {
  auto status = classStatus(smallClass(), {});
  EXPECT_EQ(status.conditions[0].status, "False");
  EXPECT_EQ(status.conditions[0].reason, "NoProviders");
  EXPECT_EQ(status.conditions[0].message, "no Provider exists to serve this class");
}

// The flake behind ControllerVmTest.GetBvmclassShowsWhichProvidersCanServeTheClass: p2 gained a
// fitting failure domain (written: served by 2) and lost it again before the class cache showed
// that write; the cache still held the status from before it (served by 1), equal to what was
// wanted, and the reconciler skipped the write, leaving "2 of 2" for five minutes.
TEST(ClassStatusTest, AStatusEqualToALaggingCacheIsWrittenWhenTheLastWriteSaidOtherwise) {
  auto lan = [] { return provider("ns", "p2", {domain("fd-p2", {"fast"}, {"lan"})}); };
  auto dmz = [] { return provider("ns", "p2", {domain("fd-p2", {"fast"}, {"dmz"})}); };
  auto p1 = [] { return provider("ns", "p1", {domain("fd-p1", {"fast"}, {"lan"})}); };
  auto one_of_two = classStatus(smallClass(), {p1(), dmz()});
  auto two_of_two = classStatus(smallClass(), {p1(), lan()});
  ASSERT_NE(one_of_two.conditions[0].message, two_of_two.conditions[0].message);
  // The cache lags behind the last write.
  EXPECT_TRUE(classStatusWriteNeeded(one_of_two, one_of_two, &two_of_two));
  // Caught up, or never written by this process: the cache decides.
  EXPECT_FALSE(classStatusWriteNeeded(one_of_two, one_of_two, &one_of_two));
  EXPECT_FALSE(classStatusWriteNeeded(one_of_two, one_of_two, nullptr));
  EXPECT_TRUE(classStatusWriteNeeded(one_of_two, two_of_two, nullptr));
  // Someone else wrote over ours: the cache shows it.
  EXPECT_TRUE(classStatusWriteNeeded(one_of_two, two_of_two, &one_of_two));
}

}  // namespace
}  // namespace banlieue::controller
