#include "host/roles/vm/console_command.h"

#include "host/kube/api_error.h"
#include "host/kube/client.h"
#include "host/kube/config.h"
#include "host/kube/http_transport.h"
#include "host/roles/controller/vm_reconciler.h"
#include "host/roles/provider/console_access.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <banlieue/sdk/json.h>
#include <CLI/CLI.hpp>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <vector>

extern char** environ;

namespace banlieue::roles::vm {
namespace {

namespace json = sdk::json;
using provider::ConsoleHello;

constexpr char kEscape = 0x1d;  // Ctrl-]

struct ConsoleOptions {
  std::string name;
  std::string namespace_;
  std::string kubeconfig;
  std::string context;
  std::string token;
  std::string address;  // host:port of a console server to use as it is (no port-forward)
  std::string kubectl = "kubectl";
  int port = provider::kDefaultConsolePort;
  int timeout_seconds = 0;
  bool url = false;  // ask for the backend's WebMKS ticket URL instead of the serial stream
};

int fail(const std::string& message) {
  std::cerr << "banlieue vm console: " << message << "\n";
  return app::kExitFailure;
}

bool conditionTrue(const rapidjson::Value& object, const char* type) {
  const auto* conditions = json::find(&object, "status.conditions");
  if (conditions == nullptr || !conditions->IsArray()) return false;
  for (const auto& c : conditions->GetArray()) {
    if (json::stringOr(&c, "type") == type) return json::stringOr(&c, "status") == "True";
  }
  return false;
}

// The pod serving the VM's console: the holder of its Provider's Lease, else the Ready pod of
// its workload (a provider pod is Ready only while it leads, and only the leader serves
// consoles).
struct ConsolePod {
  std::string ns;
  std::string name;
};

StatusOr<ConsolePod> consolePod(kube::KubeClient& client, const std::string& ns,
                                const std::string& vm_name) {
  const std::string what = "virtualmachine " + ns + "/" + vm_name;
  auto vm = client.get(::banlieue::controller::resources::kVirtualMachine, ns, vm_name);
  if (!vm.ok()) {
    return Status(Code::kNotFound, "NotFound",
                  kube::isNotFound(vm.status()) ? what + " does not exist"
                                                : what + ": " + vm.status().message());
  }
  const std::string provider_name = json::stringOr(&*vm, "status.scheduled.providerName");
  if (provider_name.empty()) {
    return Status(Code::kFailedPrecondition, "NotPlaced",
                  what + " is not placed on a Provider yet (see its Scheduled condition)");
  }
  auto provider = client.get(::banlieue::controller::resources::kProvider, ns, provider_name);
  if (!provider.ok()) {
    return Status(Code::kFailedPrecondition, "ProviderUnreadable",
                  "provider " + ns + "/" + provider_name + ": " + provider.status().message());
  }
  const std::string mode = json::stringOr(&*provider, "status.workload.mode");
  const std::string deployment = json::stringOr(&*provider, "status.workload.deploymentName");
  const std::string pod_ns = json::stringOr(&*provider, "status.workload.namespace");
  if (mode == "External") {
    return Status(Code::kFailedPrecondition, "ExternalProvider",
                  "provider " + ns + "/" + provider_name +
                      " runs outside the cluster; reach its console server where it runs "
                      "(--address)");
  }
  if (deployment.empty() || pod_ns.empty()) {
    return Status(Code::kFailedPrecondition, "NoWorkload",
                  "provider " + ns + "/" + provider_name + " has no workload yet");
  }
  // The Lease names the leader at once (its holder is the pod's name); a pod's Ready condition
  // follows only once the kubelet has probed it and written the pod's status, which a busy
  // node does seconds later. The Lease is in the Provider's namespace, named after the
  // Deployment; users who may not read it are served by the Ready pod instead.
  if (auto lease = client.get(kube::resources::kLease, ns, deployment); lease.ok()) {
    const std::string holder = json::stringOr(&*lease, "spec.holderIdentity");
    if (!holder.empty()) {
      auto pod = client.get(kube::resources::kPod, pod_ns, holder);
      if (pod.ok() && json::find(&*pod, "metadata.deletionTimestamp") == nullptr) {
        return ConsolePod{pod_ns, holder};
      }
    }
  }
  kube::ListOptions options;
  options.label_selector = "app.kubernetes.io/instance=" + deployment;
  auto pods = client.list(kube::resources::kPod, pod_ns, options);
  if (!pods.ok()) {
    return Status(Code::kFailedPrecondition, "PodsUnreadable",
                  "the pods of provider " + ns + "/" + provider_name + " in " + pod_ns + ": " +
                      pods.status().message());
  }
  size_t seen = 0;
  if (const auto* items = json::find(&*pods, "items"); items != nullptr && items->IsArray()) {
    seen = items->Size();
    for (const auto& pod : items->GetArray()) {
      if (json::find(&pod, "metadata.deletionTimestamp") == nullptr &&
          conditionTrue(pod, "Ready")) {
        return ConsolePod{pod_ns, json::stringOr(&pod, "metadata.name")};
      }
    }
  }
  return Status(Code::kUnavailable, "NoLeader",
                "none of the " + std::to_string(seen) + " pod(s) of provider " + ns + "/" +
                    provider_name + " (" + options.label_selector + " in " + pod_ns +
                    ") is Ready: none leads, so none serves consoles");
}

// `kubectl port-forward` to the pod, on a local port kubectl picks; ends with this object.
class PortForward {
 public:
  ~PortForward() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      int status = 0;
      ::waitpid(pid_, &status, 0);
    }
    if (out_ >= 0) ::close(out_);
  }

  Status start(const ConsoleOptions& o, const ConsolePod& pod) {
    std::vector<std::string> args = {o.kubectl, "port-forward",    "--namespace",
                                     pod.ns,    "pod/" + pod.name, ":" + std::to_string(o.port)};
    if (!o.kubeconfig.empty()) args.insert(args.begin() + 1, "--kubeconfig=" + o.kubeconfig);
    if (!o.context.empty()) args.insert(args.begin() + 1, "--context=" + o.context);
    int pipe_fds[2];
    if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
      return {Code::kInternal, "PortForwardFailed", std::string("pipe: ") + std::strerror(errno)};
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDERR_FILENO);
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    std::vector<char*> argv;
    argv.reserve(args.size() + 1);
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    int spawned = ::posix_spawnp(&pid_, o.kubectl.c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(pipe_fds[1]);
    out_ = pipe_fds[0];
    if (spawned != 0) {
      pid_ = -1;
      return {Code::kFailedPrecondition, "PortForwardFailed",
              "cannot run " + o.kubectl + ": " + std::strerror(spawned)};
    }
    // "Forwarding from 127.0.0.1:40123 -> 8086"
    static const std::regex kForwarding(R"(Forwarding from 127\.0\.0\.1:([0-9]+) ->)");
    std::string said;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd p{out_, POLLIN, 0};
      if (::poll(&p, 1, 200) <= 0) continue;
      char buffer[1024];
      ssize_t n = ::read(out_, buffer, sizeof buffer);
      if (n <= 0) break;
      said.append(buffer, static_cast<size_t>(n));
      std::smatch m;
      if (std::regex_search(said, m, kForwarding)) {
        local_port_ = std::stoi(m[1]);
        return Status::ok();
      }
    }
    while (!said.empty() && said.back() == '\n') said.pop_back();
    return {Code::kUnavailable, "PortForwardFailed",
            "kubectl port-forward to pod " + pod.ns + "/" + pod.name + " did not start" +
                (said.empty() ? std::string() : ": " + said)};
  }
  int localPort() const { return local_port_; }

 private:
  pid_t pid_ = -1;
  int out_ = -1;
  int local_port_ = 0;
};

StatusOr<int> connectTo(const std::string& host, int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (fd < 0 || ::inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1 ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    std::string why = std::strerror(errno);
    if (fd >= 0) ::close(fd);
    return Status(Code::kUnavailable, "ConsoleUnreachable",
                  "cannot connect to the console server at " + host + ":" + std::to_string(port) +
                      ": " + why);
  }
  return fd;
}

// To the terminal (or whatever stdout is), all of it.
void show(std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(STDOUT_FILENO, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    data.remove_prefix(static_cast<size_t>(n));
  }
}

bool writeAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// The terminal in raw mode while the console runs (keys go to the guest as typed), restored
// however this ends.
class RawTerminal {
 public:
  RawTerminal() {
    if (::isatty(STDIN_FILENO) == 0 || ::tcgetattr(STDIN_FILENO, &saved_) != 0) return;
    termios raw = saved_;
    ::cfmakeraw(&raw);
    active_ = ::tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
  }
  ~RawTerminal() {
    if (active_) ::tcsetattr(STDIN_FILENO, TCSANOW, &saved_);
  }
  RawTerminal(const RawTerminal&) = delete;
  RawTerminal& operator=(const RawTerminal&) = delete;
  bool active() const { return active_; }

 private:
  termios saved_{};
  bool active_ = false;
};

// Reads the verdict line; what follows it in the same reads is console output.
Status readVerdict(int fd, provider::ConsoleConnected& connected, std::string& output) {
  std::string buffer;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    if (auto nl = buffer.find('\n'); nl != std::string::npos) {
      output = buffer.substr(nl + 1);
      return provider::parseConsoleVerdict(std::string_view(buffer).substr(0, nl), &connected);
    }
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 200) <= 0) continue;
    char chunk[4096];
    ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
    if (n <= 0) break;
    buffer.append(chunk, static_cast<size_t>(n));
  }
  return {Code::kUnavailable, "ConsoleProtocolError",
          "the console server closed the connection without an answer"};
}

int runConsole(const ConsoleOptions& o) {
  std::optional<std::filesystem::path> kubeconfig;
  if (!o.kubeconfig.empty()) kubeconfig = o.kubeconfig;
  std::optional<std::string> context;
  if (!o.context.empty()) context = o.context;
  // Needed for the token and the namespace, and to find the pod; not with all three given.
  const bool needs_kubeconfig = o.token.empty() || o.namespace_.empty() || o.address.empty();
  StatusOr<kube::Connection> connection =
      needs_kubeconfig ? kube::loadDefaultConfig(kubeconfig, context) : kube::Connection{};
  if (!connection.ok()) return fail(connection.status().message());
  const std::string ns = o.namespace_.empty() ? connection->default_namespace : o.namespace_;
  ConsoleHello hello;
  hello.token = o.token.empty() ? connection->bearerToken() : o.token;
  hello.ns = ns;
  hello.virtual_machine = o.name;
  if (o.url) hello.console = "webmks";
  if (hello.token.empty()) {
    return fail("the console server checks who you are from a bearer token, and " +
                connection->source +
                " has none (a client certificate, most likely): pass --token (e.g. `kubectl "
                "create token <serviceaccount>`), or use a context whose user has a token");
  }

  std::string host = "127.0.0.1";
  int port = 0;
  std::unique_ptr<PortForward> forward;
  if (!o.address.empty()) {
    auto colon = o.address.rfind(':');
    if (colon == std::string::npos) return fail("--address must be host:port");
    host = o.address.substr(0, colon);
    port = std::atoi(o.address.c_str() + colon + 1);
  } else {
    auto transport = kube::makeHttpTransport(*connection);
    if (!transport.ok()) return fail(transport.status().message());
    auto client = kube::makeKubeClient(std::move(transport).value());
    auto pod = consolePod(*client, ns, o.name);
    if (!pod.ok()) return fail(pod.status().message());
    forward = std::make_unique<PortForward>();
    if (auto started = forward->start(o, *pod); !started.isOk()) return fail(started.message());
    port = forward->localPort();
  }
  auto fd = connectTo(host, port);
  if (!fd.ok()) return fail(fd.status().message());
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{*fd};
  if (!writeAll(*fd, provider::encodeConsoleHello(hello))) {
    return fail("the console server closed the connection");
  }
  provider::ConsoleConnected connected;
  std::string output;
  if (auto verdict = readVerdict(*fd, connected, output); !verdict.isOk()) {
    return fail(verdict.reason() + ": " + verdict.message());
  }
  const std::string& description = connected.description;
  if (o.url) {
    // The URL alone on stdout (for a script or a browser's WebMKS client); the rest on stderr.
    if (connected.url.empty()) return fail("the console server answered without a URL");
    std::cout << connected.url << std::endl;
    std::cerr << "the WebMKS console of virtualmachine " << ns << "/" << o.name
              << (description.empty() ? "" : " (" + description + ")") << ": the URL"
              << (connected.expires_in_seconds > 0
                      ? " expires in " + std::to_string(connected.expires_in_seconds) + " s"
                      : std::string(" expires soon"))
              << " and is a credential: whoever holds it sees and controls the console\n";
    return app::kExitOk;
  }

  RawTerminal terminal;
  std::cerr << "connected to the serial console of virtualmachine " << ns << "/" << o.name
            << (description.empty() ? "" : " (" + description + ")")
            << (terminal.active() ? "; Ctrl-] leaves" : "") << (terminal.active() ? "\r\n" : "\n")
            << std::flush;
  show(output);
  const auto deadline = o.timeout_seconds > 0 ? std::chrono::steady_clock::now() +
                                                    std::chrono::seconds(o.timeout_seconds)
                                              : std::chrono::steady_clock::time_point::max();
  bool input_open = true;
  std::string why = "the console ended";
  while (std::chrono::steady_clock::now() < deadline) {
    // A closed input is left out (fd -1): a pipe at its end would report POLLHUP forever.
    pollfd p[2] = {{*fd, POLLIN, 0}, {input_open ? STDIN_FILENO : -1, POLLIN, 0}};
    if (::poll(p, 2, 200) <= 0) continue;
    char chunk[16 * 1024];
    if ((p[0].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
      ssize_t n = ::recv(*fd, chunk, sizeof chunk, 0);
      if (n <= 0) break;
      show(std::string_view(chunk, static_cast<size_t>(n)));
    }
    if (input_open && (p[1].revents & (POLLIN | POLLHUP)) != 0) {
      ssize_t n = ::read(STDIN_FILENO, chunk, sizeof chunk);
      if (n <= 0) {
        // Input ended (a pipe): the output goes on until the console ends or --timeout.
        input_open = false;
        continue;
      }
      std::string_view typed(chunk, static_cast<size_t>(n));
      if (terminal.active()) {
        if (auto at = typed.find(kEscape); at != std::string_view::npos) {
          writeAll(*fd, typed.substr(0, at));
          why = "left with Ctrl-]";
          break;
        }
      }
      if (!writeAll(*fd, typed)) break;
    }
  }
  if (std::chrono::steady_clock::now() >= deadline) why = "--timeout ran out";
  std::cerr << (terminal.active() ? "\r\n" : "\n") << "console closed: " << why
            << (terminal.active() ? "\r\n" : "\n");
  return app::kExitOk;
}

}  // namespace

void registerConsoleCommand(CLI::App& vm, app::Action& action) {
  auto o = std::make_shared<ConsoleOptions>();
  auto* sub = vm.add_subcommand(
      "console",
      "Attach this terminal to the VM's serial console, served by its Provider's leading pod\n"
      "and reached through 'kubectl port-forward'. Ctrl-] leaves. You need a bearer token\n"
      "(your kubeconfig's, or --token) and RBAC: get on virtualmachines/console for the VM,\n"
      "besides get on virtualmachines and providers, get and list on pods and create on\n"
      "pods/portforward in the provider's namespace (get on its leases finds the leader\n"
      "sooner than pod readiness does). With input from a pipe, the output\n"
      "goes on after the input ends, until the console ends or --timeout.\n"
      "vSphere has no serial stream: its console is graphical (WebMKS), and --url prints a\n"
      "short-lived ticket URL (wss://...) for a WebMKS client that reaches the ESXi host");
  sub->add_option("name", o->name, "The VirtualMachine's name")->required();
  sub->add_option("--namespace,-n", o->namespace_,
                  "Its namespace (default: the kubeconfig context's, else default)");
  sub->add_option("--kubeconfig", o->kubeconfig,
                  "kubeconfig file (default: $KUBECONFIG, else ~/.kube/config)");
  sub->add_option("--context", o->context, "kubeconfig context");
  sub->add_option("--token", o->token,
                  "The bearer token to prove who you are (default: the kubeconfig user's)");
  sub->add_option("--timeout", o->timeout_seconds,
                  "Leave after this many seconds (0: only on Ctrl-] or when the console ends)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  sub->add_option("--port", o->port, "The console port of the provider pod")->capture_default_str();
  sub->add_option("--kubectl", o->kubectl, "The kubectl that runs port-forward")
      ->capture_default_str();
  sub->add_flag("--url", o->url,
                "Print the URL of the VM's graphical WebMKS console (vSphere) instead of\n"
                "attaching: a ticket that expires within seconds to minutes, and a credential\n"
                "(whoever holds it sees and controls the console). Only the URL goes to stdout");
  sub->add_option("--address", o->address,
                  "Connect to this console server (host:port) as it is, without port-forward:\n"
                  "a provider that runs outside the cluster, or one already forwarded");
  sub->callback([&action, o] { action = [o] { return runConsole(*o); }; });
}

}  // namespace banlieue::roles::vm
