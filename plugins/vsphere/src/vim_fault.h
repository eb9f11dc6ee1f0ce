// vim25 faults as typed errors. A SOAP fault's detail (or a Task's info.error) names a
// MethodFault subtype; classify() maps the ones the plugin reacts to onto the ABI's
// canonical codes and a Condition reason, so callers branch on `kind`, never on text.
#pragma once

#include <banlieue/sdk/status.h>

#include <pugixml.hpp>

#include <stdexcept>
#include <string>

namespace banlieue::vsphere {

enum class FaultKind {
  kNotAuthenticated,
  kInvalidLogin,
  kNoPermission,
  kDuplicateName,
  kInvalidPowerState,
  kFileNotFound,
  kFileAlreadyExists,
  kManagedObjectNotFound,
  kInvalidArgument,
  kInvalidState,
  kTaskInProgress,
  kOther,
};

class VimFault : public std::runtime_error {
 public:
  // type: the MethodFault subtype ("InvalidPowerState"); message: faultstring or the
  // localized message, never containing a credential.
  VimFault(std::string type, const std::string& message);

  const std::string& type() const { return type_; }
  FaultKind kind() const { return kind_; }
  sdk::Code code() const;
  // CamelCase Condition reason; the fault type itself for the ones known here.
  std::string reason() const;
  sdk::Error toError(const std::string& context) const;

 private:
  std::string type_;
  FaultKind kind_;
};

// Reads a soapenv:Fault element into a VimFault.
VimFault parseSoapFault(const pugi::xml_node& fault);
// Reads a LocalizedMethodFault (TaskInfo.error) into a VimFault.
VimFault parseLocalizedFault(const pugi::xml_node& error);

}  // namespace banlieue::vsphere
