// A vim25 SOAP client for one vCenter: one kept-alive connection, one session reused by every
// call of a plugin instance (vCenter limits concurrent sessions; a session per call exhausts
// them), the session cookie handled explicitly, re-login once on NotAuthenticated (an expired
// or restarted server), and logout when the client is destroyed.
#pragma once

#include "plugins/vsphere/src/http_transport.h"
#include "plugins/vsphere/src/vim_fault.h"
#include "plugins/vsphere/src/xml.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>

namespace banlieue::vsphere {

using Deadline = std::chrono::steady_clock::time_point;

// What RetrieveServiceContent returns that the plugin uses.
struct ServiceContent {
  MoRef root_folder;
  MoRef property_collector;
  MoRef view_manager;
  MoRef session_manager;
  MoRef search_index;
  MoRef file_manager;
  MoRef custom_fields_manager;
  MoRef task_manager;
  MoRef event_manager;
  std::string api_version;
  std::string instance_uuid;
};

// A parsed response: owns the document; `body` is the <MethodResponse> element.
struct SoapResponse {
  std::unique_ptr<pugi::xml_document> document;
  pugi::xml_node body;
  // <returnval> children (most methods return one).
  pugi::xml_node returnval() const { return child(body, "returnval"); }
};

struct Credentials {
  std::string username;
  std::string password;
  ~Credentials();  // wipes the password
};

class SoapClient {
 public:
  SoapClient(std::unique_ptr<HttpTransport> transport, Url url, const Credentials& credentials);
  ~SoapClient();  // logs out (best effort, bounded)
  SoapClient(const SoapClient&) = delete;
  SoapClient& operator=(const SoapClient&) = delete;

  // Invokes `method` on `self` with the already-encoded argument elements. Logs in first when
  // there is no session. Throws VimFault, TransportError, or sdk::Error (a malformed reply).
  SoapResponse call(std::string_view method, const MoRef& self, std::string_view arguments,
                    Deadline deadline);

  // Logs in now (instance_create checks the credentials eagerly).
  void connect(Deadline deadline);
  const ServiceContent& content(Deadline deadline);

  // A request outside SOAP (datastore /folder transfers) with the session cookie.
  HttpResponse sendWithSession(HttpRequest request, Deadline deadline);
  const Url& url() const { return url_; }

  // Round trips sent (SOAP calls and HTTP transfers); the benchmark reads it.
  uint64_t roundTrips() const { return round_trips_.load(); }
  // Sessions opened so far. When it moves, whatever the old session made (a PropertyCollector,
  // a ContainerView) is gone with it.
  uint64_t logins() const { return logins_.load(); }

  // Parses a SOAP envelope: the response element, or throws VimFault for a Fault. Exposed for
  // the recorded-response tests and the fuzz target.
  static SoapResponse parseEnvelope(std::string_view text, int http_status);

 private:
  SoapResponse post(std::string_view method, const MoRef& self, std::string_view arguments,
                    Deadline deadline);
  void loginLocked(Deadline deadline);
  void logoutLocked(Deadline deadline);

  std::mutex mutex_;  // one exchange at a time on the one connection
  std::unique_ptr<HttpTransport> transport_;
  Url url_;
  Credentials credentials_;
  std::string soap_action_ = "urn:vim25";
  std::string cookie_;  // "vmware_soap_session=..."; empty without a session
  bool have_content_ = false;
  ServiceContent content_;
  std::atomic<uint64_t> round_trips_{0};
  std::atomic<uint64_t> logins_{0};
};

std::chrono::milliseconds remaining(Deadline deadline);

}  // namespace banlieue::vsphere
