// The vSphere plugin never sends the vCenter password in clear (issue #25, item 4): a plain
// http:// endpoint is refused with a message that says why. Label `security`.
#include "plugins/vsphere/src/http_transport.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>

namespace banlieue::vsphere {
namespace {

TEST(VsphereEndpointSecurityTest, APlainHttpEndpointIsRefused) {
  try {
    (void)Url::parse("http://vc.example.com/sdk");
    FAIL() << "http:// accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("in clear"));
  }
  EXPECT_EQ(Url::parse("HTTPS://vc.example.com/sdk").scheme, "https");
}

}  // namespace
}  // namespace banlieue::vsphere
