#include "plugins/libvirt/src/iso9660.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <stdexcept>

namespace banlieue::libvirt {
namespace {

// Both-endian fields (ECMA-119 7.2.3, 7.3.3): little-endian copy followed by big-endian.
void put16Both(std::string& out, size_t at, uint16_t v) {
  out[at] = static_cast<char>(v & 0xff);
  out[at + 1] = static_cast<char>(v >> 8);
  out[at + 2] = static_cast<char>(v >> 8);
  out[at + 3] = static_cast<char>(v & 0xff);
}

void put32Le(std::string& out, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) out[at + i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

void put32Be(std::string& out, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) out[at + i] = static_cast<char>((v >> (8 * (3 - i))) & 0xff);
}

void put32Both(std::string& out, size_t at, uint32_t v) {
  put32Le(out, at, v);
  put32Be(out, at + 4, v);
}

void putText(std::string& out, size_t at, size_t width, const std::string& text) {
  for (size_t i = 0; i < width; ++i) out[at + i] = i < text.size() ? text[i] : ' ';
}

// UCS-2 big-endian, padded with UCS-2 spaces (Joliet descriptor fields).
void putUcs2(std::string& out, size_t at, size_t width_bytes, const std::string& text) {
  for (size_t i = 0; i + 1 < width_bytes; i += 2) {
    size_t c = i / 2;
    out[at + i] = 0;
    out[at + i + 1] = c < text.size() ? text[c] : ' ';
  }
}

std::string ucs2(const std::string& ascii) {
  std::string out;
  for (char c : ascii) {
    out.push_back('\0');
    out.push_back(c);
  }
  return out;
}

// Unset dates in a volume descriptor: sixteen '0' digits and a zero offset (ECMA-119 8.4.26.1).
void putUnsetDate(std::string& out, size_t at) {
  for (int i = 0; i < 16; ++i) out[at + i] = '0';
  out[at + 16] = 0;
}

struct Entry {
  std::string identifier;  // bytes as recorded (d-characters or UCS-2)
  uint32_t extent = 0;
  uint32_t size = 0;
  bool directory = false;
};

// One directory record (ECMA-119 9.1), padded to an even length.
std::string record(const Entry& e) {
  size_t len = 33 + e.identifier.size();
  if (len % 2 != 0) ++len;
  std::string r(len, '\0');
  r[0] = static_cast<char>(len);
  put32Both(r, 2, e.extent);
  put32Both(r, 10, e.size);
  // Recording date 1970-01-01 00:00:00 UTC: fixed so the image is reproducible.
  r[18] = 70;
  r[19] = 1;
  r[20] = 1;
  r[25] = static_cast<char>(e.directory ? 0x02 : 0x00);
  put16Both(r, 28, 1);  // volume sequence number
  r[32] = static_cast<char>(e.identifier.size());
  std::copy(e.identifier.begin(), e.identifier.end(), r.begin() + 33);
  return r;
}

// Packs records into whole sectors; a record never crosses a sector boundary (ECMA-119 6.8.1.1).
std::string directory(const std::vector<Entry>& entries) {
  std::string out;
  for (const auto& e : entries) {
    std::string r = record(e);
    size_t used = out.size() % kIsoSectorSize;
    if (used + r.size() > kIsoSectorSize) out.append(kIsoSectorSize - used, '\0');
    out += r;
  }
  size_t rem = out.size() % kIsoSectorSize;
  if (rem != 0 || out.empty()) out.append(kIsoSectorSize - rem, '\0');
  return out;
}

// A path table with only the root (ECMA-119 9.4).
std::string pathTable(uint32_t root_extent, bool big_endian) {
  std::string t(10, '\0');
  t[0] = 1;
  if (big_endian) {
    put32Be(t, 2, root_extent);
    t[7] = 1;
  } else {
    put32Le(t, 2, root_extent);
    t[6] = 1;
  }
  return t;
}

// ISO 9660 level 1 alias: up to 8 d-characters, no extension, ";1"; unique by a numeric tail.
std::string primaryName(const std::string& name, std::set<std::string>& taken) {
  std::string base;
  for (char c : name) {
    if (base.size() == 8) break;
    auto u = static_cast<unsigned char>(c);
    base.push_back(std::isalnum(u) ? static_cast<char>(std::toupper(u)) : '_');
  }
  std::string candidate = base;
  for (int n = 1; taken.count(candidate) != 0; ++n) {
    std::string tail = std::to_string(n);
    candidate = base.substr(0, 8 - std::min<size_t>(8, tail.size())) + tail;
  }
  taken.insert(candidate);
  return candidate + ".;1";
}

std::string descriptor(bool joliet, const std::string& label, uint32_t total_sectors,
                       uint32_t path_table_size, uint32_t l_path, uint32_t m_path,
                       const Entry& root) {
  std::string d(kIsoSectorSize, '\0');
  d[0] = static_cast<char>(joliet ? 2 : 1);
  d.replace(1, 5, "CD001");
  d[6] = 1;
  if (joliet) {
    putUcs2(d, 8, 32, "");
    putUcs2(d, 40, 32, label);
    d.replace(88, 3, "%/E");  // UCS-2 level 3
  } else {
    putText(d, 8, 32, "");
    std::string upper;
    for (char c : label)
      upper.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
    putText(d, 40, 32, upper);
  }
  put32Both(d, 80, total_sectors);
  put16Both(d, 120, 1);
  put16Both(d, 124, 1);
  put16Both(d, 128, kIsoSectorSize);
  put32Both(d, 132, path_table_size);
  put32Le(d, 140, l_path);
  put32Be(d, 148, m_path);
  Entry root_entry = root;
  root_entry.identifier = std::string(1, '\0');
  std::string r = record(root_entry);
  d.replace(156, r.size(), r);
  for (size_t at : {190, 318, 446, 574}) {
    if (joliet) {
      putUcs2(d, at, 128, "");
    } else {
      putText(d, at, 128, "");
    }
  }
  for (size_t at : {702, 739, 776}) {
    if (joliet) {
      putUcs2(d, at, 36, "");
      d[at + 36] = 0;
    } else {
      putText(d, at, 37, "");
    }
  }
  for (size_t at : {813, 830, 847, 864}) putUnsetDate(d, at);
  d[881] = 1;  // file structure version
  return d;
}

}  // namespace

std::string buildIso9660(const std::string& volume_label, std::vector<IsoFile> files) {
  if (volume_label.empty() || volume_label.size() > 16) {
    throw std::invalid_argument("iso9660: the volume label must have 1 to 16 characters");
  }
  std::set<std::string> names;
  for (const auto& f : files) {
    if (f.name.empty() || f.name.size() > 64 || f.name.find('/') != std::string::npos ||
        f.name == "." || f.name == "..") {
      throw std::invalid_argument("iso9660: bad file name '" + f.name + "'");
    }
    for (char c : f.name) {
      if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) {
        throw std::invalid_argument("iso9660: file names must be printable ASCII");
      }
    }
    if (!names.insert(f.name).second) {
      throw std::invalid_argument("iso9660: duplicate file name '" + f.name + "'");
    }
    if (f.content.size() > 0xFFFFFFFFull) {
      throw std::invalid_argument("iso9660: file '" + f.name + "' is too large");
    }
  }
  // Directory records are sorted by identifier (ECMA-119 9.3); Joliet by UCS-2 code units,
  // which for ASCII is the same order as the names.
  std::sort(files.begin(), files.end(),
            [](const IsoFile& a, const IsoFile& b) { return a.name < b.name; });

  // Sectors: 16 system area, 16 PVD, 17 Joliet SVD, 18 terminator, 19-22 path tables,
  // then the two root directories, then file data.
  constexpr uint32_t kPathTables = 19;
  std::set<std::string> taken;
  std::vector<std::string> primary_names;
  primary_names.reserve(files.size());
  for (const auto& f : files) primary_names.push_back(primaryName(f.name, taken));

  auto sectors = [](size_t bytes) {
    return static_cast<uint32_t>((bytes + kIsoSectorSize - 1) / kIsoSectorSize);
  };
  // Directory sizes do not depend on extents, so measure them with placeholder extents first.
  auto entries = [&](bool joliet, uint32_t self, uint32_t self_size,
                     const std::vector<uint32_t>& extents) {
    std::vector<Entry> list;
    list.push_back({std::string(1, '\0'), self, self_size, true});
    list.push_back({std::string(1, '\1'), self, self_size, true});
    for (size_t i = 0; i < files.size(); ++i) {
      list.push_back({joliet ? ucs2(files[i].name) : primary_names[i],
                      extents.empty() ? 0 : extents[i],
                      static_cast<uint32_t>(files[i].content.size()), false});
    }
    return list;
  };
  uint32_t primary_dir_sectors = sectors(directory(entries(false, 0, 0, {})).size());
  uint32_t joliet_dir_sectors = sectors(directory(entries(true, 0, 0, {})).size());
  uint32_t primary_dir = kPathTables + 4;
  uint32_t joliet_dir = primary_dir + primary_dir_sectors;
  uint32_t next = joliet_dir + joliet_dir_sectors;
  std::vector<uint32_t> extents;
  for (const auto& f : files) {
    extents.push_back(next);
    next += std::max<uint32_t>(1, sectors(f.content.size()));
  }
  uint32_t total = next;

  Entry primary_root{
      {}, primary_dir, primary_dir_sectors * static_cast<uint32_t>(kIsoSectorSize), true};
  Entry joliet_root{
      {}, joliet_dir, joliet_dir_sectors * static_cast<uint32_t>(kIsoSectorSize), true};

  std::string image(static_cast<size_t>(total) * kIsoSectorSize, '\0');
  auto place = [&](uint32_t sector, const std::string& bytes) {
    image.replace(static_cast<size_t>(sector) * kIsoSectorSize, bytes.size(), bytes);
  };
  place(16, descriptor(false, volume_label, total, 10, kPathTables, kPathTables + 1, primary_root));
  place(17,
        descriptor(true, volume_label, total, 10, kPathTables + 2, kPathTables + 3, joliet_root));
  std::string terminator(kIsoSectorSize, '\0');
  terminator[0] = static_cast<char>(255);
  terminator.replace(1, 5, "CD001");
  terminator[6] = 1;
  place(18, terminator);
  place(kPathTables, pathTable(primary_dir, false));
  place(kPathTables + 1, pathTable(primary_dir, true));
  place(kPathTables + 2, pathTable(joliet_dir, false));
  place(kPathTables + 3, pathTable(joliet_dir, true));
  place(primary_dir, directory(entries(false, primary_dir, primary_root.size, extents)));
  place(joliet_dir, directory(entries(true, joliet_dir, joliet_root.size, extents)));
  for (size_t i = 0; i < files.size(); ++i) place(extents[i], files[i].content);
  return image;
}

}  // namespace banlieue::libvirt
