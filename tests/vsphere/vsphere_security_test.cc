// The vSphere plugin never sends the vCenter password in clear (issue #25, item 4): a plain
// http:// endpoint is refused with a message that says why. And names in the URLs it builds
// stay what they are (item 7). Label `security`.
#include "plugins/vsphere/src/http_transport.h"
#include "plugins/vsphere/src/image_import.h"

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

// An imported ISO goes to banlieue-images/<file> on the datastore, and its URL names that file:
// a checksum from the request holding '/' or "..", or a datacenter name holding '?', '#', '%'
// or a space, cannot move the upload elsewhere or add parameters.
TEST(VsphereUrlSecurityTest, TheIsoFileStaysInItsFolderWhateverTheNames) {
  EXPECT_EQ(isoDatastorePath("kairos-1", "0123456789abcdef0123"),
            "banlieue-images/kairos-1-0123456789abcdef.iso");
  const std::string path = isoDatastorePath("a/../b", "../../../etc?#%");
  EXPECT_EQ(path.find('/'), path.rfind('/')) << path;
  EXPECT_EQ(path.find(".."), std::string::npos) << path;
  EXPECT_EQ(path.rfind("banlieue-images/", 0), 0u) << path;
  EXPECT_EQ(datastoreFileTarget("banlieue-images/a b?c#d%e.iso", "DC 0/x", "ds#1"),
            "/folder/banlieue-images/a%20b%3Fc%23d%25e.iso?dcPath=DC%200%2Fx&dsName=ds%231");
  EXPECT_EQ(datastoreFileTarget("banlieue-images/..", "dc", "ds"),
            "/folder/banlieue-images/%2E%2E?dcPath=dc&dsName=ds");
}

}  // namespace
}  // namespace banlieue::vsphere
