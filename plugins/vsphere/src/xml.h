// XML helpers for vim25 SOAP: a small writer that escapes everything it is given, and
// readers that compare local names and resolve xsi:type through the namespace URI, because
// vCenter writes `xsi:type` while vcsim writes `XMLSchema-instance:type` with its own prefix
// binding (env-feasibility.md section 3).
#pragma once

#include <pugixml.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace banlieue::vsphere {

inline constexpr std::string_view kXsiNamespace = "http://www.w3.org/2001/XMLSchema-instance";
inline constexpr std::string_view kVim25Namespace = "urn:vim25";

// A managed object reference: {type: "VirtualMachine", value: "vm-42"}.
struct MoRef {
  std::string type;
  std::string value;
  bool empty() const { return value.empty(); }
  bool operator==(const MoRef&) const = default;
};

std::string xmlEscape(std::string_view text);

// Builds the argument list of a vim25 call. Element names are trusted literals; every value
// and attribute is escaped.
class XmlWriter {
 public:
  XmlWriter& open(std::string_view tag, std::string_view xsi_type = {});
  XmlWriter& close(std::string_view tag);
  XmlWriter& text(std::string_view tag, std::string_view value);
  XmlWriter& integer(std::string_view tag, long long value);
  XmlWriter& boolean(std::string_view tag, bool value);
  XmlWriter& moref(std::string_view tag, const MoRef& ref);
  XmlWriter& raw(std::string_view xml);
  const std::string& str() const { return out_; }

 private:
  std::string out_;
};

// The part of a qualified name after the colon ("soapenv:Body" -> "Body").
std::string_view localName(std::string_view qualified);

// First child element whose local name is `name`; an empty node when there is none.
pugi::xml_node child(const pugi::xml_node& node, std::string_view name);
// Every child element whose local name is `name`.
std::vector<pugi::xml_node> children(const pugi::xml_node& node, std::string_view name);
// Text of child `name`, or nullopt when absent.
std::optional<std::string> childText(const pugi::xml_node& node, std::string_view name);

// The local part of the node's type attribute in the XML Schema instance namespace, whatever
// prefix binds it ("xsd:string" -> "string"); empty when the node has none.
std::string xsiType(const pugi::xml_node& node);

// Reads <x type="Folder">group-d1</x>.
MoRef readMoRef(const pugi::xml_node& node);

}  // namespace banlieue::vsphere
