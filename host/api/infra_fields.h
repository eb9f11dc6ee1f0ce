// Field specs every InfraMachine kind shares, so the CAPI contract fields read the same in
// each backend's CRD.
#pragma once

#include "host/api/declare.h"

namespace banlieue::api::infra {

inline FieldSpec providerId(const char* format) {
  return {.description = format};
}
inline FieldSpec failureDomain() {
  return {.description = "The failure domain the machine is placed in (CAPI contract)"};
}
inline FieldSpec providerRef() {
  return {.description = "The Provider (same namespace) that realises this machine",
          .required = true};
}
inline FieldSpec desiredPowerState() {
  return {.enum_values = enums::kPowerState, .default_json = "\"PoweredOn\""};
}
inline FieldSpec userData() {
  return {.description = "Rendered user data, delivered by the provider"};
}
inline FieldSpec memoryMiB() {
  return {.required = true, .minimum = 128, .maximum = 4194304};
}
inline FieldSpec cpus() {
  return {.required = true, .minimum = 1, .maximum = 256};
}
inline FieldSpec operationToken() {
  return {.description =
              "Backend task the provider runtime is polling (level-triggered "
              "long operations)"};
}
inline FieldSpec initialization() {
  return {.description = "CAPI v1beta2: provisioned is true once the machine exists"};
}
inline FieldSpec observedPowerState() {
  return {.enum_values = enums::kPowerState};
}

inline std::map<std::string, std::string> crdLabels() {
  return {{kCapiContractLabel, "v1beta2"}};
}

// Columns every machine kind shows.
inline std::vector<PrinterColumn> machineColumns(std::vector<PrinterColumn> extra) {
  std::vector<PrinterColumn> columns = {
      {"Provider", "string", ".spec.providerRef.name"},
      {"Provisioned", "boolean", ".status.initialization.provisioned"},
      {"Power", "string", ".status.observedPowerState"},
      readyColumn()};
  columns.insert(columns.end(), extra.begin(), extra.end());
  columns.push_back({"ProviderID", "string", ".spec.providerID", "", 1});
  columns.push_back(ageColumn());
  return columns;
}

}  // namespace banlieue::api::infra
