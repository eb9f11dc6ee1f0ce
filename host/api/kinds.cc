#include "host/api/kinds.h"

#include <cctype>

namespace banlieue::api {

std::string KindInfo::singular() const {
  std::string s = kind;
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

PrinterColumn readyColumn() {
  return {"Ready", "string", ".status.conditions[?(@.type==\"Ready\")].status",
          "Status of the Ready condition"};
}

PrinterColumn reasonColumn() {
  return {"Reason", "string", ".status.conditions[?(@.type==\"Ready\")].reason",
          "Why the object is or is not Ready"};
}

PrinterColumn ageColumn() {
  return {"Age", "date", ".metadata.creationTimestamp"};
}

const std::vector<KindInfo>& builtinKinds() {
  static const std::vector<KindInfo> kinds = [] {
    std::vector<KindInfo> all;
    for (auto* group : {&virtualMachineKinds, &vmClassKinds, &providerKinds, &vsphereKinds,
                        &libvirtKinds, &proxmoxKinds, &snapshotKinds}) {
      auto some = (*group)();
      all.insert(all.end(), some.begin(), some.end());
    }
    return all;
  }();
  return kinds;
}

}  // namespace banlieue::api
