#include "host/kube/config.h"

#include "host/common/base64.h"
#include "host/common/logging.h"

#include <banlieue/sdk/json.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <chrono>
#include <cstdio>

#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>

namespace banlieue::kube {
namespace {

StatusOr<std::string> readText(const std::filesystem::path& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return error(Code::kNotFound, "FileUnreadable", path.string() + ": cannot read " + what);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// base64 for *-data fields; the error names the field.
StatusOr<std::string> decodeBase64(const std::string& in, const std::string& field) {
  auto decoded = common::decodeBase64(in);
  if (!decoded) {
    return error(Code::kInvalidArgument, "InvalidKubeconfig", field + " is not valid base64");
  }
  return std::move(*decoded);
}

struct NamedEntries {
  std::map<std::string, YAML::Node> clusters, users, contexts;
  std::map<std::string, std::filesystem::path> origin;  // "cluster/x" -> file it came from
  std::string current_context;
  std::filesystem::path current_context_file;
};

// client-go: the first file to define a name wins; the first non-empty current-context wins.
Status mergeFile(const std::filesystem::path& file, NamedEntries& merged) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(file.string());
  } catch (const YAML::BadFile&) {
    return error(Code::kNotFound, "KubeconfigUnreadable",
                 file.string() + ": cannot read kubeconfig");
  } catch (const YAML::Exception& e) {
    return error(Code::kInvalidArgument, "InvalidKubeconfig",
                 file.string() + ": not valid YAML (line " + std::to_string(e.mark.line + 1) + ")");
  }
  if (!root.IsMap() && !root.IsNull()) {
    return error(Code::kInvalidArgument, "InvalidKubeconfig",
                 file.string() + ": must be a YAML mapping");
  }
  auto collect = [&](const char* list, std::map<std::string, YAML::Node>& into,
                     const char* body) -> Status {
    const YAML::Node entries = root[list];
    if (!entries) return Status::ok();
    if (!entries.IsSequence()) {
      return error(Code::kInvalidArgument, "InvalidKubeconfig",
                   file.string() + ": '" + list + "' must be a list");
    }
    for (std::size_t i = 0; i < entries.size(); ++i) {
      const YAML::Node entry = entries[i];
      if (!entry.IsMap() || !entry["name"] || !entry["name"].IsScalar()) {
        return error(Code::kInvalidArgument, "InvalidKubeconfig",
                     file.string() + ": " + list + "[" + std::to_string(i) + "] has no name");
      }
      std::string name = entry["name"].as<std::string>();
      if (into.count(name) == 0) {
        into[name] = entry[body] ? entry[body] : YAML::Node(YAML::NodeType::Map);
        merged.origin[std::string(list) + "/" + name] = file;
      }
    }
    return Status::ok();
  };
  if (auto st = collect("clusters", merged.clusters, "cluster"); !st.isOk()) return st;
  if (auto st = collect("users", merged.users, "user"); !st.isOk()) return st;
  if (auto st = collect("contexts", merged.contexts, "context"); !st.isOk()) return st;
  if (merged.current_context.empty() && root["current-context"] &&
      root["current-context"].IsScalar()) {
    merged.current_context = root["current-context"].as<std::string>();
    merged.current_context_file = file;
  }
  return Status::ok();
}

std::string scalar(const YAML::Node& node, const char* key) {
  if (!node.IsMap()) return {};
  const YAML::Node v = node[key];
  return v && v.IsScalar() ? v.as<std::string>() : std::string();
}

// A field given inline (*-data, base64) or as a file path relative to the kubeconfig's folder.
StatusOr<std::string> dataOrFile(const YAML::Node& node, const char* data_key, const char* file_key,
                                 const std::filesystem::path& kubeconfig,
                                 const std::string& where) {
  if (auto data = scalar(node, data_key); !data.empty()) {
    return decodeBase64(data, kubeconfig.string() + ": " + where + "." + data_key);
  }
  if (auto file = scalar(node, file_key); !file.empty()) {
    std::filesystem::path path(file);
    if (path.is_relative()) path = kubeconfig.parent_path() / path;
    auto text = readText(path, where + "." + file_key);
    if (!text.ok()) {
      return error(Code::kNotFound, "KubeconfigReferenceUnreadable",
                   kubeconfig.string() + ": " + where + "." + file_key + " " + path.string() +
                       " cannot be read");
    }
    return text;
  }
  return std::string();
}

std::string shellQuote(const std::string& arg) {
  std::string out = "'";
  for (char ch : arg) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return out + "'";
}

// "2026-11-29T12:00:00Z" (RFC 3339, UTC, optional fraction); nullopt when unparsable.
std::optional<std::chrono::system_clock::time_point> parseRfc3339(const std::string& text) {
  std::tm tm{};
  const char* rest = strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (rest == nullptr) return std::nullopt;
  std::time_t t = timegm(&tm);
  // system_clock counts nanoseconds: it ends in 2262. Later expiries mean "never" here.
  if (t >= std::chrono::system_clock::to_time_t(std::chrono::system_clock::time_point::max())) {
    return std::chrono::system_clock::time_point::max();
  }
  // And it starts in 1677: earlier expiries have long passed (converting them overflowed,
  // found by fuzz/exec_credential_fuzz.cc).
  if (t <= std::chrono::system_clock::to_time_t(std::chrono::system_clock::time_point::min())) {
    return std::chrono::system_clock::time_point::min();
  }
  return std::chrono::system_clock::from_time_t(t);
}

// How to run one kubeconfig user's exec credential plugin (users[].user.exec), prepared once
// so the plugin can run again when its credential expires.
struct ExecCommand {
  std::string shell_line;  // env ... command args (stderr and timeout added per run)
  std::string command;
  std::string prefix;  // "<kubeconfig>: users[u].exec" for messages
};

StatusOr<ExecCommand> prepareExecCommand(const YAML::Node& exec,
                                         const std::filesystem::path& kubeconfig,
                                         const std::string& where) {
  ExecCommand prepared;
  prepared.prefix = kubeconfig.string() + ": " + where + ".exec";
  std::string command = scalar(exec, "command");
  if (command.empty()) {
    return error(Code::kInvalidArgument, "InvalidKubeconfig",
                 prepared.prefix + " is missing field 'command'");
  }
  std::string api_version = scalar(exec, "apiVersion");
  if (api_version.empty()) api_version = "client.authentication.k8s.io/v1beta1";
  // A command with a slash but not absolute is relative to the kubeconfig's folder.
  if (command.find('/') != std::string::npos && command[0] != '/') {
    command = (kubeconfig.parent_path() / command).string();
  }
  std::string line = "env KUBERNETES_EXEC_INFO=" +
                     shellQuote(R"({"apiVersion":")" + api_version +
                                R"(","kind":"ExecCredential","spec":{"interactive":false}})");
  if (const YAML::Node env = exec["env"]; env && env.IsSequence()) {
    for (const auto& e : env)
      line += " " + shellQuote(scalar(e, "name") + "=" + scalar(e, "value"));
  }
  line += " " + shellQuote(command);
  if (const YAML::Node args = exec["args"]; args && args.IsSequence()) {
    for (const auto& arg : args) line += " " + shellQuote(arg.as<std::string>());
  }
  prepared.shell_line = line;
  prepared.command = command;
  return prepared;
}

// Runs the plugin and reads the ExecCredential it prints.
StatusOr<ExecCredential> runExecCredential(const ExecCommand& exec) {
  // Its stderr goes to an unnamed file of ours (created, then unlinked at once), inherited as a
  // descriptor: no name another local user could predict or plant a symlink at.
  std::string errors_template =
      (std::filesystem::temp_directory_path() / "banlieue-exec-XXXXXX").string();
  int errors_fd = ::mkstemp(errors_template.data());
  if (errors_fd < 0) {
    return error(Code::kUnavailable, "ExecCredentialFailed",
                 exec.prefix + ": cannot create a file for its stderr: " + std::strerror(errno));
  }
  ::unlink(errors_template.c_str());
  std::string line = "timeout 30 " + exec.shell_line + " 2>&" + std::to_string(errors_fd) + " " +
                     std::to_string(errors_fd) + ">&- </dev/null";
  std::string output;
  FILE* pipe = ::popen(line.c_str(), "r");
  if (pipe == nullptr) {
    ::close(errors_fd);
    return error(Code::kUnavailable, "ExecCredentialFailed", exec.prefix + ": cannot start it");
  }
  char buffer[4096];
  for (size_t n; (n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0;) output.append(buffer, n);
  int status = ::pclose(pipe);
  std::string stderr_text;
  if (::lseek(errors_fd, 0, SEEK_SET) == 0) {
    for (ssize_t n;
         (n = ::read(errors_fd, buffer, sizeof(buffer))) > 0 && stderr_text.size() < 4096;)
      stderr_text.append(buffer, static_cast<size_t>(n));
  }
  ::close(errors_fd);
  if (status != 0) {
    return error(Code::kUnauthenticated, "ExecCredentialFailed",
                 exec.prefix + ": '" + exec.command + "' failed" +
                     (stderr_text.empty() ? "" : ": " + stderr_text.substr(0, 300)));
  }
  return parseExecCredential(output, exec.prefix + ": '" + exec.command + "'");
}

// An exec plugin's token, run again when it has expired or the server rejected it (401), as
// client-go does. A failed refresh keeps the old token, so the request fails with the server's
// 401 and the log says why the plugin failed.
class ExecTokenSource final : public TokenSource {
 public:
  ExecTokenSource(ExecCommand command, const ExecCredential& first)
      : command_(std::move(command)), token_(first.token), expires_(first.expires) {}

  // One caller refreshes, outside the lock; the others go on with the token there is (a
  // rejected one gets its 401 and is retried), rather than wait up to the plugin's 30 s.
  std::string token() override {
    {
      std::lock_guard lock(mutex_);
      bool expired = expires_ && std::chrono::system_clock::now() >= *expires_;
      if (!(stale_ || expired) || refreshing_) return token_;
      refreshing_ = true;
    }
    auto fresh = runExecCredential(command_);
    std::lock_guard lock(mutex_);
    refreshing_ = false;
    if (fresh.ok() && !fresh->token.empty()) {
      token_ = fresh->token;
      expires_ = fresh->expires;
      stale_ = false;
    } else if (!fresh.ok()) {
      common::logger("kube")->warn("refreshing the credential failed: {}",
                                   fresh.status().message());
    }
    return token_;
  }

  void invalidate() override {
    std::lock_guard lock(mutex_);
    stale_ = true;
  }

 private:
  ExecCommand command_;
  std::mutex mutex_;
  std::string token_;
  std::optional<std::chrono::system_clock::time_point> expires_;
  bool stale_ = false;
  bool refreshing_ = false;
};

}  // namespace

StatusOr<ExecCredential> parseExecCredential(std::string_view output, const std::string& what) {
  rapidjson::Document doc;
  if (!sdk::json::nestsDeeperThan(output)) doc.Parse(output.data(), output.size());
  if (!doc.IsObject() || doc.HasParseError() ||
      sdk::json::stringOr(&doc, "kind") != "ExecCredential") {
    return error(Code::kUnauthenticated, "ExecCredentialFailed",
                 what + " did not print an ExecCredential");
  }
  ExecCredential credential;
  credential.token = sdk::json::stringOr(&doc, "status.token");
  credential.client_cert_pem = sdk::json::stringOr(&doc, "status.clientCertificateData");
  credential.client_key_pem = sdk::json::stringOr(&doc, "status.clientKeyData");
  if (auto expiry = sdk::json::stringOr(&doc, "status.expirationTimestamp"); !expiry.empty()) {
    credential.expires = parseRfc3339(expiry);
  }
  if (credential.token.empty() && credential.client_cert_pem.empty()) {
    return error(Code::kUnauthenticated, "ExecCredentialFailed",
                 what + ": the ExecCredential carries neither a token nor a client certificate");
  }
  return credential;
}

std::string Connection::bearerToken() const {
  if (token_source) return token_source->token();
  if (token_file.empty()) return token;
  std::ifstream in(token_file);
  std::string value((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!value.empty() && (value.back() == '\n' || value.back() == '\r' || value.back() == ' '))
    value.pop_back();
  return value.empty() ? token : value;
}

bool Connection::invalidateToken() const {
  if (!token_source) return false;
  token_source->invalidate();
  return true;
}

std::vector<std::filesystem::path> splitKubeconfigEnv(const std::string& value) {
  std::vector<std::filesystem::path> files;
  std::stringstream in(value);
  for (std::string item; std::getline(in, item, ':');) {
    if (!item.empty()) files.emplace_back(item);
  }
  return files;
}

namespace {

StatusOr<Connection> resolveKubeconfig(const KubeconfigOptions& options) {
  std::vector<std::filesystem::path> files = options.files;
  if (files.empty()) {
    if (const char* env = std::getenv("KUBECONFIG"); env && *env) files = splitKubeconfigEnv(env);
  }
  if (files.empty()) {
    const char* home = std::getenv("HOME");
    files.emplace_back(std::filesystem::path(home ? home : "/root") / ".kube" / "config");
  }
  NamedEntries merged;
  for (const auto& file : files) {
    if (!std::filesystem::exists(file) && files.size() > 1)
      continue;  // client-go skips missing ones
    if (auto st = mergeFile(file, merged); !st.isOk()) return st;
  }
  std::string context_name = options.context.value_or(merged.current_context);
  std::string first = files.front().string();
  if (context_name.empty()) {
    return error(Code::kInvalidArgument, "InvalidKubeconfig",
                 first + ": no current-context is set and no --context was given");
  }
  auto context_it = merged.contexts.find(context_name);
  if (context_it == merged.contexts.end()) {
    return error(Code::kNotFound, "InvalidKubeconfig",
                 first + ": context '" + context_name + "' is not defined");
  }
  const YAML::Node& context = context_it->second;
  auto context_file = merged.origin["contexts/" + context_name];
  std::string cluster_name = scalar(context, "cluster");
  std::string user_name = scalar(context, "user");
  if (cluster_name.empty()) {
    return error(
        Code::kInvalidArgument, "InvalidKubeconfig",
        context_file.string() + ": context '" + context_name + "' is missing field 'cluster'");
  }
  auto cluster_it = merged.clusters.find(cluster_name);
  if (cluster_it == merged.clusters.end()) {
    return error(Code::kNotFound, "InvalidKubeconfig",
                 context_file.string() + ": context '" + context_name + "' names cluster '" +
                     cluster_name + "', which is not defined");
  }
  const YAML::Node& cluster = cluster_it->second;
  auto cluster_file = merged.origin["clusters/" + cluster_name];

  Connection c;
  c.source = "kubeconfig " + context_file.string() + ", context " + context_name;
  c.server = scalar(cluster, "server");
  if (c.server.empty()) {
    return error(
        Code::kInvalidArgument, "InvalidKubeconfig",
        cluster_file.string() + ": cluster '" + cluster_name + "' is missing field 'server'");
  }
  while (!c.server.empty() && c.server.back() == '/') c.server.pop_back();
  c.insecure_skip_tls_verify = scalar(cluster, "insecure-skip-tls-verify") == "true";
  c.tls_server_name = scalar(cluster, "tls-server-name");
  auto ca = dataOrFile(cluster, "certificate-authority-data", "certificate-authority", cluster_file,
                       "clusters[" + cluster_name + "]");
  if (!ca.ok()) return ca.status();
  c.ca_pem = *ca;
  if (c.insecure_skip_tls_verify) {
    common::logger("kube")->warn(
        "{}: insecure-skip-tls-verify is set: the API server's certificate is not verified",
        c.source);
  }
  if (auto ns = scalar(context, "namespace"); !ns.empty()) c.default_namespace = ns;

  if (!user_name.empty()) {
    auto user_it = merged.users.find(user_name);
    if (user_it == merged.users.end()) {
      return error(Code::kNotFound, "InvalidKubeconfig",
                   context_file.string() + ": context '" + context_name + "' names user '" +
                       user_name + "', which is not defined");
    }
    const YAML::Node& user = user_it->second;
    auto user_file = merged.origin["users/" + user_name];
    std::string where = "users[" + user_name + "]";
    auto cert = dataOrFile(user, "client-certificate-data", "client-certificate", user_file, where);
    if (!cert.ok()) return cert.status();
    auto key = dataOrFile(user, "client-key-data", "client-key", user_file, where);
    if (!key.ok()) return key.status();
    c.client_cert_pem = *cert;
    c.client_key_pem = *key;
    if (c.client_cert_pem.empty() != c.client_key_pem.empty()) {
      return error(
          Code::kInvalidArgument, "InvalidKubeconfig",
          user_file.string() + ": user '" + user_name + "' has a client " +
              (c.client_cert_pem.empty() ? "key but no certificate" : "certificate but no key"));
    }
    c.token = scalar(user, "token");
    if (auto file = scalar(user, "tokenFile"); !file.empty()) {
      c.token_file = file;
      if (c.token_file.is_relative()) c.token_file = user_file.parent_path() / c.token_file;
    }
    if (const YAML::Node exec = user["exec"]; exec) {
      if (!options.allow_exec_plugins) {
        return error(Code::kPermissionDenied, "ExecPluginDenied",
                     user_file.string() + ": user '" + user_name +
                         "' runs an exec credential plugin, and exec plugins are not allowed");
      }
      auto command = prepareExecCommand(exec, user_file, where);
      if (!command.ok()) return command.status();
      auto credential = runExecCredential(*command);
      if (!credential.ok()) return credential.status();
      if (!credential->token.empty()) {
        c.token = credential->token;
        c.token_source = std::make_shared<ExecTokenSource>(*command, *credential);
      }
      if (!credential->client_cert_pem.empty()) {
        c.client_cert_pem = credential->client_cert_pem;
        c.client_key_pem = credential->client_key_pem;
      }
    }
  }
  return c;
}

}  // namespace

StatusOr<Connection> loadKubeconfig(const KubeconfigOptions& options) {
  // yaml-cpp throws where a node has another shape than the one asked for (a scalar where a
  // mapping belongs, a mapping among exec args): such a kubeconfig is invalid, not a crash.
  try {
    return resolveKubeconfig(options);
  } catch (const YAML::Exception& e) {
    return error(Code::kInvalidArgument, "InvalidKubeconfig",
                 "kubeconfig: a field has the wrong type (line " + std::to_string(e.mark.line + 1) +
                     "): " + e.msg);
  }
}

StatusOr<Connection> loadInClusterConfig(const std::filesystem::path& root) {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (host == nullptr || port == nullptr || *host == '\0') {
    return error(
        Code::kFailedPrecondition, "NotInCluster",
        "in-cluster config: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set");
  }
  Connection c;
  std::string h(host);
  c.server = "https://" + (h.find(':') != std::string::npos ? "[" + h + "]" : h) + ":" + port;
  c.token_file = root / "token";
  auto ca = readText(root / "ca.crt", "the service account CA");
  if (!ca.ok()) return ca.status();
  c.ca_pem = *ca;
  if (c.bearerToken().empty()) {
    return error(Code::kFailedPrecondition, "NotInCluster",
                 (root / "token").string() + ": no service account token");
  }
  if (auto ns = readText(root / "namespace", "the namespace"); ns.ok() && !ns->empty()) {
    c.default_namespace = *ns;
    while (!c.default_namespace.empty() &&
           std::isspace(static_cast<unsigned char>(c.default_namespace.back()))) {
      c.default_namespace.pop_back();
    }
  }
  c.source = "in-cluster service account";
  return c;
}

StatusOr<Connection> loadDefaultConfig(const std::optional<std::filesystem::path>& kubeconfig,
                                       const std::optional<std::string>& context) {
  KubeconfigOptions options;
  options.context = context;
  if (kubeconfig) {
    options.files = {*kubeconfig};
    return loadKubeconfig(options);
  }
  const char* env = std::getenv("KUBECONFIG");
  if ((env == nullptr || *env == '\0') && std::getenv("KUBERNETES_SERVICE_HOST") != nullptr) {
    return loadInClusterConfig();
  }
  return loadKubeconfig(options);
}

}  // namespace banlieue::kube
