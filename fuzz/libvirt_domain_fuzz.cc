// A LibvirtMachine as the libvirt plugin turns it into libvirt XML: parseMachine, then the domain
// and volume definitions it would send to libvirtd. Any object must give a spec or an
// InvalidSpec error, never a crash. Properties, the XML's safety: the definitions are
// well-formed XML with exactly one <domain> (one <volume>), and the domain's <name> is the
// machine's domain name, so no field can inject elements or attributes.
#include "plugins/libvirt/src/domain_xml.h"
#include "plugins/libvirt/src/machine_spec.h"

#include <banlieue/sdk/json.h>
#include <pugixml.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <string>

namespace {

pugi::xml_document parseOrAbort(const std::string& xml, const char* what) {
  pugi::xml_document doc;
  auto parsed = doc.load_string(xml.c_str(), pugi::parse_default | pugi::parse_ws_pcdata);
  if (!parsed) {
    std::fprintf(stderr, "%s is not well-formed (%s):\n%s\n", what, parsed.description(),
                 xml.c_str());
    std::abort();
  }
  return doc;
}

}  // namespace

// NOLINTNEXTLINE(readability-identifier-naming): libFuzzer's entry point
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace banlieue::libvirt;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  rapidjson::Document object;
  try {
    object = banlieue::sdk::json::parse(text, "fuzz");
  } catch (const banlieue::sdk::Error&) {
    return 0;
  }
  MachineSpec machine;
  try {
    machine = parseMachine(object);
  } catch (const banlieue::sdk::Error&) {
    return 0;
  }
  DomainPlan plan;
  plan.root_volume = machine.rootVolumeName();
  for (size_t i = 1; i < machine.disks.size(); ++i) {
    plan.data_volumes.push_back(machine.dataVolumeName(machine.disks[i]));
  }
  if (machine.needsSeed()) plan.seed_volume = machine.seedVolumeName();
  const std::string xml = domainXml(machine, plan);
  auto domain = parseOrAbort(xml, "the domain XML");
  if (std::distance(domain.children().begin(), domain.children().end()) != 1 ||
      std::string(domain.first_child().name()) != "domain") {
    std::abort();
  }
  // pugixml stops at a NUL; the name is compared only where it has none.
  if (machine.domain_name.find('\0') == std::string::npos &&
      domain.child("domain").child_value("name") != machine.domain_name) {
    std::fprintf(stderr, "domain name '%s' reads back as '%s'\n", machine.domain_name.c_str(),
                 domain.child("domain").child_value("name"));
    std::abort();
  }
  VolumeSpec volume{.name = plan.root_volume,
                    .capacity_bytes = 1 << 30,
                    .backing_path = "/var/lib/libvirt/images/" + machine.boot_volume,
                    .backing_format = "qcow2"};
  auto volume_doc = parseOrAbort(volumeXml(volume), "the volume XML");
  if (std::string(volume_doc.first_child().name()) != "volume") std::abort();
  return 0;
}
