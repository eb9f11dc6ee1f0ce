#include "plugins/vsphere/src/vim_fault.h"

#include "plugins/vsphere/src/xml.h"

#include <array>
#include <utility>

namespace banlieue::vsphere {
namespace {

FaultKind kindOf(const std::string& type) {
  static const std::array<std::pair<const char*, FaultKind>, 14> kKinds = {{
      {"NotAuthenticated", FaultKind::kNotAuthenticated},
      {"InvalidLogin", FaultKind::kInvalidLogin},
      {"NoPermission", FaultKind::kNoPermission},
      {"DuplicateName", FaultKind::kDuplicateName},
      {"InvalidPowerState", FaultKind::kInvalidPowerState},
      {"FileNotFound", FaultKind::kFileNotFound},
      {"FileAlreadyExists", FaultKind::kFileAlreadyExists},
      {"ManagedObjectNotFound", FaultKind::kManagedObjectNotFound},
      {"InvalidArgument", FaultKind::kInvalidArgument},
      {"InvalidRequest", FaultKind::kInvalidArgument},
      {"InvalidProperty", FaultKind::kInvalidArgument},
      {"InvalidState", FaultKind::kInvalidState},
      {"InvalidDatastorePath", FaultKind::kInvalidArgument},
      {"TaskInProgress", FaultKind::kTaskInProgress},
  }};
  for (const auto& [name, kind] : kKinds) {
    if (type == name) return kind;
  }
  return FaultKind::kOther;
}

// A reason must be CamelCase letters and digits; fault types from a server are not trusted.
std::string sanitizedType(const std::string& type) {
  std::string out;
  for (char c : type) {
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) out += c;
  }
  if (out.empty() || out[0] < 'A' || out[0] > 'Z') out = "VimFault" + out;
  return out.substr(0, 96);
}

// The fault subtype of a detail or fault element: xsi:type when present, else the element
// name without the "Fault" suffix vCenter appends in SOAP fault details.
std::string faultType(const pugi::xml_node& node) {
  std::string type = xsiType(node);
  if (!type.empty()) return type;
  std::string name(localName(node.name()));
  const std::string suffix = "Fault";
  if (name.size() > suffix.size() &&
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
    name.resize(name.size() - suffix.size());
  }
  return name;
}

}  // namespace

VimFault::VimFault(std::string type, const std::string& message)
    : std::runtime_error(message), type_(std::move(type)), kind_(kindOf(type_)) {}

sdk::Code VimFault::code() const {
  switch (kind_) {
    case FaultKind::kNotAuthenticated:
    case FaultKind::kInvalidLogin: return sdk::Code::kUnauthenticated;
    case FaultKind::kNoPermission: return sdk::Code::kPermissionDenied;
    case FaultKind::kDuplicateName:
    case FaultKind::kFileAlreadyExists: return sdk::Code::kAlreadyExists;
    case FaultKind::kInvalidPowerState:
    case FaultKind::kInvalidState: return sdk::Code::kFailedPrecondition;
    case FaultKind::kFileNotFound:
    case FaultKind::kManagedObjectNotFound: return sdk::Code::kNotFound;
    case FaultKind::kInvalidArgument: return sdk::Code::kInvalidArgument;
    case FaultKind::kTaskInProgress: return sdk::Code::kAborted;
    case FaultKind::kOther: break;
  }
  return sdk::Code::kUnknown;
}

std::string VimFault::reason() const {
  return sanitizedType(type_);
}

sdk::Error VimFault::toError(const std::string& context) const {
  std::string message = context + ": " + type_;
  if (what()[0] != '\0') message += ": " + std::string(what());
  return {code(), reason(), message};
}

VimFault parseSoapFault(const pugi::xml_node& fault) {
  std::string message = childText(fault, "faultstring").value_or("");
  pugi::xml_node detail = child(fault, "detail");
  for (pugi::xml_node c = detail.first_child(); c; c = c.next_sibling()) {
    if (c.type() == pugi::node_element) return {faultType(c), message};
  }
  // No detail: a SOAP-level fault (malformed request); the faultcode says which side.
  std::string code(localName(childText(fault, "faultcode").value_or("")));
  return {code.empty() ? "SoapFault" : code, message};
}

VimFault parseLocalizedFault(const pugi::xml_node& error) {
  std::string message = childText(error, "localizedMessage").value_or("");
  pugi::xml_node fault = child(error, "fault");
  std::string type = fault ? faultType(fault) : std::string("MethodFault");
  return {type, message};
}

}  // namespace banlieue::vsphere
