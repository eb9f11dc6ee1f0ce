#include "host/api/yaml.h"

#include "host/common/utf8.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <sstream>
#include <utility>

namespace banlieue::api {
namespace {

bool isReservedWord(const std::string& s) {
  std::string lower = s;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  static const char* const kReserved[] = {"true", "false", "yes", "no", "on",
                                          "off",  "null",  "y",   "n",  "~"};
  return std::any_of(std::begin(kReserved), std::end(kReserved),
                     [&](const char* r) { return lower == r; });
}

// Plain only when a YAML 1.1 or 1.2 reader can take it for nothing but this string.
bool canBePlain(const std::string& s) {
  if (s.empty() || !std::isalpha(static_cast<unsigned char>(s[0])) || s.back() == ' ') {
    return false;
  }
  for (char c : s) {
    bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == ' ' || c == '_' || c == '.' ||
              c == '/' || c == '-' || c == '(' || c == ')' || c == ',' || c == ';' || c == '+';
    if (!ok) return false;
  }
  return !isReservedWord(s);
}

std::string scalar(const rapidjson::Value& v) {
  if (v.IsString()) {
    std::string s(v.GetString(), v.GetStringLength());
    if (canBePlain(s)) return s;
  }
  if (v.IsNull()) return "null";
  // JSON's string escapes and number forms are valid YAML.
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  v.Accept(writer);
  return {buffer.GetString(), buffer.GetSize()};
}

bool isCollection(const rapidjson::Value& v) {
  return (v.IsObject() && !v.ObjectEmpty()) || (v.IsArray() && !v.Empty());
}

std::string inlineForm(const rapidjson::Value& v) {
  if (v.IsObject()) return "{}";
  if (v.IsArray()) return "[]";
  return scalar(v);
}

void emit(const rapidjson::Value& v, int indent, std::string& out);

// A collection inside a list: emitted one level deeper, then its first indentation becomes
// the "- " marker.
void emitItem(const rapidjson::Value& item, int indent, std::string& out) {
  if (!isCollection(item)) {
    out.append(static_cast<size_t>(indent), ' ').append("- ").append(inlineForm(item)) += '\n';
    return;
  }
  std::string nested;
  emit(item, indent + 2, nested);
  out.append(static_cast<size_t>(indent), ' ').append("- ");
  out.append(nested, static_cast<size_t>(indent) + 2, std::string::npos);
}

// YAML allows an implicit key ("key: value") at most 1024 characters before its ':'; a longer
// one (escapes lengthen a key: a NUL is six characters) is written as an explicit key
// ("? key" then ": value"), which has no limit. The margin leaves room for how a reader counts.
constexpr size_t kMaxImplicitKey = 1000;

void emit(const rapidjson::Value& v, int indent, std::string& out) {
  if (v.IsArray()) {
    for (const auto& item : v.GetArray()) emitItem(item, indent, out);
    return;
  }
  for (const auto& m : v.GetObject()) {
    const std::string key = scalar(m.name);
    const bool explicit_key = key.size() > kMaxImplicitKey;
    out.append(static_cast<size_t>(indent), ' ');
    if (explicit_key) {
      out.append("? ").append(key) += '\n';
      out.append(static_cast<size_t>(indent), ' ') += ':';
    } else {
      out.append(key) += ':';
    }
    if (!isCollection(m.value)) {
      out.append(" ").append(inlineForm(m.value)) += '\n';
    } else if (m.value.IsArray()) {
      out += '\n';
      // A list may sit at its key's indentation, but not under an explicit ':'.
      emit(m.value, explicit_key ? indent + 2 : indent, out);
    } else {
      out += '\n';
      emit(m.value, indent + 2, out);
    }
  }
}

// `text` for a message: bytes that are not UTF-8 text, and control characters, as \xNN.
std::string printable(std::string_view text) {
  std::string out;
  while (!text.empty()) {
    size_t bad = common::firstInvalidUtf8(text);
    for (char c : text.substr(0, bad)) {
      if (static_cast<unsigned char>(c) < 0x20) {
        char hex[5];
        std::snprintf(hex, sizeof hex, "\\x%02X", static_cast<unsigned char>(c));
        out += hex;
      } else {
        out += c;
      }
    }
    if (bad == text.size()) break;
    char hex[5];
    std::snprintf(hex, sizeof hex, "\\x%02X", static_cast<unsigned char>(text[bad]));
    out += hex;
    text.remove_prefix(bad + 1);
  }
  return out;
}

// YAML is Unicode text: a string that is not UTF-8 cannot be written so that it reads back (a
// conforming reader, kubectl's among them, refuses the stream). The first one is refused with
// its place in the document.
Status checkUnicode(const rapidjson::Value& v, const std::string& path) {
  auto notText = [&](const std::string& where, std::string_view text) {
    const size_t bad = common::firstInvalidUtf8(text);
    char byte[5];
    std::snprintf(byte, sizeof byte, "0x%02X", static_cast<unsigned char>(text[bad]));
    return error(Code::kInvalidArgument, "NotUtf8",
                 (where.empty() ? std::string("the document") : where) +
                     " is not UTF-8 text (byte " + byte + " at offset " + std::to_string(bad) +
                     "), which YAML cannot hold");
  };
  if (v.IsString()) {
    std::string_view text(v.GetString(), v.GetStringLength());
    return common::isValidUtf8(text) ? Status::ok() : notText(path, text);
  }
  if (v.IsArray()) {
    for (rapidjson::SizeType i = 0; i < v.Size(); ++i) {
      if (auto s = checkUnicode(v[i], path + "[" + std::to_string(i) + "]"); !s.isOk()) return s;
    }
  } else if (v.IsObject()) {
    for (const auto& m : v.GetObject()) {
      std::string_view key(m.name.GetString(), m.name.GetStringLength());
      std::string at = path.empty() ? printable(key) : path + "." + printable(key);
      if (!common::isValidUtf8(key)) return notText("the key " + at, key);
      if (auto s = checkUnicode(m.value, at); !s.isOk()) return s;
    }
  }
  return Status::ok();
}

// yaml-cpp passes the bytes of a UTF-8 stream through unchecked; YAML holds Unicode text only,
// so a scalar that is not UTF-8 is refused where it stands (and never reaches the emitter).
Status checkScalar(const YAML::Node& node, const std::string& text, const std::string& what) {
  if (common::isValidUtf8(text)) return Status::ok();
  return error(Code::kInvalidArgument, "InvalidYaml",
               what + ": not valid YAML: the scalar at line " +
                   std::to_string(node.Mark().line + 1) + ", column " +
                   std::to_string(node.Mark().column + 1) + " is not UTF-8 text");
}

// The YAML 1.2 core schema's integer and float forms, [-+]?[0-9]+ and
// [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?, scanned by hand: std::regex took
// milliseconds a scalar under the sanitizers, so a manifest whose aliases repeat a few
// thousand scalars ran past the fuzzer's 10 s timeout (a corpus entry of manifest_yaml now).
bool isDigit(char c) {
  return c >= '0' && c <= '9';
}

size_t skipDigits(std::string_view s, size_t i) {
  while (i < s.size() && isDigit(s[i])) ++i;
  return i;
}

size_t skipSign(std::string_view s, size_t i) {
  return i < s.size() && (s[i] == '-' || s[i] == '+') ? i + 1 : i;
}

bool isCoreInt(std::string_view s) {
  size_t start = skipSign(s, 0);
  size_t end = skipDigits(s, start);
  return end > start && end == s.size();
}

bool isCoreFloat(std::string_view s) {
  size_t i = skipSign(s, 0);
  size_t int_end = skipDigits(s, i);
  bool digits = int_end > i;
  i = int_end;
  if (i < s.size() && s[i] == '.') {
    size_t frac_end = skipDigits(s, i + 1);
    if (!digits && frac_end == i + 1) return false;  // "." alone, or "-."
    digits = true;
    i = frac_end;
  }
  if (!digits) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    size_t exp_start = skipSign(s, i + 1);
    size_t exp_end = skipDigits(s, exp_start);
    if (exp_end == exp_start) return false;
    i = exp_end;
  }
  return i == s.size();
}

Status toJson(const YAML::Node& node, rapidjson::Value& out, rapidjson::Document::AllocatorType& a,
              const std::string& what) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined: out.SetNull(); return Status::ok();
    case YAML::NodeType::Sequence:
      out.SetArray();
      for (const auto& child : node) {
        rapidjson::Value v;
        if (auto s = toJson(child, v, a, what); !s.isOk()) return s;
        out.PushBack(v, a);
      }
      return Status::ok();
    case YAML::NodeType::Map:
      out.SetObject();
      for (const auto& kv : node) {
        rapidjson::Value v;
        if (auto s = toJson(kv.second, v, a, what); !s.isOk()) return s;
        const std::string& key = kv.first.Scalar();
        if (auto s = checkScalar(kv.first, key, what); !s.isOk()) return s;
        out.AddMember(rapidjson::Value(key.data(), static_cast<rapidjson::SizeType>(key.size()), a),
                      v, a);
      }
      return Status::ok();
    case YAML::NodeType::Scalar: break;
  }
  const std::string& s = node.Scalar();
  if (auto checked = checkScalar(node, s, what); !checked.isOk()) return checked;
  // A quoted scalar (tag "!") is always a string; plain ones follow the YAML 1.2 core schema.
  if (node.Tag() != "!") {
    if (s == "null" || s == "Null" || s == "NULL" || s == "~") {
      out.SetNull();
      return Status::ok();
    }
    if (s == "true" || s == "True" || s == "TRUE") {
      out.SetBool(true);
      return Status::ok();
    }
    if (s == "false" || s == "False" || s == "FALSE") {
      out.SetBool(false);
      return Status::ok();
    }
    if (isCoreInt(s)) {
      try {
        out.SetInt64(std::stoll(s));
        return Status::ok();
      } catch (const std::out_of_range&) {  // too large: keep the text
      }
    } else if (isCoreFloat(s)) {
      out.SetDouble(std::stod(s));
      return Status::ok();
    }
  }
  out.SetString(s.data(), static_cast<rapidjson::SizeType>(s.size()), a);
  return Status::ok();
}

// The largest document parseYamlDocuments builds, counting every node an alias repeats: a few
// lines of nested anchors (a "billion laughs") would otherwise expand into gigabytes.
constexpr size_t kMaxExpandedNodes = size_t{1} << 17;

// A first pass over the events of a stream, before yaml-cpp builds nodes: it refuses a stream
// whose aliases expand past kMaxExpandedNodes or make a node contain itself, and one on which
// yaml-cpp's LoadAll would never return (0.7 starts a new document without consuming a stray
// ',' or '?', forever).
class StreamCheck final : public YAML::EventHandler {
 public:
  // Empty when the stream may be loaded; otherwise why not.
  std::string problem;

  void OnDocumentStart(const YAML::Mark& mark) override {
    if (documents_ > 0 && mark.pos == last_document_pos_) {
      problem = "no document can start at line " + std::to_string(mark.line + 1) + ", column " +
                std::to_string(mark.column + 1);
    }
    ++documents_;
    last_document_pos_ = mark.pos;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t anchor) override { leaf(anchor); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    // yaml-cpp registers an anchor where its node starts, so an alias inside that node makes
    // the node contain itself: a cycle that building JSON from it would follow forever.
    for (const auto& [open_anchor, at_start] : open_) {
      if (anchor != YAML::NullAnchor && open_anchor == anchor && problem.empty()) {
        problem = "the alias at line " + std::to_string(mark.line + 1) + ", column " +
                  std::to_string(mark.column + 1) + " refers to a node that contains it";
      }
    }
    auto it = sizes_.find(anchor);
    add(it == sizes_.end() ? 1 : it->second);
  }
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t anchor,
                const std::string&) override {
    leaf(anchor);
  }
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    open(anchor);
  }
  void OnSequenceEnd() override { close(); }
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    open(anchor);
  }
  void OnMapEnd() override { close(); }

  bool stop() const { return !problem.empty(); }

 private:
  void add(size_t nodes) {
    nodes_ = nodes > kMaxExpandedNodes ? kMaxExpandedNodes + 1 : nodes_ + nodes;
    if (nodes_ > kMaxExpandedNodes && problem.empty()) {
      problem = "its aliases expand to more than " + std::to_string(kMaxExpandedNodes) + " nodes";
    }
  }
  void leaf(YAML::anchor_t anchor) {
    add(1);
    if (anchor != YAML::NullAnchor) sizes_[anchor] = 1;
  }
  void open(YAML::anchor_t anchor) {
    open_.emplace_back(anchor, nodes_);
    add(1);
  }
  void close() {
    if (open_.empty()) return;
    auto [anchor, at_start] = open_.back();
    open_.pop_back();
    if (anchor != YAML::NullAnchor) sizes_[anchor] = nodes_ - at_start;
  }

  size_t documents_ = 0;
  int last_document_pos_ = 0;
  size_t nodes_ = 0;
  std::vector<std::pair<YAML::anchor_t, size_t>> open_;
  std::map<YAML::anchor_t, size_t> sizes_;
};

}  // namespace

StatusOr<std::string> toYaml(const rapidjson::Value& value) {
  if (auto checked = checkUnicode(value, ""); !checked.isOk()) return checked;
  if (!isCollection(value)) return inlineForm(value) + "\n";
  std::string out;
  emit(value, 0, out);
  return out;
}

StatusOr<std::string> toYamlStream(const std::vector<const rapidjson::Value*>& documents) {
  std::string out;
  for (size_t i = 0; i < documents.size(); ++i) {
    auto yaml = toYaml(*documents[i]);
    if (!yaml.ok()) {
      return error(yaml.status().code(), yaml.status().reason(),
                   "document " + std::to_string(i + 1) + ": " + yaml.status().message());
    }
    out += "---\n";
    out += *yaml;
  }
  return out;
}

Status checkYamlStream(const std::string& text, const std::string& what) {
  StreamCheck check;
  try {
    std::istringstream in(text);
    YAML::Parser parser(in);
    while (!check.stop() && parser.HandleNextDocument(check)) {
    }
  } catch (const YAML::Exception& e) {
    return error(Code::kInvalidArgument, "InvalidYaml",
                 what + ": not valid YAML: " + e.msg + " at line " +
                     std::to_string(e.mark.line + 1) + ", column " +
                     std::to_string(e.mark.column + 1));
  }
  if (check.stop()) {
    return error(Code::kInvalidArgument, "InvalidYaml",
                 what + ": not valid YAML: " + check.problem);
  }
  return Status::ok();
}

StatusOr<std::vector<rapidjson::Document>> parseYamlDocuments(const std::string& text,
                                                              const std::string& what) {
  if (auto checked = checkYamlStream(text, what); !checked.isOk()) return checked;
  std::vector<YAML::Node> nodes;
  try {
    nodes = YAML::LoadAll(text);
  } catch (const YAML::Exception& e) {
    return error(Code::kInvalidArgument, "InvalidYaml",
                 what + ": not valid YAML: " + e.msg + " at line " +
                     std::to_string(e.mark.line + 1) + ", column " +
                     std::to_string(e.mark.column + 1));
  }
  std::vector<rapidjson::Document> docs;
  for (const auto& node : nodes) {
    if (node.IsNull()) continue;
    // Built in place: a moved Document leaves clang-analyzer seeing its allocator leak.
    auto& doc = docs.emplace_back();
    if (auto s = toJson(node, doc, doc.GetAllocator(), what); !s.isOk()) return s;
  }
  return docs;
}

}  // namespace banlieue::api
