#include "host/plugin/elf_exports.h"

#include "host/plugin/file_checks.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <set>
#include <type_traits>

namespace banlieue::plugin {
namespace {

constexpr off_t kMaxTableBytes = off_t{64} << 20;  // .dynsym/.dynstr beyond this are not real

Status notElf(const std::filesystem::path& library, const std::string& why) {
  return error(Code::kInvalidArgument, "NotAnElfLibrary", library.string() + ": " + why);
}

// Reads whole ranges of an untrusted file; every range is checked against its size first.
class ElfFile {
 public:
  ElfFile(const std::filesystem::path& path, int fd, off_t size)
      : path_(path), fd_(fd), size_(size) {}

  StatusOr<std::string> read(uint64_t offset, uint64_t length, const char* what) const {
    if (offset > static_cast<uint64_t>(size_) || length > static_cast<uint64_t>(size_) - offset ||
        length > static_cast<uint64_t>(kMaxTableBytes)) {
      return notElf(path_, std::string(what) + " lies outside the file");
    }
    std::string bytes(static_cast<size_t>(length), '\0');
    size_t done = 0;
    while (done < bytes.size()) {
      ssize_t n =
          ::pread(fd_, bytes.data() + done, bytes.size() - done, static_cast<off_t>(offset + done));
      if (n <= 0) return notElf(path_, std::string("could not read ") + what);
      done += static_cast<size_t>(n);
    }
    return bytes;
  }

  const std::filesystem::path& path() const { return path_; }

 private:
  const std::filesystem::path& path_;
  int fd_;
  off_t size_;
};

// A NUL-terminated name at `offset` in a string table, or empty when it runs off the end.
std::string nameAt(const std::string& strtab, uint64_t offset) {
  if (offset >= strtab.size()) return {};
  auto end = strtab.find('\0', static_cast<size_t>(offset));
  return end == std::string::npos ? std::string()
                                  : strtab.substr(static_cast<size_t>(offset), end - offset);
}

template <class T>
T at(const std::string& bytes, size_t offset) {
  static_assert(std::is_trivially_copyable_v<T>);
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return value;
}

// The version names a library defines (.gnu.version_d); the linker also emits each as an
// absolute symbol, which is a version node and not an export. Verdef and Verdaux have the
// same layout in both ELF classes.
template <class Shdr>
StatusOr<std::set<std::string>> versionNames(const ElfFile& file, const Shdr& verdef,
                                             const std::string& strtab) {
  std::set<std::string> names;
  auto bytes = file.read(verdef.sh_offset, verdef.sh_size, ".gnu.version_d");
  if (!bytes.ok()) return bytes.status();
  size_t offset = 0;
  for (size_t i = 0; i < 4096 && offset + sizeof(Elf64_Verdef) <= bytes->size(); ++i) {
    auto def = at<Elf64_Verdef>(*bytes, offset);
    if (offset + def.vd_aux + sizeof(Elf64_Verdaux) <= bytes->size()) {
      names.insert(nameAt(strtab, at<Elf64_Verdaux>(*bytes, offset + def.vd_aux).vda_name));
    }
    if (def.vd_next == 0) break;
    offset += def.vd_next;
  }
  return names;
}

template <class Ehdr, class Shdr, class Sym>
StatusOr<std::vector<std::string>> readExports(const ElfFile& file) {
  auto header_bytes = file.read(0, sizeof(Ehdr), "the ELF header");
  if (!header_bytes.ok()) return header_bytes.status();
  auto header = at<Ehdr>(*header_bytes, 0);
  if (header.e_type != ET_DYN) return notElf(file.path(), "is not a shared object (ET_DYN)");
  if (header.e_shoff == 0 || header.e_shnum == 0 || header.e_shentsize != sizeof(Shdr)) {
    return notElf(file.path(), "has no section headers, so its exports cannot be listed");
  }
  auto section_bytes = file.read(header.e_shoff, uint64_t{header.e_shnum} * sizeof(Shdr),
                                 "the section header table");
  if (!section_bytes.ok()) return section_bytes.status();
  std::vector<Shdr> sections(header.e_shnum);
  std::memcpy(sections.data(), section_bytes->data(), section_bytes->size());

  const Shdr* dynsym = nullptr;
  const Shdr* verdef = nullptr;
  for (const auto& s : sections) {
    if (s.sh_type == SHT_DYNSYM && dynsym == nullptr) dynsym = &s;
    if (s.sh_type == SHT_GNU_verdef && verdef == nullptr) verdef = &s;
  }
  if (dynsym == nullptr) return std::vector<std::string>{};  // nothing dynamic at all
  if (dynsym->sh_link >= sections.size() || dynsym->sh_entsize != sizeof(Sym)) {
    return notElf(file.path(), ".dynsym is malformed");
  }
  const Shdr& strsec = sections[dynsym->sh_link];
  auto strtab = file.read(strsec.sh_offset, strsec.sh_size, ".dynstr");
  if (!strtab.ok()) return strtab.status();
  auto symbols = file.read(dynsym->sh_offset, dynsym->sh_size, ".dynsym");
  if (!symbols.ok()) return symbols.status();
  std::set<std::string> versions;
  if (verdef != nullptr && verdef->sh_link == dynsym->sh_link) {
    auto names = versionNames(file, *verdef, *strtab);
    if (!names.ok()) return names.status();
    versions = std::move(names).value();
  }

  std::vector<std::string> exported;
  for (size_t offset = 0; offset + sizeof(Sym) <= symbols->size(); offset += sizeof(Sym)) {
    auto sym = at<Sym>(*symbols, offset);
    unsigned binding = ELF64_ST_BIND(sym.st_info);
    unsigned visibility = ELF64_ST_VISIBILITY(sym.st_other);
    if (sym.st_shndx == SHN_UNDEF) continue;  // imported, not exported
    if (binding != STB_GLOBAL && binding != STB_WEAK && binding != STB_GNU_UNIQUE) continue;
    if (visibility != STV_DEFAULT && visibility != STV_PROTECTED) continue;
    std::string name = nameAt(*strtab, sym.st_name);
    if (name.empty()) continue;
    if (sym.st_shndx == SHN_ABS && versions.count(name) != 0) continue;  // a version node
    exported.push_back(std::move(name));
  }
  std::sort(exported.begin(), exported.end());
  exported.erase(std::unique(exported.begin(), exported.end()), exported.end());
  return exported;
}

}  // namespace

StatusOr<std::vector<std::string>> exportedSymbols(const std::filesystem::path& library) {
  UniqueFd fd(::open(library.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (fd.get() < 0) {
    return error(Code::kNotFound, "PluginLibraryMissing",
                 library.string() + ": cannot be opened: " + std::strerror(errno));
  }
  return exportedSymbols(fd.get(), library);
}

StatusOr<std::vector<std::string>> exportedSymbols(int fd, const std::filesystem::path& library) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    return error(Code::kNotFound, "PluginLibraryMissing",
                 library.string() + ": cannot be read: " + std::strerror(errno));
  }
  off_t size = st.st_size;
  if (size < static_cast<off_t>(EI_NIDENT)) return notElf(library, "is too short for ELF");
  ElfFile file(library, fd, size);
  auto ident = file.read(0, EI_NIDENT, "the ELF identification");
  if (!ident.ok()) return ident.status();
  if (std::memcmp(ident->data(), ELFMAG, SELFMAG) != 0) {
    return notElf(library, "is not an ELF file");
  }
  const unsigned char data = static_cast<unsigned char>((*ident)[EI_DATA]);
  const unsigned char native =
      std::endian::native == std::endian::little ? ELFDATA2LSB : ELFDATA2MSB;
  if (data != native) return notElf(library, "is not in this host's byte order");
  switch (static_cast<unsigned char>((*ident)[EI_CLASS])) {
    case ELFCLASS64: return readExports<Elf64_Ehdr, Elf64_Shdr, Elf64_Sym>(file);
    case ELFCLASS32: return readExports<Elf32_Ehdr, Elf32_Shdr, Elf32_Sym>(file);
    default: return notElf(library, "has an unknown ELF class");
  }
}

}  // namespace banlieue::plugin
