#include "plugins/vsphere/src/soap_client.h"

#include <banlieue/sdk/host.h>

#include <algorithm>

namespace banlieue::vsphere {
namespace {

constexpr std::string_view kEnvelopeStart =
    R"(<?xml version="1.0" encoding="UTF-8"?>)"
    R"(<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/")"
    R"( xmlns:xsd="http://www.w3.org/2001/XMLSchema")"
    R"( xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><soapenv:Body>)";
constexpr std::string_view kEnvelopeEnd = "</soapenv:Body></soapenv:Envelope>";
constexpr std::string_view kSessionCookie = "vmware_soap_session";

std::string buildEnvelope(std::string_view method, const MoRef& self, std::string_view arguments) {
  std::string out(kEnvelopeStart);
  out += '<';
  out += method;
  out += R"( xmlns="urn:vim25">)";
  XmlWriter w;
  w.moref("_this", self);
  out += w.str();
  out += arguments;
  out += "</";
  out += method;
  out += '>';
  out += kEnvelopeEnd;
  return out;
}

// "vmware_soap_session=\"abc\"; Path=/; HttpOnly" -> "vmware_soap_session=\"abc\"".
std::string sessionCookie(const HttpResponse& response) {
  for (const std::string& value : response.all("set-cookie")) {
    std::string pair = value.substr(0, value.find(';'));
    if (pair.rfind(std::string(kSessionCookie) + "=", 0) == 0) return pair;
  }
  return {};
}

}  // namespace

Credentials::~Credentials() {
  volatile char* p = password.data();
  for (size_t i = 0; i < password.size(); ++i) p[i] = 0;
}

std::chrono::milliseconds remaining(Deadline deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  return std::max(left, std::chrono::milliseconds(1));
}

SoapClient::SoapClient(std::unique_ptr<HttpTransport> transport, Url url,
                       const Credentials& credentials)
    : transport_(std::move(transport)), url_(std::move(url)) {
  // Copied, not moved: a moved-from short string keeps its bytes in place; the source's
  // destructor wipes them.
  credentials_.username = credentials.username;
  credentials_.password = credentials.password;
}

SoapClient::~SoapClient() {
  std::lock_guard lock(mutex_);
  if (cookie_.empty()) return;
  try {
    logoutLocked(std::chrono::steady_clock::now() + std::chrono::seconds(5));
  } catch (const std::exception& e) {
    BANLIEUE_LOG(kDebug, std::string("vsphere logout failed: ") + e.what());
  }
}

SoapResponse SoapClient::parseEnvelope(std::string_view text, int http_status) {
  auto document = std::make_unique<pugi::xml_document>();
  pugi::xml_parse_result parsed = document->load_buffer(text.data(), text.size());
  if (!parsed) {
    throw sdk::Error(sdk::Code::kUnavailable, "InvalidResponse",
                     "vCenter answered HTTP " + std::to_string(http_status) +
                         " with a body that is not XML (" + parsed.description() + " at offset " +
                         std::to_string(parsed.offset) + ")");
  }
  pugi::xml_node envelope = document->document_element();
  pugi::xml_node body = child(envelope, "Body");
  if (localName(envelope.name()) != "Envelope" || !body) {
    throw sdk::Error(
        sdk::Code::kUnavailable, "InvalidResponse",
        "vCenter answered HTTP " + std::to_string(http_status) + " without a SOAP envelope");
  }
  pugi::xml_node first;
  for (pugi::xml_node c = body.first_child(); c; c = c.next_sibling()) {
    if (c.type() == pugi::node_element) {
      first = c;
      break;
    }
  }
  if (!first) {
    throw sdk::Error(sdk::Code::kUnavailable, "InvalidResponse", "empty SOAP body");
  }
  if (localName(first.name()) == "Fault") throw parseSoapFault(first);
  if (http_status != 200) {
    throw sdk::Error(sdk::Code::kUnavailable, "InvalidResponse",
                     "vCenter answered HTTP " + std::to_string(http_status) + " without a fault");
  }
  return {std::move(document), first};
}

SoapResponse SoapClient::post(std::string_view method, const MoRef& self,
                              std::string_view arguments, Deadline deadline) {
  HttpRequest request;
  request.method = "POST";
  request.target = url_.path;
  request.headers = {{"Content-Type", "text/xml; charset=utf-8"}, {"SOAPAction", soap_action_}};
  if (!cookie_.empty()) request.headers.emplace_back("Cookie", cookie_);
  request.body = buildEnvelope(method, self, arguments);
  ++round_trips_;
  HttpResponse response = transport_->send(request, remaining(deadline));
  if (std::string cookie = sessionCookie(response); !cookie.empty()) cookie_ = cookie;
  return parseEnvelope(response.body, response.status);
}

void SoapClient::loginLocked(Deadline deadline) {
  cookie_.clear();
  SoapResponse sc =
      post("RetrieveServiceContent", {"ServiceInstance", "ServiceInstance"}, {}, deadline);
  pugi::xml_node rv = sc.returnval();
  content_.root_folder = readMoRef(child(rv, "rootFolder"));
  content_.property_collector = readMoRef(child(rv, "propertyCollector"));
  content_.view_manager = readMoRef(child(rv, "viewManager"));
  content_.session_manager = readMoRef(child(rv, "sessionManager"));
  content_.search_index = readMoRef(child(rv, "searchIndex"));
  content_.file_manager = readMoRef(child(rv, "fileManager"));
  content_.custom_fields_manager = readMoRef(child(rv, "customFieldsManager"));
  content_.task_manager = readMoRef(child(rv, "taskManager"));
  content_.event_manager = readMoRef(child(rv, "eventManager"));
  content_.api_version = childText(child(rv, "about"), "apiVersion").value_or("");
  content_.instance_uuid = childText(child(rv, "about"), "instanceUuid").value_or("");
  if (content_.session_manager.empty() || content_.property_collector.empty()) {
    throw sdk::Error(sdk::Code::kUnavailable, "InvalidResponse",
                     "the endpoint's ServiceContent has no session manager: not a vCenter?");
  }
  // Speak the server's own API version from here on (urn:vim25 alone means the oldest).
  if (!content_.api_version.empty()) soap_action_ = "urn:vim25/" + content_.api_version;
  have_content_ = true;

  XmlWriter args;
  args.text("userName", credentials_.username).text("password", credentials_.password);
  post("Login", content_.session_manager, args.str(), deadline);
  if (cookie_.empty()) {
    throw sdk::Error(sdk::Code::kUnavailable, "InvalidResponse",
                     "Login succeeded but the server set no vmware_soap_session cookie");
  }
  ++logins_;
  BANLIEUE_LOG(kDebug,
               "vsphere session opened for " + credentials_.username + " at " + url_.origin());
}

void SoapClient::logoutLocked(Deadline deadline) {
  post("Logout", content_.session_manager, {}, deadline);
  cookie_.clear();
}

void SoapClient::connect(Deadline deadline) {
  std::lock_guard lock(mutex_);
  if (cookie_.empty()) loginLocked(deadline);
}

const ServiceContent& SoapClient::content(Deadline deadline) {
  std::lock_guard lock(mutex_);
  if (!have_content_ || cookie_.empty()) loginLocked(deadline);
  return content_;
}

SoapResponse SoapClient::call(std::string_view method, const MoRef& self,
                              std::string_view arguments, Deadline deadline) {
  std::lock_guard lock(mutex_);
  for (int attempt = 0;; ++attempt) {
    bool fresh_session = false;
    if (cookie_.empty()) {
      loginLocked(deadline);
      fresh_session = true;
    }
    try {
      return post(method, self, arguments, deadline);
    } catch (const VimFault& fault) {
      // An expired session, or a server that restarted and forgot it: log in again once. A
      // fault right after a fresh login is real (no permission to log in, say).
      if (fault.kind() != FaultKind::kNotAuthenticated || fresh_session || attempt > 0) throw;
      BANLIEUE_LOG(kInfo, "vsphere session expired at " + url_.origin() + "; logging in again");
      cookie_.clear();
    }
  }
}

HttpResponse SoapClient::sendWithSession(HttpRequest request, Deadline deadline) {
  std::lock_guard lock(mutex_);
  if (cookie_.empty()) loginLocked(deadline);
  request.headers.emplace_back("Cookie", cookie_);
  ++round_trips_;
  return transport_->send(request, remaining(deadline));
}

}  // namespace banlieue::vsphere
