#include "host/roles/devnode/pod_supervisor.h"

#include "host/common/logging.h"
#include "host/kube/api_error.h"
#include "host/roles/devnode/termination_message.h"
#include "host/runtime/object_helpers.h"

#include <arpa/inet.h>
#include <banlieue/sdk/json.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <system_error>

namespace banlieue::roles::devnode {
namespace {

namespace json = sdk::json;
using runtime::Result;
using std::chrono::seconds;

constexpr auto kBackoffBase = seconds(10);
constexpr auto kBackoffMax = seconds(300);

// GET http://127.0.0.1:port/path with a one-second budget; the HTTP status, or -1.
int httpStatus(int port, const std::string& path) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  timeval timeout{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int status = -1;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    std::string request = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
        static_cast<ssize_t>(request.size())) {
      char buf[64] = {};
      ssize_t n = recv(fd, buf, sizeof(buf) - 1, 0);
      // "HTTP/1.1 200 OK"
      if (n > 12 && std::string_view(buf, 5) == "HTTP/") status = std::atoi(buf + 9);
    }
  }
  close(fd);
  return status;
}

// A port nothing listens on now (the kernel's pick for an ephemeral bind), or -1.
int freeLoopbackPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  int port = -1;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

// "health" -> "BANLIEUE_PORT_HEALTH"; "grpc-api" -> "BANLIEUE_PORT_GRPC_API".
std::string portEnvName(const std::string& port_name) {
  std::string out = "BANLIEUE_PORT_";
  for (char ch : port_name) {
    out += ch == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  }
  return out;
}

int probePort(const rapidjson::Value& container, const rapidjson::Value& port) {
  if (port.IsInt()) return port.GetInt();
  if (port.IsString()) {  // a named container port
    if (const auto* ports = json::member(&container, "ports"); ports && ports->IsArray()) {
      for (const auto& p : ports->GetArray()) {
        if (json::stringOr(&p, "name") == port.GetString()) {
          return static_cast<int>(json::integer(&p, "containerPort").value_or(-1));
        }
      }
    }
  }
  return -1;
}

// The node file behind a container's terminationMessagePath.
std::filesystem::path terminationFile(const std::filesystem::path& pod_dir,
                                      const std::string& container) {
  return pod_dir / (container + ".termination-log");
}

const rapidjson::Value* containerSpec(const rapidjson::Value& pod, const std::string& name) {
  const auto* containers = json::find(&pod, "spec.containers");
  if (containers == nullptr || !containers->IsArray()) return nullptr;
  for (const auto& c : containers->GetArray()) {
    if (json::stringOr(&c, "name") == name) return &c;
  }
  return nullptr;
}

}  // namespace

PodSupervisor::PodSupervisor(kube::KubeClient& client, runtime::Informer& pods, NodeContext node,
                             std::filesystem::path state_dir)
    : client_(client), pods_(pods), node_(std::move(node)), state_dir_(std::move(state_dir)) {}

std::vector<std::pair<pid_t, std::string>> PodSupervisor::runningContainers() const {
  std::lock_guard lock(mutex_);
  std::vector<std::pair<pid_t, std::string>> out;
  for (const auto& [key, run] : runs_) {
    for (const auto& c : run.containers) {
      if (c.pid > 0) out.emplace_back(c.pid, key);
    }
  }
  return out;
}

void PodSupervisor::stopAll(std::chrono::seconds grace) {
  std::lock_guard lock(mutex_);
  for (auto& [key, run] : runs_) {
    for (auto& c : run.containers) {
      if (c.pid > 0) signalContainer(c.pid, SIGTERM);
    }
  }
  auto deadline = std::chrono::steady_clock::now() + grace;
  for (auto& [key, run] : runs_) {
    for (auto& c : run.containers) {
      while (c.pid > 0 && !pollExit(c.pid)) {
        if (std::chrono::steady_clock::now() >= deadline) {
          signalContainer(c.pid, SIGKILL);
          while (!pollExit(c.pid)) usleep(10000);
          break;
        }
        usleep(20000);
      }
      c.pid = 0;
    }
  }
}

void PodSupervisor::forget(const std::string& key) {
  auto it = runs_.find(key);
  if (it == runs_.end()) return;
  for (auto& c : it->second.containers) {
    if (c.pid > 0) {
      signalContainer(c.pid, SIGKILL);
      while (!pollExit(c.pid)) usleep(10000);
    }
  }
  std::error_code ec;
  std::filesystem::remove_all(it->second.dir, ec);
  runs_.erase(it);
}

// Collects exits and starts what should run. Returns true while a container waits for its
// back-off to pass (the caller requeues).
bool PodSupervisor::reapAndStart(PodRun& run, const rapidjson::Value& pod) {
  auto log = common::logger("devnode");
  std::string policy = json::stringOr(&pod, "spec.restartPolicy", "Always");
  auto now = std::chrono::steady_clock::now();
  bool waiting = false;
  for (auto& c : run.containers) {
    if (c.pid > 0) {
      if (auto code = pollExit(c.pid)) {
        c.pid = 0;
        c.exit_code = *code;
        c.ready = false;
        if (const auto* spec = containerSpec(pod, c.name)) {
          c.termination_message = readTerminationMessage(
              terminationFile(run.dir, c.name), run.dir / (c.name + ".log"),
              json::stringOr(spec, "terminationMessagePolicy", "File"), *code);
        }
        c.finished_at = runtime::rfc3339Now();
        auto backoff = std::min<std::chrono::seconds>(kBackoffBase * (1 << std::min(c.restarts, 5)),
                                                      kBackoffMax);
        c.next_start = now + backoff;
        log->info("pod {}/{} container {} exited with {}",
                  json::stringOr(&pod, "metadata.namespace"), json::stringOr(&pod, "metadata.name"),
                  c.name, *code);
      }
    }
    if (c.pid > 0) continue;
    bool first_start = !c.exit_code.has_value();
    bool restart =
        !first_start && (policy == "Always" || (policy == "OnFailure" && *c.exit_code != 0));
    if (!first_start && !restart) continue;
    if (!first_start && now < c.next_start) {
      c.waiting_reason = "CrashLoopBackOff";
      c.waiting_message = "back-off restarting container " + c.name;
      waiting = true;
      continue;
    }
    const auto* spec = containerSpec(pod, c.name);
    if (spec == nullptr) continue;
    if (first_start) assignHostPorts(c, *spec);
    auto launch =
        buildLaunchSpec(client_, node_, pod, *spec, *run.volumes, run.dir / (c.name + ".log"));
    if (launch.ok()) {
      launch->env.insert(launch->env.end(), c.port_env.begin(), c.port_env.end());
      // Termination messages need a mount namespace: an agent that is not root offers none.
      if (geteuid() == 0) {
        launch->termination_path =
            json::stringOr(spec, "terminationMessagePath", kDefaultTerminationMessagePath);
        launch->termination_file = terminationFile(run.dir, c.name);
        std::ofstream(launch->termination_file, std::ios::trunc);  // empty for this run
      }
      auto pid = launchContainer(*launch);
      if (pid.ok()) {
        c.pid = *pid;
        if (!first_start) ++c.restarts;
        c.started_at = runtime::rfc3339Now();
        c.waiting_reason.clear();
        c.waiting_message.clear();
        continue;
      }
      launch = pid.status();
    }
    c.waiting_reason = launch.status().reason();
    c.waiting_message = launch.status().message();
    waiting = true;
  }
  return waiting;
}

void PodSupervisor::assignHostPorts(ContainerRun& c, const rapidjson::Value& spec) {
  if (!c.host_ports.empty()) return;
  const auto* ports = json::member(&spec, "ports");
  if (ports == nullptr || !ports->IsArray()) return;
  for (const auto& p : ports->GetArray()) {
    int container_port = static_cast<int>(json::integer(&p, "containerPort").value_or(-1));
    int host_port = freeLoopbackPort();
    if (container_port <= 0 || host_port <= 0) continue;
    c.host_ports[container_port] = host_port;
    if (std::string name = json::stringOr(&p, "name"); !name.empty()) {
      c.port_env.push_back(portEnvName(name) + "=" + std::to_string(host_port));
    }
  }
}

void PodSupervisor::probeReadiness(ContainerRun& c, const rapidjson::Value& pod) {
  if (c.pid <= 0) {
    c.ready = false;
    return;
  }
  const auto* spec = containerSpec(pod, c.name);
  const auto* probe = spec != nullptr ? json::member(spec, "readinessProbe") : nullptr;
  if (probe == nullptr) {
    c.ready = true;
    return;
  }
  const auto* get = json::member(probe, "httpGet");
  const auto* port = get != nullptr ? json::member(get, "port") : nullptr;
  if (port == nullptr) {
    c.ready = true;  // exec and tcpSocket probes are not run by the node agent
    return;
  }
  int container_port = probePort(*spec, *port);
  auto host_port = c.host_ports.find(container_port);
  int status = httpStatus(host_port != c.host_ports.end() ? host_port->second : container_port,
                          json::stringOr(get, "path", "/"));
  c.ready = status >= 200 && status < 400;
}

std::string PodSupervisor::statusPatch(const PodRun& run, const rapidjson::Value& pod) const {
  rapidjson::Document patch(rapidjson::kObjectType);
  auto& a = patch.GetAllocator();
  auto str = [&](const std::string& s) { return json::stringValue(s, a); };
  bool all_ready = !run.containers.empty();
  bool any_running = false, any_waiting = false, any_failed = false, all_terminated = true;
  std::string policy = json::stringOr(&pod, "spec.restartPolicy", "Always");
  rapidjson::Value statuses(rapidjson::kArrayType);
  for (const auto& c : run.containers) {
    rapidjson::Value s(rapidjson::kObjectType);
    s.AddMember("name", str(c.name), a);
    s.AddMember("image", str(c.image), a);
    s.AddMember("imageID", str(node_.image_repository), a);
    s.AddMember("ready", c.ready, a);
    s.AddMember("restartCount", c.restarts, a);
    s.AddMember("started", c.pid > 0, a);
    rapidjson::Value state(rapidjson::kObjectType);
    if (c.pid > 0) {
      any_running = true;
      all_terminated = false;
      s.AddMember("containerID", str("devnode://" + std::to_string(c.pid)), a);
      rapidjson::Value running(rapidjson::kObjectType);
      running.AddMember("startedAt", str(c.started_at), a);
      state.AddMember("running", running, a);
    } else if (!c.waiting_reason.empty() || !c.exit_code) {
      any_waiting = true;
      all_terminated = false;
      rapidjson::Value waiting(rapidjson::kObjectType);
      waiting.AddMember("reason",
                        str(c.waiting_reason.empty() ? "ContainerCreating" : c.waiting_reason), a);
      if (!c.waiting_message.empty()) waiting.AddMember("message", str(c.waiting_message), a);
      state.AddMember("waiting", waiting, a);
    } else {
      rapidjson::Value terminated(rapidjson::kObjectType);
      terminated.AddMember("exitCode", *c.exit_code, a);
      terminated.AddMember("reason",
                           rapidjson::StringRef(*c.exit_code == 0 ? "Completed" : "Error"), a);
      terminated.AddMember("startedAt", str(c.started_at), a);
      terminated.AddMember("finishedAt", str(c.finished_at), a);
      if (!c.termination_message.empty()) {
        terminated.AddMember("message", str(c.termination_message), a);
      }
      state.AddMember("terminated", terminated, a);
      if (*c.exit_code != 0) any_failed = true;
      bool will_restart = policy == "Always" || (policy == "OnFailure" && *c.exit_code != 0);
      if (will_restart) all_terminated = false;
    }
    s.AddMember("state", state, a);
    all_ready = all_ready && c.ready;
    statuses.PushBack(s, a);
  }
  // Running once a container has started, including between restarts (kubelet's rule).
  bool has_run = std::any_of(run.containers.begin(), run.containers.end(),
                             [](const ContainerRun& c) { return c.restarts > 0 || c.exit_code; });
  std::string phase = "Pending";
  if (all_terminated && !run.containers.empty()) {
    phase = any_failed ? "Failed" : "Succeeded";
  } else if (any_running || (!any_waiting && run.volumes) ||
             (any_waiting && !run.start_time.empty() && has_run)) {
    phase = "Running";
  }
  rapidjson::Value status(rapidjson::kObjectType);
  status.AddMember("phase", str(phase), a);
  status.AddMember("hostIP", "127.0.0.1", a);
  status.AddMember("podIP", "127.0.0.1", a);
  rapidjson::Value ips(rapidjson::kArrayType);
  rapidjson::Value ip(rapidjson::kObjectType);
  ip.AddMember("ip", "127.0.0.1", a);
  ips.PushBack(ip, a);
  status.AddMember("podIPs", ips, a);
  if (!run.start_time.empty()) status.AddMember("startTime", str(run.start_time), a);
  rapidjson::Value conditions(rapidjson::kArrayType);
  auto condition = [&](const char* type, bool value, const std::string& reason = {}) {
    rapidjson::Value c(rapidjson::kObjectType);
    c.AddMember("type", rapidjson::StringRef(type), a);
    c.AddMember("status", rapidjson::StringRef(value ? "True" : "False"), a);
    if (!reason.empty()) c.AddMember("reason", str(reason), a);
    conditions.PushBack(c, a);
  };
  bool ready = all_ready && phase == "Running";
  condition("PodScheduled", true);
  condition("Initialized", run.volumes.has_value());
  condition("ContainersReady", ready, ready ? "" : "ContainersNotReady");
  condition("Ready", ready, ready ? "" : "ContainersNotReady");
  status.AddMember("conditions", conditions, a);
  status.AddMember("containerStatuses", statuses, a);
  patch.AddMember("status", status, a);
  return json::serialize(patch);
}

Result PodSupervisor::finishDeletion(const runtime::Request& request, const rapidjson::Value& pod) {
  auto it = runs_.find(request.key());
  bool running = false;
  if (it != runs_.end()) {
    auto& run = it->second;
    auto now = std::chrono::steady_clock::now();
    if (!run.terminating) {
      run.terminating = true;
      auto grace = json::integer(&pod, "metadata.deletionGracePeriodSeconds").value_or(30);
      run.kill_deadline = now + seconds(grace);
      for (auto& c : run.containers) {
        if (c.pid > 0) signalContainer(c.pid, SIGTERM);
      }
    }
    for (auto& c : run.containers) {
      if (c.pid > 0 && pollExit(c.pid)) c.pid = 0;
      if (c.pid > 0 && now >= run.kill_deadline) signalContainer(c.pid, SIGKILL);
      running = running || c.pid > 0;
    }
  }
  if (running) return Result::requeueAfter(std::chrono::milliseconds(200));
  forget(request.key());
  // The kubelet's final word: every container is stopped, remove the object now.
  kube::DeleteOptions options;
  options.grace_period_seconds = 0;
  options.precondition_uid = json::stringOr(&pod, "metadata.uid");
  auto s = client_.remove(kube::resources::kPod, request.ns, request.name, options);
  if (!s.isOk() && !kube::isNotFound(s) && !kube::isConflict(s)) return Result::retry(s);
  return Result::done();
}

Result PodSupervisor::reconcile(const runtime::Request& request) {
  std::lock_guard lock(mutex_);
  auto pod_object = pods_.get(request.key());
  if (!pod_object) {
    forget(request.key());  // deleted: nothing of it may keep running
    return Result::done();
  }
  const rapidjson::Value& pod = *pod_object;
  std::string uid = json::stringOr(&pod, "metadata.uid");
  if (auto it = runs_.find(request.key()); it != runs_.end() && it->second.uid != uid) {
    forget(request.key());  // a new pod with the same name
  }
  if (json::find(&pod, "metadata.deletionTimestamp") != nullptr) {
    return finishDeletion(request, pod);
  }
  std::string phase = json::stringOr(&pod, "status.phase");
  if (runs_.count(request.key()) == 0 && (phase == "Succeeded" || phase == "Failed")) {
    return Result::done();  // finished before this agent started
  }

  auto [it, created] = runs_.try_emplace(request.key());
  PodRun& run = it->second;
  if (created) {
    run.uid = uid;
    run.dir = state_dir_ / "pods" / (request.ns + "_" + request.name + "_" + uid);
    std::error_code ec;
    std::filesystem::create_directories(run.dir, ec);
    if (const auto* containers = json::find(&pod, "spec.containers");
        containers && containers->IsArray()) {
      for (const auto& c : containers->GetArray()) {
        ContainerRun r;
        r.name = json::stringOr(&c, "name");
        r.image = json::stringOr(&c, "image");
        if (imageRepository(r.image) != node_.image_repository) {
          r.waiting_reason = "ImageNotRunnable";
          r.waiting_message = "the banlieue node agent runs only images of " +
                              node_.image_repository + ", not " + r.image;
        }
        run.containers.push_back(std::move(r));
      }
    }
  }

  bool image_refused =
      std::any_of(run.containers.begin(), run.containers.end(),
                  [](const ContainerRun& c) { return c.waiting_reason == "ImageNotRunnable"; });
  std::optional<std::chrono::milliseconds> requeue;
  if (!image_refused) {
    if (!run.volumes) {
      auto volumes = materializeVolumes(client_, pod, run.dir);
      if (volumes.ok()) {
        run.volumes = std::move(volumes).value();
        run.start_time = runtime::rfc3339Now();
      } else {
        for (auto& c : run.containers) {
          c.waiting_reason = volumes.status().reason().empty() ? "CreateContainerConfigError"
                                                               : volumes.status().reason();
          c.waiting_message = volumes.status().message();
        }
        requeue = std::chrono::seconds(5);
      }
    }
    if (run.volumes) {
      if (reapAndStart(run, pod)) requeue = std::chrono::seconds(1);
      int64_t probe_period = 10;
      for (auto& c : run.containers) {
        probeReadiness(c, pod);
        if (const auto* spec = containerSpec(pod, c.name)) {
          if (auto p = json::integer(spec, "readinessProbe.periodSeconds")) {
            probe_period = std::min(probe_period, *p);
          }
        }
        if (c.pid > 0) {
          auto next = std::chrono::milliseconds(probe_period * 1000);
          requeue = requeue ? std::min(*requeue, next) : next;
        }
      }
    }
  }

  std::string patch = statusPatch(run, pod);
  if (patch != run.last_status) {
    auto written = client_.patch(kube::resources::kPod, request.ns, request.name,
                                 kube::PatchType::kMerge, patch, "status");
    if (!written.ok()) {
      if (kube::isNotFound(written.status())) return Result::done();
      return Result::retry(written.status());
    }
    run.last_status = patch;
  }
  return requeue ? Result::requeueAfter(*requeue) : Result::done();
}

}  // namespace banlieue::roles::devnode
