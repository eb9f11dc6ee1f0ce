// Day-2 changes of a LibvirtMachine against libvirt's test driver (issue #20): a resize reaches
// the domain's definition and, for a running domain, the guest (hot-plug, else a restart); an
// image's volumes are deleted once no machine uses them; snapshots (ABI 1.2) are taken, listed,
// reverted to and deleted on the domain, and a machine with snapshots is deleted cleanly; the
// change feed (ABI 1.4, issue #23) names a domain changed behind the plugin's back.
// Labels: integration;libvirt;day2 (the change feed's case also bench).
#include "plugins/libvirt/test/test_driver_fixture.h"

#include <gmock/gmock.h>

#include <chrono>
#include <map>
#include <regex>
#include <thread>
#include <vector>

namespace banlieue::libvirt::testing {
namespace {

// The plugin's condition `type` in a reply body, or null: a reply carries several
// (HardwareApplied, GuestReady).
const rapidjson::Value* replyCondition(const rapidjson::Value& reply, const char* type) {
  const auto* conditions = json::find(&reply, "status.conditions");
  if (conditions == nullptr || !conditions->IsArray()) return nullptr;
  for (const auto& c : conditions->GetArray()) {
    if (json::stringOr(&c, "type") == type) return &c;
  }
  return nullptr;
}

// The fixture's machine once reconciled, as the host sends it to the snapshot slot: with the
// providerID the reply reported copied to spec.providerID.
class LibvirtSnapshotTest : public LibvirtPluginTest {
 protected:
  void provision() {
    auto r = harness_.reconcile(opts_);
    ASSERT_TRUE(r.ok()) << describeOutcome(r);
    auto doc = json::parse(r.body, "reply");
    opts_.provider_id = json::stringOr(&doc, "status.providerID");
    ASSERT_FALSE(opts_.provider_id.empty()) << r.body;
  }
  sdk::abi::CallOutcome snapshot(const std::string& action, const std::string& name,
                                 const std::string& ref = "", bool memory = false) {
    return harness_.snapshot(opts_, snapshotRequest(opts_, action, name, ref, memory));
  }
  static std::string refOf(const sdk::abi::CallOutcome& o) {
    auto doc = json::parse(o.body.empty() ? "{}" : o.body, "reply");
    return json::stringOr(&doc, "status.snapshotRef");
  }
  // status.snapshots of a list reply, by name.
  static std::map<std::string, std::string> listed(const sdk::abi::CallOutcome& o) {
    std::map<std::string, std::string> out;
    auto doc = json::parse(o.body, "reply");
    const auto* list = json::find(&doc, "status.snapshots");
    if (list == nullptr || !list->IsArray()) return out;
    for (const auto& entry : list->GetArray()) {
      out[json::stringOr(&entry, "name")] = json::serialize(entry);
    }
    return out;
  }
  static bool isRfc3339(const std::string& s) {
    static const std::regex kRfc3339(
        R"(^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$)");
    return std::regex_match(s, kRfc3339);
  }
};

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
  const auto* hardware = replyCondition(doc, "HardwareApplied");
  ASSERT_NE(hardware, nullptr) << r.body;
  EXPECT_EQ(json::stringOr(hardware, "type"), "HardwareApplied") << r.body;
  // The guest's signal: the test driver's guest agent answers for a running domain.
  const auto* guest = replyCondition(doc, "GuestReady");
  ASSERT_NE(guest, nullptr) << r.body;
  EXPECT_EQ(json::stringOr(guest, "status"), "True") << r.body;
  EXPECT_EQ(json::stringOr(guest, "reason"), "GuestAgentResponding") << r.body;
  EXPECT_EQ(json::stringOr(hardware, "status"), "True") << r.body;

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
  const auto* hardware = replyCondition(doc, "HardwareApplied");
  ASSERT_NE(hardware, nullptr) << r.body;
  EXPECT_EQ(json::stringOr(hardware, "status"), "False") << r.body;
  EXPECT_EQ(json::stringOr(hardware, "reason"), "RestartRequired") << r.body;

  opts_.restart_requested_at = "2026-12-03T08:00:00Z";
  r = harness_.reconcile(opts_);
  ASSERT_TRUE(r.ok()) << describeOutcome(r);
  EXPECT_NE(inspector_.domainId(domain()), first_id);
  EXPECT_NE(inspector_.domainXml(domain()).find(">2</vcpu>"), std::string::npos);
  doc = json::parse(r.body, "reply");
  hardware = replyCondition(doc, "HardwareApplied");
  ASSERT_NE(hardware, nullptr) << r.body;
  EXPECT_EQ(json::stringOr(hardware, "status"), "True") << r.body;
}

// Whether the reply says "settled" (docs/adr/0054): the host skips the passes that change none
// of a settled machine's inputs, so a reply says it only when a repeat call would change
// nothing. The test driver's guest agent answers at once with an address, so a running domain
// settles as soon as a pass finds it as its spec asks.
TEST_F(LibvirtPluginTest, AReplySaysSettledOnlyWhenTheDomainIsAsItsSpecAsks) {
  auto settled = [](const sdk::abi::CallOutcome& r) {
    auto doc = json::parse(r.body, "reply");
    return json::boolean(&doc, "settled");
  };
  auto r = harness_.reconcile(opts_);
  ASSERT_TRUE(r.ok()) << describeOutcome(r);
  EXPECT_FALSE(settled(r)) << "the pass that defined and started the domain: " << r.body;
  r = harness_.reconcile(opts_);
  ASSERT_TRUE(r.ok()) << describeOutcome(r);
  EXPECT_TRUE(settled(r)) << "running as asked, its agent answering: " << r.body;

  // A pass that carries a task's token looks again next time.
  r = harness_.reconcile(opts_, "shutdown:1");
  ASSERT_TRUE(r.ok()) << describeOutcome(r);
  EXPECT_FALSE(settled(r)) << r.body;

  // A restart request: the pass that restarts does not settle; the next, answered, does.
  opts_.restart_requested_at = "2026-12-03T08:00:00Z";
  r = harness_.reconcile(opts_);
  ASSERT_TRUE(r.ok()) << describeOutcome(r);
  EXPECT_FALSE(settled(r)) << "the pass that restarted the guest: " << r.body;
  opts_.status = R"({"lastRestart":{"requestedAt":"2026-12-03T08:00:00Z","outcome":"Restarted"}})";
  r = harness_.reconcile(opts_);
  ASSERT_TRUE(r.ok()) << describeOutcome(r);
  EXPECT_TRUE(settled(r)) << r.body;

  // A resize the running guest waits for (WaitForRestart) is not at rest: it needs a restart.
  opts_.resize_policy = "WaitForRestart";
  opts_.vcpus = 2;
  r = harness_.reconcile(opts_);
  ASSERT_TRUE(r.ok()) << describeOutcome(r);
  EXPECT_FALSE(settled(r)) << "the running guest lacks a vCPU: " << r.body;

  // Off as asked settles (no agent to wait for).
  opts_.power = "PoweredOff";
  ASSERT_TRUE(harness_.reconcile(opts_).ok());
  r = harness_.reconcile(opts_);
  ASSERT_TRUE(r.ok()) << describeOutcome(r);
  EXPECT_EQ(inspector_.domainState(domain()), VIR_DOMAIN_SHUTOFF);
  EXPECT_TRUE(settled(r)) << r.body;
}

// Issue #23, ADR 0057: the change feed names a domain that changed behind the plugin's back
// (destroyed out of band), from the lifecycle event libvirt pushes, without a call per machine;
// a quiet feed answers by its deadline with nothing changed.
TEST_F(LibvirtPluginTest, TheChangeFeedNamesADomainStoppedBehindItsBack) {
  using ::testing::HasSubstr;
  ASSERT_TRUE(harness_.reconcile(opts_).ok());
  auto r = harness_.reconcile(opts_);
  ASSERT_TRUE(r.ok()) << describeOutcome(r);
  auto machine = json::parse(r.body, "reply");
  const std::string provider_id = json::stringOr(&machine, "status.providerID");
  ASSERT_FALSE(provider_id.empty()) << r.body;

  auto cursorOf = [](const sdk::abi::CallOutcome& o) {
    auto doc = json::parse(o.body, "watch reply");
    return json::stringOr(&doc, "cursor");
  };
  auto first = harness_.watchChanges("", std::chrono::seconds(10));
  ASSERT_TRUE(first.ok()) << describeOutcome(first);
  EXPECT_THAT(first.body, HasSubstr(R"("changed":[])"));

  auto quiet = harness_.watchChanges(cursorOf(first), std::chrono::seconds(3));
  ASSERT_TRUE(quiet.ok()) << describeOutcome(quiet);
  EXPECT_THAT(quiet.body, HasSubstr(R"("changed":[])")) << "nothing changed";
  EXPECT_THAT(quiet.body, HasSubstr(R"("all":false)"));

  std::thread out_of_band([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    virDomainPtr d = virDomainLookupByName(inspector_.get(), domain().c_str());
    ASSERT_NE(d, nullptr);
    EXPECT_EQ(virDomainDestroy(d), 0);
    virDomainFree(d);
  });
  auto started = std::chrono::steady_clock::now();
  auto changed = harness_.watchChanges(cursorOf(quiet), std::chrono::seconds(20));
  out_of_band.join();
  ASSERT_TRUE(changed.ok()) << describeOutcome(changed);
  EXPECT_THAT(changed.body, HasSubstr("\"" + provider_id + "\"")) << changed.body;
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(10))
      << "answered at the change, not at the deadline";

  // The machine's next reconcile starts it again.
  ASSERT_TRUE(harness_.reconcile(opts_).ok());
  EXPECT_EQ(inspector_.domainState(domain()), VIR_DOMAIN_RUNNING);
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

// ABI 1.2 snapshot slot: a snapshot is a libvirt snapshot of the machine's domain. Create is
// idempotent by name (one snapshot in libvirt after two creates), a running domain's snapshot
// holds its memory, list reports every snapshot with the current one marked, and a revert
// brings back the snapshot's definition and power state (here: the vCPUs before a resize and a
// running domain after it was stopped). Delete removes it from libvirt and is OK again.
TEST_F(LibvirtSnapshotTest, SnapshotsAreTakenListedRevertedAndDeletedOnTheDomain) {
  provision();
  auto created = snapshot("create", "before-resize");
  ASSERT_EQ(created.code, BANLIEUE_OK) << describeOutcome(created);
  const std::string ref = refOf(created);
  ASSERT_FALSE(ref.empty()) << created.body;
  auto doc = json::parse(created.body, "reply");
  EXPECT_TRUE(isRfc3339(json::stringOr(&doc, "status.createdAt"))) << created.body;
  EXPECT_TRUE(json::boolean(&doc, "status.memory", false))
      << "a running domain's snapshot is a full system checkpoint: " << created.body;
  EXPECT_EQ(inspector_.snapshotNames(domain()), std::vector<std::string>{"before-resize"});

  auto again = snapshot("create", "before-resize");
  ASSERT_EQ(again.code, BANLIEUE_OK) << describeOutcome(again);
  EXPECT_EQ(refOf(again), ref);
  EXPECT_EQ(inspector_.snapshotNames(domain()).size(), 1u) << "a second create made a snapshot";

  // Stopped and resized after the snapshot.
  opts_.power = "PoweredOff";
  opts_.vcpus = 2;
  ASSERT_TRUE(harness_.reconcile(opts_).ok());
  ASSERT_EQ(inspector_.domainState(domain()), VIR_DOMAIN_SHUTOFF);
  ASSERT_NE(inspector_.domainXml(domain()).find(">2</vcpu>"), std::string::npos);
  auto stopped = snapshot("create", "after-resize");
  ASSERT_EQ(stopped.code, BANLIEUE_OK) << describeOutcome(stopped);
  doc = json::parse(stopped.body, "reply");
  EXPECT_FALSE(json::boolean(&doc, "status.memory", true)) << stopped.body;
  EXPECT_EQ(inspector_.currentSnapshot(domain()), "after-resize");
  // A stopped domain has no memory to keep.
  auto no_memory = snapshot("create", "with-memory", "", /*memory=*/true);
  EXPECT_EQ(no_memory.code, BANLIEUE_UNIMPLEMENTED) << describeOutcome(no_memory);
  EXPECT_EQ(no_memory.reason, "NotSupportedByBackend");
  EXPECT_EQ(inspector_.snapshotNames(domain()).size(), 2u);

  auto list = snapshot("list", "");
  ASSERT_EQ(list.code, BANLIEUE_OK) << describeOutcome(list);
  auto entries = listed(list);
  ASSERT_EQ(entries.size(), 2u) << list.body;
  auto first = json::parse(entries["before-resize"], "entry");
  EXPECT_EQ(json::stringOr(&first, "snapshotRef"), ref);
  EXPECT_TRUE(isRfc3339(json::stringOr(&first, "createdAt"))) << list.body;
  EXPECT_TRUE(json::boolean(&first, "memory", false)) << list.body;
  EXPECT_FALSE(json::boolean(&first, "current", true)) << list.body;
  auto second = json::parse(entries["after-resize"], "entry");
  EXPECT_EQ(json::stringOr(&second, "snapshotRef"), refOf(stopped));
  EXPECT_FALSE(json::boolean(&second, "memory", true)) << list.body;
  EXPECT_TRUE(json::boolean(&second, "current", false)) << list.body;

  auto reverted = snapshot("revert", "before-resize", ref);
  ASSERT_EQ(reverted.code, BANLIEUE_OK) << describeOutcome(reverted);
  EXPECT_EQ(inspector_.domainState(domain()), VIR_DOMAIN_RUNNING)
      << "the snapshot was taken while the domain ran";
  EXPECT_NE(inspector_.domainXml(domain()).find(">1</vcpu>"), std::string::npos)
      << inspector_.domainXml(domain());
  EXPECT_EQ(inspector_.currentSnapshot(domain()), "before-resize");
  entries = listed(snapshot("list", ""));
  ASSERT_EQ(entries.size(), 2u);
  first = json::parse(entries["before-resize"], "entry");
  EXPECT_TRUE(json::boolean(&first, "current", false)) << entries["before-resize"];

  auto deleted = snapshot("delete", "before-resize", ref);
  ASSERT_EQ(deleted.code, BANLIEUE_OK) << describeOutcome(deleted);
  EXPECT_EQ(inspector_.snapshotNames(domain()), std::vector<std::string>{"after-resize"});
  auto deleted_again = snapshot("delete", "before-resize", ref);
  EXPECT_EQ(deleted_again.code, BANLIEUE_OK) << describeOutcome(deleted_again);
  EXPECT_EQ(inspector_.snapshotNames(domain()), std::vector<std::string>{"after-resize"});
}

// A snapshot deleted (by banlieue or out of band) cannot be reverted to: NOT_FOUND,
// SnapshotNotFound, and the domain is left as it was.
TEST_F(LibvirtSnapshotTest, RevertToADeletedSnapshotIsSnapshotNotFound) {
  provision();
  auto created = snapshot("create", "short-lived");
  ASSERT_EQ(created.code, BANLIEUE_OK) << describeOutcome(created);
  ASSERT_EQ(snapshot("delete", "short-lived", refOf(created)).code, BANLIEUE_OK);
  const int id = inspector_.domainId(domain());
  auto reverted = snapshot("revert", "short-lived", refOf(created));
  EXPECT_EQ(reverted.code, BANLIEUE_NOT_FOUND) << describeOutcome(reverted);
  EXPECT_EQ(reverted.reason, "SnapshotNotFound");
  EXPECT_NE(reverted.message.find("short-lived"), std::string::npos) << reverted.message;
  EXPECT_EQ(inspector_.domainId(domain()), id) << "the domain was restarted";
  EXPECT_TRUE(inspector_.snapshotNames(domain()).empty());
}

// Without a domain there is nothing to snapshot: before the first reconcile (no providerID)
// MachineNotProvisioned; a providerID whose domain is gone, MachineNotFound (delete is OK: the
// snapshots went with the domain); a providerID naming another machine's domain is refused and
// that domain gets no snapshot.
TEST_F(LibvirtSnapshotTest, SnapshotsOfAMachineWithoutItsDomainAreRefused) {
  for (const char* action : {"create", "list", "revert", "delete"}) {
    auto r = snapshot(action, std::string(action) == "list" ? "" : "early", "early");
    EXPECT_EQ(r.code, BANLIEUE_FAILED_PRECONDITION) << action << ": " << describeOutcome(r);
    EXPECT_EQ(r.reason, "MachineNotProvisioned") << action;
    EXPECT_FALSE(r.message.empty()) << action;
  }
  EXPECT_FALSE(inspector_.hasDomain(domain())) << "a snapshot call defined the domain";

  opts_.provider_id = "libvirt://" + opts_.uid;  // what reconcile would report; never defined
  for (const char* action : {"create", "list", "revert"}) {
    auto r = snapshot(action, std::string(action) == "list" ? "" : "late", "late");
    EXPECT_EQ(r.code, BANLIEUE_NOT_FOUND) << action << ": " << describeOutcome(r);
    EXPECT_EQ(r.reason, "MachineNotFound") << action;
  }
  EXPECT_EQ(snapshot("delete", "late", "late").code, BANLIEUE_OK);
  EXPECT_FALSE(inspector_.hasDomain(domain()));

  // test:///default's own domain "test" belongs to no machine.
  std::string xml = inspector_.domainXml("test");
  auto begin = xml.find("<uuid>");
  ASSERT_NE(begin, std::string::npos) << xml;
  opts_.provider_id = "libvirt://" + xml.substr(begin + 6, 36);
  auto foreign = snapshot("create", "not-mine");
  EXPECT_EQ(foreign.code, BANLIEUE_FAILED_PRECONDITION) << describeOutcome(foreign);
  EXPECT_EQ(foreign.reason, "ProviderIDMismatch");
  EXPECT_TRUE(inspector_.snapshotNames("test").empty());

  opts_.provider_id = "vsphere://vm-42";
  auto other_backend = snapshot("create", "not-mine");
  EXPECT_EQ(other_backend.code, BANLIEUE_INVALID_ARGUMENT) << describeOutcome(other_backend);
  EXPECT_EQ(other_backend.reason, "InvalidProviderID");
}

// A machine with snapshots (taken running and stopped, one of them out of band with virsh) is
// deleted like any other: finalize answers OK, the domain, its snapshot metadata and its volumes
// (which hold the internal qcow2 snapshots) are gone, and the same machine made again starts
// without snapshots.
TEST_F(LibvirtSnapshotTest, AMachineWithSnapshotsIsFinalizedCleanly) {
  provision();
  ASSERT_EQ(snapshot("create", "running-state").code, BANLIEUE_OK);
  opts_.power = "PoweredOff";
  ASSERT_TRUE(harness_.reconcile(opts_).ok());
  ASSERT_EQ(snapshot("create", "stopped-state").code, BANLIEUE_OK);
  inspector_.createSnapshot(domain(), "users-own");
  auto entries = listed(snapshot("list", ""));
  EXPECT_EQ(entries.size(), 3u) << "list reports every snapshot, banlieue's or not";
  EXPECT_EQ(entries.count("users-own"), 1u);
  opts_.power = "PoweredOn";
  ASSERT_TRUE(harness_.reconcile(opts_).ok());
  ASSERT_EQ(inspector_.domainState(domain()), VIR_DOMAIN_RUNNING);

  auto finalized = harness_.finalize(opts_);
  ASSERT_EQ(finalized.code, BANLIEUE_OK) << describeOutcome(finalized);
  EXPECT_FALSE(inspector_.hasDomain(domain()));
  EXPECT_FALSE(inspector_.hasVolume(domain() + "-root.qcow2"));
  EXPECT_EQ(harness_.finalize(opts_).code, BANLIEUE_OK);

  opts_.provider_id.clear();
  provision();
  EXPECT_TRUE(inspector_.snapshotNames(domain()).empty());
  auto list = snapshot("list", "");
  ASSERT_EQ(list.code, BANLIEUE_OK) << describeOutcome(list);
  EXPECT_TRUE(listed(list).empty()) << list.body;
}

}  // namespace
}  // namespace banlieue::libvirt::testing
