// The seed ISO writer, read back with an independent walk of the on-disk structures
// (ECMA-119 descriptors, path tables, directory records; Joliet names in UCS-2).
#include "plugins/libvirt/src/iso9660.h"

#include <gtest/gtest.h>

#include <map>
#include <stdexcept>

namespace banlieue::libvirt {
namespace {

uint32_t le32(const std::string& s, size_t at) {
  return static_cast<uint8_t>(s[at]) | static_cast<uint8_t>(s[at + 1]) << 8 |
         static_cast<uint8_t>(s[at + 2]) << 16 |
         static_cast<uint32_t>(static_cast<uint8_t>(s[at + 3])) << 24;
}
uint32_t be32(const std::string& s, size_t at) {
  return static_cast<uint32_t>(static_cast<uint8_t>(s[at])) << 24 |
         static_cast<uint8_t>(s[at + 1]) << 16 | static_cast<uint8_t>(s[at + 2]) << 8 |
         static_cast<uint8_t>(s[at + 3]);
}

struct Listed {
  std::map<std::string, std::string> files;  // name -> content
  std::string label;
};

// Reads the root directory a descriptor points at; Joliet names are decoded from UCS-2.
Listed readTree(const std::string& iso, size_t descriptor_sector, bool joliet) {
  const size_t d = descriptor_sector * kIsoSectorSize;
  Listed out;
  for (size_t i = 0; i < 32; i += joliet ? 2 : 1) {
    char c = iso[d + 40 + i + (joliet ? 1 : 0)];
    if (c != ' ') out.label += c;
  }
  // Both-endian fields must agree.
  EXPECT_EQ(le32(iso, d + 80), be32(iso, d + 84));
  EXPECT_EQ(le32(iso, d + 80) * kIsoSectorSize, iso.size());
  uint32_t root = le32(iso, d + 156 + 2);
  uint32_t root_size = le32(iso, d + 156 + 10);
  EXPECT_EQ(root, be32(iso, d + 156 + 6));
  // The L path table names the same root extent.
  EXPECT_EQ(le32(iso, le32(iso, d + 140) * kIsoSectorSize + 2), root);
  EXPECT_EQ(be32(iso, be32(iso, d + 148) * kIsoSectorSize + 2), root);
  size_t pos = root * kIsoSectorSize;
  size_t end = pos + root_size;
  int seen = 0;
  while (pos < end) {
    auto len = static_cast<uint8_t>(iso[pos]);
    if (len == 0) {  // rest of this sector is padding
      pos = (pos / kIsoSectorSize + 1) * kIsoSectorSize;
      continue;
    }
    uint8_t name_len = static_cast<uint8_t>(iso[pos + 32]);
    std::string raw = iso.substr(pos + 33, name_len);
    bool dir = (iso[pos + 25] & 0x02) != 0;
    if (seen++ >= 2) {
      EXPECT_FALSE(dir);
      std::string name;
      if (joliet) {
        for (size_t i = 1; i < raw.size(); i += 2) name += raw[i];
      } else {
        name = raw;
      }
      uint32_t extent = le32(iso, pos + 2);
      uint32_t size = le32(iso, pos + 10);
      EXPECT_EQ(size, be32(iso, pos + 14));
      out.files[name] = iso.substr(extent * kIsoSectorSize, size);
    }
    pos += len;
  }
  return out;
}

TEST(Iso9660, JolietTreeHoldsTheLongNamesAndContent) {
  std::string iso = buildIso9660("cidata", {{"user-data", "#cloud-config\nhostname: a\n"},
                                            {"meta-data", "instance-id: x\n"},
                                            {"network-config", "version: 2\n"}});
  ASSERT_EQ(iso.size() % kIsoSectorSize, 0u);
  EXPECT_EQ(iso.substr(16 * kIsoSectorSize + 1, 5), "CD001");
  EXPECT_EQ(iso[16 * kIsoSectorSize], 1);
  EXPECT_EQ(iso[17 * kIsoSectorSize], 2);
  EXPECT_EQ(iso.substr(17 * kIsoSectorSize + 88, 3), "%/E");
  EXPECT_EQ(static_cast<uint8_t>(iso[18 * kIsoSectorSize]), 255);

  Listed joliet = readTree(iso, 17, true);
  EXPECT_EQ(joliet.label, "cidata");
  ASSERT_EQ(joliet.files.size(), 3u);
  EXPECT_EQ(joliet.files["user-data"], "#cloud-config\nhostname: a\n");
  EXPECT_EQ(joliet.files["meta-data"], "instance-id: x\n");
  EXPECT_EQ(joliet.files["network-config"], "version: 2\n");

  Listed primary = readTree(iso, 16, false);
  EXPECT_EQ(primary.label, "CIDATA");
  ASSERT_EQ(primary.files.size(), 3u);
  EXPECT_EQ(primary.files["USER_DAT.;1"], "#cloud-config\nhostname: a\n");
  EXPECT_EQ(primary.files["NETWORK_.;1"], "version: 2\n");
}

TEST(Iso9660, PrimaryAliasesStayUniqueAndContentSpansSectors) {
  std::string big(5000, 'x');
  big[4999] = 'y';
  std::string iso = buildIso9660("cidata", {{"user-data-a", "1"}, {"user-data-b", big}});
  Listed primary = readTree(iso, 16, false);
  ASSERT_EQ(primary.files.size(), 2u);
  EXPECT_EQ(primary.files.count("USER_DAT.;1"), 1u);
  EXPECT_EQ(primary.files.count("USER_DA1.;1"), 1u);
  Listed joliet = readTree(iso, 17, true);
  EXPECT_EQ(joliet.files["user-data-b"], big);
}

TEST(Iso9660, ManyFilesSpillIntoASecondDirectorySector) {
  std::vector<IsoFile> files;
  files.reserve(40);
  for (int i = 0; i < 40; ++i) {
    files.push_back({"a-rather-long-file-name-number-" + std::to_string(i), std::to_string(i)});
  }
  std::string iso = buildIso9660("cidata", files);
  Listed joliet = readTree(iso, 17, true);
  ASSERT_EQ(joliet.files.size(), 40u);
  EXPECT_EQ(joliet.files["a-rather-long-file-name-number-39"], "39");
}

TEST(Iso9660, SameInputSameBytes) {
  auto a = buildIso9660("cidata", {{"meta-data", "m"}, {"user-data", "u"}});
  auto b = buildIso9660("cidata", {{"user-data", "u"}, {"meta-data", "m"}});
  EXPECT_EQ(a, b);
}

TEST(Iso9660, RejectsBadNamesAndLabels) {
  EXPECT_THROW(buildIso9660("", {{"a", ""}}), std::invalid_argument);
  EXPECT_THROW(buildIso9660("a-label-that-is-too-long", {}), std::invalid_argument);
  EXPECT_THROW(buildIso9660("cidata", {{"a/b", ""}}), std::invalid_argument);
  EXPECT_THROW(buildIso9660("cidata", {{"a", ""}, {"a", "x"}}), std::invalid_argument);
  EXPECT_THROW(buildIso9660("cidata", {{"bad\nname", ""}}), std::invalid_argument);
}

}  // namespace
}  // namespace banlieue::libvirt
