// libvirt XML as the libvirt plugin reads it back: capabilities (guestDomainTypes), domain and
// volume descriptions (xmlAttribute, xmlText), with the section, element and attribute names
// the plugin asks for. Any bytes must give a value or nothing, never a crash.
#include "plugins/libvirt/src/domain_xml.h"

#include <cstdint>
#include <string_view>

// NOLINTNEXTLINE(readability-identifier-naming): libFuzzer's entry point
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace banlieue::libvirt;
  std::string_view xml(reinterpret_cast<const char*>(data), size);
  for (std::string_view arch : {"x86_64", "aarch64", ""}) (void)guestDomainTypes(xml, arch);
  (void)xmlAttribute(xml, "devices", "tpm", "supported");
  (void)xmlAttribute(xml, "", "source", "volume");
  (void)xmlAttribute(xml, "", "source", "pool");
  (void)xmlAttribute(xml, "target", "format", "type");
  (void)xmlAttribute(xml, "os", "loader", "secure");
  (void)xmlText(xml, "", "name");
  (void)xmlText(xml, "target", "path");
  (void)xmlText(xml, "host", "arch");
  return 0;
}
