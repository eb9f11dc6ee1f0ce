// Who may open which console (docs/adr/0040). A console connection opens with one line of JSON,
// the hello; the provider answers with one line, the verdict, and then the stream starts.
// Whoever connects proves who they are with their bearer token (TokenReview) and is allowed when
// the apiserver's authorizer grants them `get` on `virtualmachines/console` of that VM
// (SubjectAccessReview): a platform team grants consoles per namespace with ordinary RBAC, and
// nobody ever sees the backend's credentials. Pure: the server (console_server.h) makes the two
// reviews and the plugin call.
#pragma once

#include "host/common/status_or.h"
#include "host/kube/client.h"

#include <rapidjson/document.h>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace banlieue::roles::provider {

inline const kube::ResourceType kTokenReviewType{"authentication.k8s.io", "v1", "tokenreviews",
                                                 false};
inline const kube::ResourceType kSubjectAccessReviewType{"authorization.k8s.io", "v1",
                                                         "subjectaccessreviews", false};

// The port provider pods serve consoles on, and `banlieue vm console` forwards to.
inline constexpr int kDefaultConsolePort = 8086;

// The longest hello accepted (a bearer token is a few KiB at most).
inline constexpr size_t kMaxConsoleHello = size_t{64} * 1024;

// {"token": "...", "namespace": "...", "virtualMachine": "...", "console": "serial"}; console
// "webmks" asks for a ticket URL instead of a stream (a vSphere VM's graphical console).
struct ConsoleHello {
  std::string token;
  std::string ns;
  std::string virtual_machine;
  std::string console = "serial";
};

// The person behind a token, as TokenReview reports them.
struct ConsoleUser {
  std::string username;
  std::string uid;
  std::vector<std::string> groups;
  std::map<std::string, std::vector<std::string>> extra;
};

// InvalidArgument (reason BadConsoleRequest) naming what is wrong with the line.
StatusOr<ConsoleHello> parseConsoleHello(std::string_view line);
std::string encodeConsoleHello(const ConsoleHello& hello);

std::string tokenReviewBody(const std::string& token);
// Unauthenticated (reason Unauthenticated) unless status.authenticated is true.
StatusOr<ConsoleUser> reviewedUser(const rapidjson::Value& review);

// A review of `get` on virtualmachines/console of `name` in `ns` for `user`.
std::string consoleAccessReviewBody(const ConsoleUser& user, const std::string& ns,
                                    const std::string& name);
// PermissionDenied (reason Forbidden) unless status.allowed, in words a user can act on: who,
// what they would need, and the authorizer's own reason when it gave one.
Status consoleAccessDecision(const rapidjson::Value& review, const ConsoleUser& user,
                             const std::string& ns, const std::string& name);

// What a connected verdict says: which console, in words; for a ticket console (webmks) the
// URL to connect to and how long it is valid (the URL is a credential: shown to the person who
// asked, never logged or put in an Event), after which the server closes the connection.
struct ConsoleConnected {
  std::string console;
  std::string description;
  std::string url;
  int64_t expires_in_seconds = 0;
};

// The verdict line: {"status":"Connected","console":...,"description":...} (with "url" and
// "expiresInSeconds" for a ticket console) or
// {"status":"Failure","code":...,"reason":...,"message":...}, newline-terminated.
std::string consoleVerdictLine(const Status& outcome, const std::string& console = {},
                               const std::string& description = {});
std::string consoleVerdictLine(const ConsoleConnected& connected);
// The verdict a client read: OK, or the failure it carries (unreadable lines are Unavailable,
// reason ConsoleProtocolError). `description` receives what the console is, when connected.
Status parseConsoleVerdict(std::string_view line, std::string* description = nullptr);
Status parseConsoleVerdict(std::string_view line, ConsoleConnected* connected);

}  // namespace banlieue::roles::provider
