// libvirt's test driver simulates VMs that never run, so a Provider pointed at test:///default
// would report fake machines Ready: the plugin accepts it only when the Provider says
// spec.connection.allowTestDriver: true. Through the C ABI against the built .so.
#include "plugins/libvirt/test/plugin_harness.h"

#include <gmock/gmock.h>

namespace banlieue::libvirt::testing {
namespace {

using ::testing::HasSubstr;

TEST(LibvirtTestDriverGate, TestEndpointWithoutAllowTestDriverIsRefused) {
  ASSERT_FALSE(pluginPath().empty()) << "BANLIEUE_LIBVIRT_PLUGIN is not set";
  Harness h;
  ProviderSpec spec;
  spec.endpoint = "test:///default";
  spec.allow_test_driver = false;
  auto r = h.create(spec);
  EXPECT_EQ(r.code, BANLIEUE_INVALID_ARGUMENT) << describeOutcome(r);
  EXPECT_EQ(r.reason, "TestDriverNotAllowed") << describeOutcome(r);
  EXPECT_THAT(r.message, HasSubstr("test:///default"));
  EXPECT_THAT(r.message, HasSubstr("spec.connection.allowTestDriver: true"));
  EXPECT_EQ(h.instance(), nullptr);
}

TEST(LibvirtTestDriverGate, TestDomainTypeWithoutAllowTestDriverIsRefusedBeforeConnecting) {
  ASSERT_FALSE(pluginPath().empty()) << "BANLIEUE_LIBVIRT_PLUGIN is not set";
  Harness h;
  ProviderSpec spec;
  spec.endpoint = "qemu+tls://127.0.0.1:1/system";  // never reached
  spec.allow_test_driver = false;
  spec.annotations = R"({"libvirt.banlieue.io/domain-type":"test"})";
  auto r = h.create(spec);
  EXPECT_EQ(r.code, BANLIEUE_INVALID_ARGUMENT) << describeOutcome(r);
  EXPECT_EQ(r.reason, "TestDriverNotAllowed") << describeOutcome(r);
  EXPECT_THAT(r.message, HasSubstr("allowTestDriver"));
}

TEST(LibvirtTestDriverGate, TestEndpointWithAllowTestDriverConnectsAndIntrospects) {
  ASSERT_FALSE(pluginPath().empty()) << "BANLIEUE_LIBVIRT_PLUGIN is not set";
  Harness h;
  ProviderSpec spec;
  spec.endpoint = "test:///default";
  spec.allow_test_driver = true;
  auto created = h.create(spec);
  ASSERT_TRUE(created.ok()) << describeOutcome(created);
  auto introspected = h.introspect(spec);
  ASSERT_TRUE(introspected.ok()) << describeOutcome(introspected);
  auto body = json::parse(introspected.body, "introspect");
  ASSERT_TRUE(body.HasMember("failureDomains")) << introspected.body;
  EXPECT_EQ(body["failureDomains"].Size(), 1u) << introspected.body;
}

}  // namespace
}  // namespace banlieue::libvirt::testing
