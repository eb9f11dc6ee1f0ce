// The fixture the Proxmox plugin's integration tests share: a fake PVE API (fake_pve.py) and
// the real plugin driven through the C ABI, with a leak check after every test.
#pragma once

#include "tests/proxmox/fake_pve.h"
#include "tests/proxmox/plugin_driver.h"

#include <banlieue/sdk/json.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace banlieue::proxmox::testing {

namespace json = sdk::json;
using sdk::abi::CallOutcome;

inline constexpr const char* kCapabilities =
    R"({"storageClasses":[{"name":"gold","target":{"storage":"local-lvm"}},)"
    R"({"name":"seed-iso","target":{"storage":"local"}}],)"
    R"("networkClasses":[{"name":"prod","target":{"bridge":"vmbr1","vlan":"20"}}],)"
    R"("features":["vtpm"]})";

inline const rapidjson::Value* guest(const rapidjson::Document& state, const std::string& name) {
  for (const auto& vm : state["vms"].GetArray()) {
    if (vm["template"].GetInt() == 0 && json::stringOr(&vm, "name") == name) return &vm;
  }
  return nullptr;
}

class ProxmoxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fake_ = std::make_unique<FakePve>();
    driver_ = std::make_unique<Driver>();
    CallOutcome created = driver_->create(fake_->instanceConfig(FakePve::kSecret, kCapabilities));
    ASSERT_TRUE(created.ok()) << created.reason << ": " << created.message;
  }
  void TearDown() override {
    driver_.reset();
    // The leak check: whatever a test created, it also deleted through the plugin.
    EXPECT_EQ(fake_->guestCount(), 0) << json::serialize(fake_->state());
  }
  void remove(const std::string& object) {
    CallOutcome gone = driver_->drive("finalize", object);
    EXPECT_TRUE(gone.ok()) << gone.reason << ": " << gone.message;
  }

  std::unique_ptr<FakePve> fake_;
  std::unique_ptr<Driver> driver_;
};

// The host's copy of the object once the machine was provisioned: what it sends after a
// successful reconcile.
inline std::string provisioned(const std::string& object, int vmid) {
  return object.substr(0, object.size() - 1) +
         R"(,"status":{"initialization":{"provisioned":true},"vmid":)" + std::to_string(vmid) +
         R"(,"node":"pve1","providerID":"proxmox://pve1/)" + std::to_string(vmid) + R"("}})";
}

}  // namespace banlieue::proxmox::testing
