// Where a VirtualMachineSnapshot or VirtualMachineRestore goes (roles/common/snapshot_binding.h),
// and the backend-side snapshot name every in-tree backend accepts.
#include "host/roles/common/snapshot_binding.h"

#include <banlieue/sdk/json.h>

#include <gtest/gtest.h>

#include <regex>

namespace banlieue::roles {
namespace {

namespace json = sdk::json;

rapidjson::Document doc(const std::string& text) {
  return json::parse(text, "test object");
}

const char* kPlacedVm =
    R"({"metadata":{"name":"vm1"},"status":{"scheduled":{"providerName":"files"},
        "infrastructureRef":{"apiGroup":"infrastructure.file.example.com","kind":"FileMachine","name":"vm1"}}})";

TEST(SnapshotBindingTest, ASnapshotBindsToItsVmsMachineAndSaysWhyWhenItCannot) {
  auto snapshot = doc(R"({"metadata":{"name":"s"},"spec":{"virtualMachineName":"vm1"}})");
  auto missing = bindSnapshot(snapshot, nullptr);
  EXPECT_FALSE(missing.machine);
  EXPECT_EQ(missing.reason, "VirtualMachineNotFound");
  EXPECT_TRUE(missing.retry);

  auto unplaced = doc(R"({"metadata":{"name":"vm1"},"status":{}})");
  EXPECT_EQ(bindSnapshot(snapshot, &unplaced).reason, "WaitingForMachine");
  auto deleting = doc(R"({"metadata":{"name":"vm1","deletionTimestamp":"2026-12-04T00:00:00Z"}})");
  EXPECT_EQ(bindSnapshot(snapshot, &deleting).reason, "VirtualMachineDeleting");
  EXPECT_FALSE(bindSnapshot(snapshot, &deleting).retry);

  auto vm = doc(kPlacedVm);
  auto bound = bindSnapshot(snapshot, &vm);
  ASSERT_TRUE(bound.machine);
  EXPECT_EQ(*bound.machine,
            (SnapshotMachine{"infrastructure.file.example.com", "FileMachine", "vm1", "files"}));
}

TEST(SnapshotBindingTest, ABoundSnapshotStaysWithItsMachineWhenTheVmMoves) {
  auto snapshot = doc(R"({"spec":{"virtualMachineName":"vm1"},"status":{"machineRef":
      {"apiGroup":"infrastructure.banlieue.io","kind":"LibvirtMachine","name":"vm1","providerName":"kvm"}}})");
  auto vm = doc(kPlacedVm);  // the VM now runs on the file provider
  auto bound = bindSnapshot(snapshot, &vm);
  ASSERT_TRUE(bound.machine);
  EXPECT_EQ(bound.machine->kind, "LibvirtMachine");
  EXPECT_EQ(bound.machine->provider, "kvm");
}

TEST(SnapshotBindingTest, ARestoreGoesWhereItsReadySnapshotIs) {
  auto restore = doc(R"({"spec":{"virtualMachineName":"vm1","snapshotName":"s"}})");
  EXPECT_EQ(bindRestore(restore, nullptr).reason, "SnapshotNotFound");
  auto other = doc(R"({"spec":{"virtualMachineName":"vm2"}})");
  EXPECT_EQ(bindRestore(restore, &other).reason, "SnapshotOfAnotherMachine");
  EXPECT_FALSE(bindRestore(restore, &other).retry) << "only editing the restore can fix it";
  const std::string ref =
      R"("machineRef":{"apiGroup":"g","kind":"FileMachine","name":"vm1","providerName":"files"})";
  auto not_ready = doc(R"({"spec":{"virtualMachineName":"vm1"},"status":{)" + ref +
                       R"(,"conditions":[{"type":"Ready","status":"False"}]}})");
  EXPECT_EQ(bindRestore(restore, &not_ready).reason, "SnapshotNotReady");
  auto ready = doc(R"({"spec":{"virtualMachineName":"vm1"},"status":{)" + ref +
                   R"(,"conditions":[{"type":"Ready","status":"True"}]}})");
  auto bound = bindRestore(restore, &ready);
  ASSERT_TRUE(bound.machine);
  EXPECT_EQ(bound.machine->provider, "files");
}

TEST(SnapshotBindingTest, BackendNamesAreStableUniqueAndWithinEveryBackendsRules) {
  const std::regex pve(R"([A-Za-z][A-Za-z0-9_\-]{1,39})");
  const std::string uid = "7840a896-4cde-416e-9f56-4def24823b91";
  EXPECT_EQ(backendSnapshotName("before-upgrade", uid), "before-upgrade-7840a896");
  EXPECT_EQ(backendSnapshotName("before-upgrade", uid), backendSnapshotName("before-upgrade", uid));
  EXPECT_NE(backendSnapshotName("before-upgrade", uid),
            backendSnapshotName("before-upgrade", "0000a896-4cde-416e-9f56-4def24823b91"))
      << "a snapshot deleted and made again under the same name is another backend snapshot";
  for (const std::string& name :
       std::vector<std::string>{"2026.12.04", "a", std::string(253, 'x'), "with.dots.and-dashes"}) {
    auto backend = backendSnapshotName(name, uid);
    EXPECT_TRUE(std::regex_match(backend, pve)) << name << " -> " << backend;
  }
}

}  // namespace
}  // namespace banlieue::roles
