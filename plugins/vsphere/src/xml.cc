#include "plugins/vsphere/src/xml.h"

namespace banlieue::vsphere {

std::string xmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += c;
    }
  }
  return out;
}

XmlWriter& XmlWriter::open(std::string_view tag, std::string_view xsi_type) {
  out_ += '<';
  out_ += tag;
  if (!xsi_type.empty()) {
    out_ += " xsi:type=\"";
    out_ += xmlEscape(xsi_type);
    out_ += '"';
  }
  out_ += '>';
  return *this;
}

XmlWriter& XmlWriter::close(std::string_view tag) {
  out_ += "</";
  out_ += tag;
  out_ += '>';
  return *this;
}

XmlWriter& XmlWriter::text(std::string_view tag, std::string_view value) {
  open(tag);
  out_ += xmlEscape(value);
  return close(tag);
}

XmlWriter& XmlWriter::integer(std::string_view tag, long long value) {
  return text(tag, std::to_string(value));
}

XmlWriter& XmlWriter::boolean(std::string_view tag, bool value) {
  return text(tag, value ? "true" : "false");
}

XmlWriter& XmlWriter::moref(std::string_view tag, const MoRef& ref) {
  out_ += '<';
  out_ += tag;
  out_ += " type=\"";
  out_ += xmlEscape(ref.type);
  out_ += "\">";
  out_ += xmlEscape(ref.value);
  return close(tag);
}

XmlWriter& XmlWriter::raw(std::string_view xml) {
  out_ += xml;
  return *this;
}

std::string_view localName(std::string_view qualified) {
  auto colon = qualified.find(':');
  return colon == std::string_view::npos ? qualified : qualified.substr(colon + 1);
}

pugi::xml_node child(const pugi::xml_node& node, std::string_view name) {
  for (pugi::xml_node c = node.first_child(); c; c = c.next_sibling()) {
    if (c.type() == pugi::node_element && localName(c.name()) == name) return c;
  }
  return {};
}

std::vector<pugi::xml_node> children(const pugi::xml_node& node, std::string_view name) {
  std::vector<pugi::xml_node> out;
  for (pugi::xml_node c = node.first_child(); c; c = c.next_sibling()) {
    if (c.type() == pugi::node_element && localName(c.name()) == name) out.push_back(c);
  }
  return out;
}

std::optional<std::string> childText(const pugi::xml_node& node, std::string_view name) {
  pugi::xml_node c = child(node, name);
  if (!c) return std::nullopt;
  return std::string(c.text().get());
}

namespace {

// The namespace URI bound to `prefix` at `node`, searching outwards.
std::string_view namespaceOf(pugi::xml_node node, std::string_view prefix) {
  std::string attribute = prefix.empty() ? "xmlns" : "xmlns:" + std::string(prefix);
  for (; node; node = node.parent()) {
    if (pugi::xml_attribute a = node.attribute(attribute.c_str())) return a.value();
  }
  return {};
}

}  // namespace

std::string xsiType(const pugi::xml_node& node) {
  for (pugi::xml_attribute a = node.first_attribute(); a; a = a.next_attribute()) {
    std::string_view name = a.name();
    auto colon = name.find(':');
    if (colon == std::string_view::npos || name.substr(colon + 1) != "type") continue;
    std::string_view prefix = name.substr(0, colon);
    if (prefix == "xmlns") continue;
    if (namespaceOf(node, prefix) == kXsiNamespace) return std::string(localName(a.value()));
  }
  return {};
}

MoRef readMoRef(const pugi::xml_node& node) {
  return {node.attribute("type").value(), node.text().get()};
}

}  // namespace banlieue::vsphere
