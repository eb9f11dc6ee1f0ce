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
  // Optional (docs/adr/0050): Cluster API's copies of a template name none until the
  // controller picks the Provider that serves their failure domain.
  return {.description =
              "The Provider (same namespace) that realises this machine; set by the "
              "controller from the failure domain when left out"};
}
inline FieldSpec desiredPowerState() {
  return {.description = "Power state the provider keeps the machine in",
          .enum_values = enums::kPowerState,
          .default_json = "\"PoweredOn\""};
}
inline FieldSpec restartRequestedAt() {
  return {.description =
              "A restart request: a new value asks the backend for one restart of the running "
              "machine (a graceful shutdown, then a start); the same value again does nothing. "
              "status.lastRestart answers it"};
}
inline FieldSpec resizePolicy() {
  return {.description =
              "What happens when a CPU, memory or disk change cannot reach the running machine "
              "without a restart. Restart: the backend restarts it to apply the change. "
              "WaitForRestart: the change waits for the next restart (banlieue vm restart), "
              "HardwareApplied=False and Ready=False with reason RestartRequired meanwhile",
          .enum_values = {"Restart", "WaitForRestart"},
          .default_json = "\"Restart\""};
}
inline FieldSpec lastRestart() {
  return {.description = "The last restart request the backend acted on, and when"};
}
inline FieldSpec userData() {
  return {.description = "Rendered user data, delivered by the provider"};
}
inline FieldSpec memoryMiB() {
  return {.description = "Memory in MiB", .required = true, .minimum = 128, .maximum = 4194304};
}
inline FieldSpec cpus() {
  return {.description = "Virtual CPUs", .required = true, .minimum = 1, .maximum = 256};
}
inline FieldSpec firmware() {
  return {.description = "bios, efi or efi-secure",
          .enum_values = enums::kFirmware,
          .default_json = "\"efi\""};
}
inline FieldSpec tpmEnabled() {
  return {.description = "Attach a virtual TPM 2.0"};
}
inline FieldSpec diskName() {
  return {.description = "Disk name, as the VMClass names it", .required = true, .min_length = 1};
}
inline FieldSpec diskSize() {
  return {.description = "Size in GiB", .required = true, .minimum = 1, .maximum = 65536};
}
inline FieldSpec interfaceName() {
  return {
      .description = "Interface name, as the VMClass names it", .required = true, .min_length = 1};
}
inline FieldSpec macAddress() {
  return {.description = "MAC address; the backend picks one when empty"};
}
inline FieldSpec ipam() {
  return {.description = "Addressing of the interface, handed to the guest"};
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
  return {.description = "Power state the backend last reported",
          .enum_values = enums::kPowerState};
}
inline FieldSpec statusFailureDomain() {
  return {.description = "The failure domain the machine runs in (CAPI contract)"};
}
inline FieldSpec addresses() {
  return {.description = "Addresses of the machine (CAPI contract)"};
}
inline FieldSpec tpmEndorsementCertificates() {
  return {.description = "PEM endorsement certificates of the machine's virtual TPM"};
}
inline FieldSpec observedGeneration() {
  return {.description = "metadata.generation this status was computed from"};
}
inline FieldSpec conditions() {
  return conditionsSpec("Ready and the backend's other observations of the machine");
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
