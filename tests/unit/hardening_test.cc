// Small hardening fixes (issue #25, item 7), each a case that once failed: label values that
// would make every apply invalid, and numbers from a backend that would be undefined behaviour
// to convert. Label `security`.
#include "host/roles/controller/infra_builder.h"
#include "plugins/proxmox/src/pve_client.h"

#include <banlieue/sdk/digest.h>

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <regex>
#include <string>

namespace banlieue {
namespace {

// A label value: at most 63 characters, alphanumeric at both ends, '-', '_' and '.' between.
bool validLabelValue(const std::string& value) {
  static const std::regex kValue("^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$");
  return value.size() <= 63 && std::regex_match(value, kValue);
}

TEST(HardeningTest, AVmNameLongerThanALabelValueStillGivesAValidOwnedByLabel) {
  EXPECT_EQ(controller::ownedByLabelValue("web-1"), "web-1");
  const std::string long_name = std::string(60, 'a') + ".b-" + std::string(100, 'c');
  const std::string other = std::string(60, 'a') + ".b-" + std::string(100, 'd');
  const std::string value = controller::ownedByLabelValue(long_name);
  EXPECT_TRUE(validLabelValue(value)) << value;
  EXPECT_EQ(value, controller::ownedByLabelValue(long_name)) << "stable";
  EXPECT_NE(value, controller::ownedByLabelValue(other)) << "names sharing a prefix differ";
  // A cut that would end on '.' or '-' is trimmed back to an alphanumeric.
  const std::string dotted = std::string(45, 'x') + "." + std::string(40, 'y');
  EXPECT_TRUE(validLabelValue(controller::ownedByLabelValue(dotted)))
      << controller::ownedByLabelValue(dotted);
}

TEST(HardeningTest, ANumberOutOfRangeFromProxmoxIsTheFallbackNotUndefinedBehaviour) {
  rapidjson::Document doc;
  doc.Parse(R"({"huge":1e300,"negative":-1e300,"fine":42.0,"max":9223372036854775807})");
  EXPECT_EQ(proxmox::asInt(&doc["huge"], -1), -1);
  EXPECT_EQ(proxmox::asInt(&doc["negative"], -1), -1);
  EXPECT_EQ(proxmox::asInt(&doc["fine"], -1), 42);
  EXPECT_EQ(proxmox::asInt(&doc["max"], -1), 9223372036854775807LL);
}

// The one streaming digest of the SDK, which the host, libvirt and Proxmox use to check
// artifacts before they reach a backend: the standard test vectors, and refusal of any other
// algorithm (a checksum that cannot be checked fails closed).
TEST(HardeningTest, TheSdkDigestMatchesTheStandardVectorsAndRefusesOtherAlgorithms) {
  EXPECT_EQ(sdk::sha256Hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  sdk::Digest sha512("sha512");
  sha512.update("a");
  sha512.update("bc");  // streamed in pieces
  EXPECT_EQ(sha512.hex(),
            "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a"
            "2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f");
  EXPECT_EQ(sdk::Digest::hexLength("sha512"), 128u);
  EXPECT_FALSE(sdk::Digest::supported("md5"));
  EXPECT_THROW(sdk::Digest("md5"), std::invalid_argument);
}

}  // namespace
}  // namespace banlieue
