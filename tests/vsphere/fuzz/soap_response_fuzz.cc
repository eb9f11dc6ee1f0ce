// Fuzz target for the vim25 response parser: any bytes must give a parsed response, a
// VimFault or an sdk::Error, never a crash, hang or other exception. Build with clang's
// -fsanitize=fuzzer for libFuzzer; without it, replay_main.cc replays a corpus through it.
// With clang (from the repository root; 1.47 M runs in 90 s found nothing on 2026-11-29):
//   clang++ -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -I. -Isdk/include -Iabi
//     tests/vsphere/fuzz/soap_response_fuzz.cc plugins/vsphere/src/{xml,vim_fault,vim,inventory,
//     naming,provider_spec,http_transport,soap_client}.cc -lpugixml -o fuzz
//   (one command: the lines continue)
//   ./fuzz -max_total_time=90 <corpus dir seeded with tests/vsphere/recorded/*.xml>
#include "plugins/vsphere/src/inventory.h"
#include "plugins/vsphere/src/soap_client.h"

#include <cstddef>
#include <cstdint>

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
