// libvirt XML as the libvirt plugin reads it back: host and domain capabilities, volume and
// domain descriptions, through the functions production calls. Any bytes must give a value or
// nothing, never a crash.
#include "plugins/libvirt/src/domain_xml.h"

#include <cstdint>
#include <string_view>

// NOLINTNEXTLINE(readability-identifier-naming): libFuzzer's entry point
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace banlieue::libvirt;
  std::string_view xml(reinterpret_cast<const char*>(data), size);
  for (std::string_view arch : {"x86_64", "aarch64", ""}) (void)guestDomainTypes(xml, arch);
  (void)hostCpuVirtualization(xml);
  (void)readDomainCapabilities(xml);
  (void)declaredVolumeFormat(xml);
  (void)domainPoolVolumes(xml);
  return 0;
}
