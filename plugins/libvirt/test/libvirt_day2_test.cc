// Day-2 changes of a LibvirtMachine against libvirt's test driver (issue #20): a resize reaches
// the domain's definition and, for a running domain, the guest (hot-plug, else a restart); an
// image's volumes are deleted once no machine uses them. Labels: integration;libvirt;day2.
#include "plugins/libvirt/test/test_driver_fixture.h"

namespace banlieue::libvirt::testing {
namespace {

// Issue #20: a resize of a running machine reaches the domain (before, the definition kept its
// first vCPUs and memory and a data disk added later was never attached, while the reply said
// provisioned). The same domain (same UUID), no second one.
TEST_F(LibvirtPluginTest, AResizeReachesTheDefinitionAndTheRunningDomain) {
  ASSERT_TRUE(harness_.reconcile(opts_).ok());
  int count = inspector_.domainCount();
  opts_.vcpus = 2;
  opts_.memory_mib = 256;
  opts_.extra_disks = R"(,{"name":"logs","sizeGiB":1})";
  auto r = harness_.reconcile(opts_);
  ASSERT_TRUE(r.ok()) << describeOutcome(r);
  EXPECT_EQ(inspector_.domainCount(), count);
  EXPECT_EQ(inspector_.domainState(domain()), VIR_DOMAIN_RUNNING);
  std::string live = inspector_.domainXml(domain());
  EXPECT_NE(live.find("<uuid>" + opts_.uid + "</uuid>"), std::string::npos) << live;
  EXPECT_NE(live.find(">2</vcpu>"), std::string::npos) << live;
  EXPECT_NE(live.find("<memory unit='KiB'>262144</memory>"), std::string::npos) << live;
  EXPECT_NE(live.find("volume='" + domain() + "-disk-logs.qcow2'"), std::string::npos) << live;
  auto doc = json::parse(r.body, "reply");
  EXPECT_TRUE(json::boolean(&doc, "status.initialization.provisioned"));
  const auto* conditions = json::find(&doc, "status.conditions");
  ASSERT_TRUE(conditions != nullptr && conditions->IsArray() && conditions->Size() == 1) << r.body;
  EXPECT_EQ(json::stringOr(&(*conditions)[0], "type"), "HardwareApplied") << r.body;
  EXPECT_EQ(json::stringOr(&(*conditions)[0], "status"), "True") << r.body;

  // A shrink of memory is a resize too; an unchanged spec changes nothing.
  opts_.memory_mib = 192;
  ASSERT_TRUE(harness_.reconcile(opts_).ok());
  EXPECT_NE(inspector_.domainXml(domain()).find("<memory unit='KiB'>196608</memory>"),
            std::string::npos);
  std::string settled = inspector_.domainXml(domain());
  ASSERT_TRUE(harness_.reconcile(opts_).ok());
  EXPECT_EQ(inspector_.domainXml(domain()), settled);
}

// A powered-off machine resized: the definition changes, the domain stays off.
TEST_F(LibvirtPluginTest, AResizeOfAStoppedMachineChangesTheDefinitionOnly) {
  opts_.power = "PoweredOff";
  ASSERT_TRUE(harness_.reconcile(opts_).ok());
  opts_.vcpus = 3;
  ASSERT_TRUE(harness_.reconcile(opts_).ok());
  EXPECT_EQ(inspector_.domainState(domain()), VIR_DOMAIN_SHUTOFF);
  EXPECT_NE(inspector_.domainXml(domain()).find(">3</vcpu>"), std::string::npos);
}

// A restart request is one shutdown and one start of the running domain, answered in the
// reply (status.lastRestart); once answered it does nothing more, and on a domain that is off
// it is answered NotRunning.
TEST_F(LibvirtPluginTest, ARestartRequestRestartsTheRunningDomainOnce) {
  ASSERT_TRUE(harness_.reconcile(opts_).ok());
  const int first_id = inspector_.domainId(domain());
  ASSERT_GT(first_id, 0);

  opts_.restart_requested_at = "2026-12-03T08:00:00Z";
  auto r = harness_.reconcile(opts_);
  ASSERT_TRUE(r.ok()) << describeOutcome(r);
  auto doc = json::parse(r.body, "reply");
  EXPECT_EQ(json::stringOr(&doc, "status.lastRestart.requestedAt"), opts_.restart_requested_at)
      << r.body;
  EXPECT_EQ(json::stringOr(&doc, "status.lastRestart.outcome"), "Restarted") << r.body;
  EXPECT_EQ(inspector_.domainState(domain()), VIR_DOMAIN_RUNNING);
  const int second_id = inspector_.domainId(domain());
  EXPECT_NE(second_id, first_id) << "the domain was not started again";

  opts_.status = R"({"lastRestart":{"requestedAt":"2026-12-03T08:00:00Z","outcome":"Restarted"}})";
  r = harness_.reconcile(opts_);
  ASSERT_TRUE(r.ok()) << describeOutcome(r);
  EXPECT_EQ(inspector_.domainId(domain()), second_id) << "an answered request restarted again";

  opts_.power = "PoweredOff";
  ASSERT_TRUE(harness_.reconcile(opts_).ok());
  opts_.restart_requested_at = "2026-12-03T09:00:00Z";
  r = harness_.reconcile(opts_);
  ASSERT_TRUE(r.ok()) << describeOutcome(r);
  doc = json::parse(r.body, "reply");
  EXPECT_EQ(json::stringOr(&doc, "status.lastRestart.outcome"), "NotRunning") << r.body;
  EXPECT_EQ(inspector_.domainState(domain()), VIR_DOMAIN_SHUTOFF);
}

// spec.resizePolicy WaitForRestart: the definition changes, the running guest is left alone and
// the reply says a restart is required (the runtime's Ready follows it); the user's restart
// request then brings the new shape in.
TEST_F(LibvirtPluginTest, AResizeThatWaitsForRestartIsAppliedByTheUsersRestart) {
  opts_.resize_policy = "WaitForRestart";
  ASSERT_TRUE(harness_.reconcile(opts_).ok());
  const int first_id = inspector_.domainId(domain());
  opts_.vcpus = 2;
  auto r = harness_.reconcile(opts_);
  ASSERT_TRUE(r.ok()) << describeOutcome(r);
  EXPECT_EQ(inspector_.domainId(domain()), first_id) << "the guest was restarted";
  EXPECT_NE(inspector_.domainXml(domain()).find(">1</vcpu>"), std::string::npos)
      << "the running guest changed";
  auto doc = json::parse(r.body, "reply");
  const auto* conditions = json::find(&doc, "status.conditions");
  ASSERT_TRUE(conditions != nullptr && conditions->IsArray() && conditions->Size() == 1) << r.body;
  EXPECT_EQ(json::stringOr(&(*conditions)[0], "status"), "False") << r.body;
  EXPECT_EQ(json::stringOr(&(*conditions)[0], "reason"), "RestartRequired") << r.body;

  opts_.restart_requested_at = "2026-12-03T08:00:00Z";
  r = harness_.reconcile(opts_);
  ASSERT_TRUE(r.ok()) << describeOutcome(r);
  EXPECT_NE(inspector_.domainId(domain()), first_id);
  EXPECT_NE(inspector_.domainXml(domain()).find(">2</vcpu>"), std::string::npos);
  doc = json::parse(r.body, "reply");
  conditions = json::find(&doc, "status.conditions");
  ASSERT_TRUE(conditions != nullptr && conditions->IsArray() && conditions->Size() == 1) << r.body;
  EXPECT_EQ(json::stringOr(&(*conditions)[0], "status"), "True") << r.body;
}

// Issue #20, ADR 0037: delete_image removes every volume an import of the VMImage made (this
// build's and an older one's), never another image's or a user's volume, and nothing while a
// machine's disk is backed by one of them (ImageInUse); it answers OK again once they are gone.
TEST_F(LibvirtPluginTest, DeleteImageRemovesTheImportedVolumesOnceNoMachineUsesThem) {
  const std::string image = "img-" + std::to_string(::getpid());
  const std::string current = image + "-0123456789ab.qcow2";
  const std::string older = image + "-fedcba987654.qcow2";
  const std::string other_image = image + "-extra-0123456789ab.qcow2";
  const std::string users_own = image + ".qcow2";
  for (const auto& v : {current, older, other_image, users_own}) inspector_.createVolume(v, 1);
  const std::string request = R"({"image":{"metadata":{"name":)" + quote(image) +
                              R"(,"uid":"img-uid"}},"failureDomain":"fd","resolvedRef":)" +
                              quote(current) + "}";
  // A machine whose root disk is backed by the current build.
  opts_.boot_volume = current;
  ASSERT_TRUE(harness_.reconcile(opts_).ok());
  auto in_use = harness_.deleteImage(request, "img-uid");
  EXPECT_EQ(in_use.code, BANLIEUE_FAILED_PRECONDITION) << describeOutcome(in_use);
  EXPECT_EQ(in_use.reason, "ImageInUse");
  EXPECT_NE(in_use.message.find(current), std::string::npos) << in_use.message;
  EXPECT_TRUE(inspector_.hasVolume(current));
  EXPECT_TRUE(inspector_.hasVolume(older)) << "nothing is removed while any of it is in use";

  ASSERT_TRUE(harness_.finalize(opts_).ok());
  auto gone = harness_.deleteImage(request, "img-uid");
  EXPECT_EQ(gone.code, BANLIEUE_OK) << describeOutcome(gone);
  EXPECT_FALSE(inspector_.hasVolume(current));
  EXPECT_FALSE(inspector_.hasVolume(older));
  EXPECT_TRUE(inspector_.hasVolume(other_image)) << "another image's volume";
  EXPECT_TRUE(inspector_.hasVolume(users_own)) << "a volume no import made";
  auto again = harness_.deleteImage(request, "img-uid");
  EXPECT_EQ(again.code, BANLIEUE_OK) << describeOutcome(again);
  inspector_.deleteVolume(other_image);
  inspector_.deleteVolume(users_own);
}

}  // namespace
}  // namespace banlieue::libvirt::testing
