#include "host/roles/provider/console_access.h"

#include <banlieue/sdk/json.h>

namespace banlieue::roles::provider {
namespace {

namespace json = sdk::json;

Status badHello(const std::string& what) {
  return {Code::kInvalidArgument, "BadConsoleRequest", "console request: " + what};
}

std::string field(const rapidjson::Value& object, const char* name) {
  return json::stringOr(&object, name);
}

}  // namespace

StatusOr<ConsoleHello> parseConsoleHello(std::string_view line) {
  if (line.size() > kMaxConsoleHello) {
    return badHello("longer than " + std::to_string(kMaxConsoleHello) + " bytes");
  }
  rapidjson::Document doc;
  try {
    doc = json::parse(line, "console request");
  } catch (const sdk::Error& e) {
    return Status(Code::kInvalidArgument, "BadConsoleRequest", e.what());
  }
  if (!doc.IsObject()) return badHello("not a JSON object");
  ConsoleHello hello;
  hello.token = field(doc, "token");
  hello.ns = field(doc, "namespace");
  hello.virtual_machine = field(doc, "virtualMachine");
  if (const auto* c = json::member(&doc, "console"); c != nullptr) {
    if (!c->IsString()) return badHello("console must be a string");
    hello.console = c->GetString();
  }
  if (hello.token.empty()) return badHello("no token (the bearer token of whoever connects)");
  if (hello.ns.empty() || hello.virtual_machine.empty()) {
    return badHello("namespace and virtualMachine name the VM whose console to open");
  }
  if (hello.console != "serial" && hello.console != "webmks") {
    return badHello("console '" + hello.console +
                    "' is not one this provider serves (serial, webmks)");
  }
  return hello;
}

std::string encodeConsoleHello(const ConsoleHello& hello) {
  rapidjson::Document doc(rapidjson::kObjectType);
  auto& a = doc.GetAllocator();
  doc.AddMember("token", json::stringValue(hello.token, a), a);
  doc.AddMember("namespace", json::stringValue(hello.ns, a), a);
  doc.AddMember("virtualMachine", json::stringValue(hello.virtual_machine, a), a);
  doc.AddMember("console", json::stringValue(hello.console, a), a);
  return json::serialize(doc) + "\n";
}

std::string tokenReviewBody(const std::string& token) {
  rapidjson::Document doc(rapidjson::kObjectType);
  auto& a = doc.GetAllocator();
  doc.AddMember("apiVersion", "authentication.k8s.io/v1", a);
  doc.AddMember("kind", "TokenReview", a);
  rapidjson::Value spec(rapidjson::kObjectType);
  spec.AddMember("token", json::stringValue(token, a), a);
  doc.AddMember("spec", spec, a);
  return json::serialize(doc);
}

StatusOr<ConsoleUser> reviewedUser(const rapidjson::Value& review) {
  if (!json::boolean(&review, "status.authenticated", false)) {
    std::string why = json::stringOr(&review, "status.error");
    return Status(
        Code::kUnauthenticated, "Unauthenticated",
        "the token was not accepted by the apiserver" + (why.empty() ? std::string() : ": " + why));
  }
  ConsoleUser user;
  user.username = json::stringOr(&review, "status.user.username");
  user.uid = json::stringOr(&review, "status.user.uid");
  if (const auto* groups = json::find(&review, "status.user.groups");
      groups != nullptr && groups->IsArray()) {
    for (const auto& g : groups->GetArray()) {
      if (g.IsString()) user.groups.emplace_back(g.GetString());
    }
  }
  if (const auto* extra = json::find(&review, "status.user.extra");
      extra != nullptr && extra->IsObject()) {
    for (const auto& m : extra->GetObject()) {
      auto& values = user.extra[m.name.GetString()];
      if (!m.value.IsArray()) continue;
      for (const auto& v : m.value.GetArray()) {
        if (v.IsString()) values.emplace_back(v.GetString());
      }
    }
  }
  if (user.username.empty()) {
    return Status(Code::kUnauthenticated, "Unauthenticated",
                  "the apiserver accepted the token but named no user");
  }
  return user;
}

std::string consoleAccessReviewBody(const ConsoleUser& user, const std::string& ns,
                                    const std::string& name) {
  rapidjson::Document doc(rapidjson::kObjectType);
  auto& a = doc.GetAllocator();
  doc.AddMember("apiVersion", "authorization.k8s.io/v1", a);
  doc.AddMember("kind", "SubjectAccessReview", a);
  rapidjson::Value spec(rapidjson::kObjectType);
  spec.AddMember("user", json::stringValue(user.username, a), a);
  if (!user.uid.empty()) spec.AddMember("uid", json::stringValue(user.uid, a), a);
  spec.AddMember("groups", json::stringArray(user.groups, a), a);
  if (!user.extra.empty()) {
    rapidjson::Value extra(rapidjson::kObjectType);
    for (const auto& [key, values] : user.extra) {
      extra.AddMember(json::stringValue(key, a), json::stringArray(values, a), a);
    }
    spec.AddMember("extra", extra, a);
  }
  rapidjson::Value attributes(rapidjson::kObjectType);
  attributes.AddMember("namespace", json::stringValue(ns, a), a);
  attributes.AddMember("verb", "get", a);
  attributes.AddMember("group", "banlieue.io", a);
  attributes.AddMember("resource", "virtualmachines", a);
  attributes.AddMember("subresource", "console", a);
  attributes.AddMember("name", json::stringValue(name, a), a);
  spec.AddMember("resourceAttributes", attributes, a);
  doc.AddMember("spec", spec, a);
  return json::serialize(doc);
}

Status consoleAccessDecision(const rapidjson::Value& review, const ConsoleUser& user,
                             const std::string& ns, const std::string& name) {
  if (json::boolean(&review, "status.allowed", false)) return Status::ok();
  std::string message = "user \"" + user.username +
                        "\" may not open the console of virtualmachine " + ns + "/" + name +
                        ": it needs get on virtualmachines/console (group banlieue.io) in "
                        "namespace " +
                        ns;
  if (auto reason = json::stringOr(&review, "status.reason"); !reason.empty()) {
    message += " (" + reason + ")";
  }
  if (auto error = json::stringOr(&review, "status.evaluationError"); !error.empty()) {
    message += "; the authorizer said: " + error;
  }
  return {Code::kPermissionDenied, "Forbidden", message};
}

std::string consoleVerdictLine(const Status& outcome, const std::string& console,
                               const std::string& description) {
  rapidjson::Document doc(rapidjson::kObjectType);
  auto& a = doc.GetAllocator();
  if (outcome.isOk()) {
    doc.AddMember("status", "Connected", a);
    doc.AddMember("console", json::stringValue(console, a), a);
    if (!description.empty()) doc.AddMember("description", json::stringValue(description, a), a);
  } else {
    doc.AddMember("status", "Failure", a);
    doc.AddMember("code", json::stringValue(sdk::codeName(outcome.code()), a), a);
    doc.AddMember("reason", json::stringValue(outcome.reason(), a), a);
    doc.AddMember("message", json::stringValue(outcome.message(), a), a);
  }
  return json::serialize(doc) + "\n";
}

std::string consoleVerdictLine(const ConsoleConnected& connected) {
  rapidjson::Document doc(rapidjson::kObjectType);
  auto& a = doc.GetAllocator();
  doc.AddMember("status", "Connected", a);
  doc.AddMember("console", json::stringValue(connected.console, a), a);
  if (!connected.description.empty()) {
    doc.AddMember("description", json::stringValue(connected.description, a), a);
  }
  if (!connected.url.empty()) doc.AddMember("url", json::stringValue(connected.url, a), a);
  if (connected.expires_in_seconds > 0) {
    doc.AddMember("expiresInSeconds", connected.expires_in_seconds, a);
  }
  return json::serialize(doc) + "\n";
}

Status parseConsoleVerdict(std::string_view line, std::string* description) {
  ConsoleConnected connected;
  Status verdict = parseConsoleVerdict(line, &connected);
  if (verdict.isOk() && description != nullptr) *description = connected.description;
  return verdict;
}

Status parseConsoleVerdict(std::string_view line, ConsoleConnected* connected) {
  auto unreadable = [&](const std::string& why) {
    return Status(Code::kUnavailable, "ConsoleProtocolError",
                  "the console server's answer " + why + " (is this a banlieue provider?)");
  };
  rapidjson::Document doc;
  try {
    doc = json::parse(line, "console answer");
  } catch (const sdk::Error&) {
    return unreadable("is not JSON");
  }
  const std::string status = json::stringOr(&doc, "status");
  if (status == "Connected") {
    if (connected != nullptr) {
      connected->console = json::stringOr(&doc, "console");
      connected->description = json::stringOr(&doc, "description");
      connected->url = json::stringOr(&doc, "url");
      connected->expires_in_seconds = json::integer(&doc, "expiresInSeconds").value_or(0);
    }
    return Status::ok();
  }
  if (status != "Failure") return unreadable("has no status");
  Code code = Code::kUnknown;
  const std::string name = json::stringOr(&doc, "code");
  for (int c = BANLIEUE_OK; c <= BANLIEUE_IN_PROGRESS; ++c) {
    if (sdk::codeName(static_cast<banlieue_status>(c)) == name && c != BANLIEUE_OK) {
      code = static_cast<Code>(c);
    }
  }
  return {code, json::stringOr(&doc, "reason"), json::stringOr(&doc, "message")};
}

}  // namespace banlieue::roles::provider
