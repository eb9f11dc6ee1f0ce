// A minimal ISO 9660 image writer for cloud-init NoCloud seeds: one root directory of small
// files, a Joliet supplementary descriptor for the long lower-case names cloud-init looks for
// (user-data, meta-data, network-config) and a volume label (cidata). Written in-process so the
// plugin needs no genisoimage/xorriso on the provider host (ADR 0006).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace banlieue::libvirt {

struct IsoFile {
  std::string name;     // Joliet name, at most 64 UCS-2 characters, no '/'
  std::string content;  // bytes, any size below 4 GiB
};

inline constexpr size_t kIsoSectorSize = 2048;

// Builds the image. Files keep their names in the Joliet tree; the primary (ISO 9660 level 1)
// tree gets unique 8.3 upper-case aliases for readers without Joliet. The label is written
// upper-case to the primary descriptor and as given to the Joliet one. Same input, same bytes
// (no timestamps), so a rebuilt seed compares equal to the one already uploaded.
// Throws std::invalid_argument on a bad name, a duplicate, or too many files for one sector of
// directory records.
std::string buildIso9660(const std::string& volume_label, std::vector<IsoFile> files);

}  // namespace banlieue::libvirt
