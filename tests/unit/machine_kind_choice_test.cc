// Which infrastructure kind a VM placed on a Provider becomes (issue #21): every kind a
// plugin serves can be chosen by a Provider, the class's first is the default, and a kind the
// class does not serve is refused with the kinds it does.
#include "host/roles/controller/machine_kind_choice.h"

#include <banlieue/sdk/json.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace banlieue::controller {
namespace {

using ::testing::HasSubstr;

rapidjson::Document parse(const std::string& text) {
  return sdk::json::parse(text, "test");
}

const char* const kTwoKinds =
    R"({"metadata": {"name": "qemu"}, "status": {
        "machineKind": {"apiVersion": "infrastructure.qemu.example.com/v1alpha1",
                        "kind": "QemuMachine"},
        "machineKinds": [
          {"apiVersion": "infrastructure.qemu.example.com/v1alpha1", "kind": "QemuMachine"},
          {"apiVersion": "infrastructure.qemu.example.com/v1alpha1", "kind": "QemuMicroVM"}]}})";

rapidjson::Document provider(const std::string& machine_kind) {
  return parse(
      R"({"metadata": {"name": "lab", "namespace": "vms"}, "spec": {)" +
      (machine_kind.empty() ? std::string() : R"("machineKind": ")" + machine_kind + "\"") + "}}");
}

TEST(MachineKindChoiceTest, EveryPublishedKindIsListedOnce) {
  auto kinds = publishedMachineKinds(parse(kTwoKinds));
  ASSERT_EQ(kinds.size(), 2U);
  EXPECT_EQ(kinds[0].kind, "QemuMachine");
  EXPECT_EQ(kinds[1].kind, "QemuMicroVM");
  // A class written before machineKinds existed still has its one kind.
  auto old = publishedMachineKinds(
      parse(R"({"status": {"machineKind": {"apiVersion": "a/v1", "kind": "AMachine"}}})"));
  ASSERT_EQ(old.size(), 1U);
  EXPECT_EQ(old[0].kind, "AMachine");
  EXPECT_TRUE(publishedMachineKinds(parse(R"({"status": {}})")).empty());
}

TEST(MachineKindChoiceTest, TheClassesFirstKindUnlessTheProviderNamesAnother) {
  auto cls = parse(kTwoKinds);
  auto plain = provider("");
  auto chosen = chooseMachineKind(&cls, &plain, "qemu");
  ASSERT_TRUE(chosen.ok()) << chosen.status().message();
  EXPECT_EQ(chosen->kind, "QemuMachine");
  // Without the Provider in the cache yet, the default too.
  EXPECT_EQ(chooseMachineKind(&cls, nullptr, "qemu")->kind, "QemuMachine");

  auto micro = provider("QemuMicroVM");
  chosen = chooseMachineKind(&cls, &micro, "qemu");
  ASSERT_TRUE(chosen.ok()) << chosen.status().message();
  EXPECT_EQ(chosen->kind, "QemuMicroVM");
  EXPECT_EQ(chosen->api_version, "infrastructure.qemu.example.com/v1alpha1");
}

TEST(MachineKindChoiceTest, AKindTheClassDoesNotServeIsRefusedWithTheKindsItDoes) {
  auto cls = parse(kTwoKinds);
  auto wrong = provider("LibvirtMachine");
  auto chosen = chooseMachineKind(&cls, &wrong, "qemu");
  ASSERT_FALSE(chosen.ok());
  EXPECT_EQ(chosen.status().reason(), "MachineKindNotServed");
  EXPECT_THAT(chosen.status().message(), HasSubstr("vms/lab"));
  EXPECT_THAT(chosen.status().message(), HasSubstr("QemuMachine, QemuMicroVM"));
}

TEST(MachineKindChoiceTest, NothingPublishedYetSaysWhoPublishes) {
  auto empty = parse(R"({"metadata": {"name": "qemu"}})");
  auto chosen = chooseMachineKind(&empty, nullptr, "qemu");
  ASSERT_FALSE(chosen.ok());
  EXPECT_EQ(chosen.status().reason(), "MachineKindNotPublished");
  EXPECT_THAT(chosen.status().message(), HasSubstr("provider pod"));
  EXPECT_EQ(chooseMachineKind(nullptr, nullptr, "gone").status().reason(),
            "MachineKindNotPublished");
}

}  // namespace
}  // namespace banlieue::controller
