// The symbols a shared object exports, read from its ELF dynamic symbol table (.dynsym)
// without loading it: `plugin check` uses it to hold a plugin to "exports exactly
// banlieue_provider_v1_init". The file is untrusted, so every offset is bounds-checked.
#pragma once

#include "host/common/status_or.h"

#include <filesystem>
#include <string>
#include <vector>

namespace banlieue::plugin {

// Names of the defined dynamic symbols other objects can bind to (binding GLOBAL, WEAK or
// GNU_UNIQUE; visibility DEFAULT or PROTECTED), sorted, without version suffixes. The
// absolute symbols the linker emits for version-script node names (BANLIEUE_PROVIDER_V1)
// are not exports and are left out. INVALID_ARGUMENT (reason NotAnElfLibrary) when the
// file is not a 32- or 64-bit ELF shared object of this host's byte order with section
// headers (a library the loader could dlopen).
StatusOr<std::vector<std::string>> exportedSymbols(const std::filesystem::path& library);

// The same, read with pread from a descriptor already open on the library (the loader's,
// so the symbols checked are those of the file it maps); `library` names it in errors.
StatusOr<std::vector<std::string>> exportedSymbols(int fd, const std::filesystem::path& library);

}  // namespace banlieue::plugin
