// The vim25 SOAP response parser (plugins/vsphere): any bytes must give a parsed response, a
// VimFault or an sdk::Error, never a crash, hang or other exception. Replayed in the unit tier
// over fuzz/corpus/vsphere_soap and tests/vsphere/recorded.
#include "plugins/vsphere/src/inventory.h"
#include "plugins/vsphere/src/soap_client.h"

#include <cstddef>
#include <cstdint>

// NOLINTNEXTLINE(readability-identifier-naming): libFuzzer's entry point
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace banlieue::vsphere;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    SoapResponse r = SoapClient::parseEnvelope(text, 200);
    std::vector<ObjectContent> objects;
    (void)parseRetrieveResult(r.returnval(), objects);
    for (const auto& o : objects) {
      try {
        (void)parseTaskInfo(o);
      } catch (const banlieue::sdk::Error&) {
      }
    }
    Inventory inv = Inventory::fromObjects(objects);
    ProviderSpec spec;
    spec.name = "fuzz";
    try {
      (void)computeFailureDomains(inv, spec);
    } catch (const banlieue::sdk::Error&) {
    }
  } catch (const VimFault&) {
  } catch (const banlieue::sdk::Error&) {
  }
  return 0;
}
