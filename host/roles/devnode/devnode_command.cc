#include "host/roles/devnode/devnode_command.h"

#include "host/common/logging.h"
#include "host/kube/client.h"
#include "host/kube/config.h"
#include "host/kube/http_transport.h"
#include "host/roles/devnode/container_process.h"
#include "host/roles/devnode/log_server.h"
#include "host/roles/devnode/node_registration.h"
#include "host/roles/devnode/pod_supervisor.h"
#include "host/runtime/controller.h"
#include "host/runtime/health_server.h"
#include "host/runtime/informer.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>

#include <atomic>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <thread>

namespace banlieue::roles::devnode {
namespace {

struct Options {
  std::string kubeconfig;
  std::string context;
  std::string node_name = "banlieue-devnode";
  std::string state_dir;
  std::string image_repository = "localhost/banlieue";
  int health_port = -1;
  bool unschedulable = false;
  int heartbeat_seconds = 10;
  // The container log endpoint (`kubectl logs`): on when a certificate is given.
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string client_ca_file;
  int kubelet_port = 0;
};

// "https://127.0.0.1:6443" -> {"127.0.0.1", "6443"}
std::pair<std::string, std::string> hostAndPort(const std::string& server) {
  std::string rest =
      server.substr(server.find("://") == std::string::npos ? 0 : server.find("://") + 3);
  rest = rest.substr(0, rest.find('/'));
  auto colon = rest.rfind(':');
  if (colon == std::string::npos || rest.back() == ']') return {rest, "443"};
  std::string host = rest.substr(0, colon);
  if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  return {host, rest.substr(colon + 1)};
}

// True once the process has ended, without reaping it (the supervisor reaps).
bool hasExited(pid_t pid) {
  siginfo_t info{};
  return waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
         info.si_pid == pid;
}

int runDevnode(const Options& o) {
  auto log = common::logger("devnode");
  // SIGTERM/SIGINT are taken by one thread; every other thread (and, after the reset in
  // launchContainer, no container) has them blocked.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  std::optional<std::filesystem::path> kubeconfig;
  if (!o.kubeconfig.empty()) kubeconfig = o.kubeconfig;
  std::optional<std::string> context;
  if (!o.context.empty()) context = o.context;
  auto connection = kube::loadDefaultConfig(kubeconfig, context);
  if (!connection.ok()) {
    std::cerr << "banlieue devnode: " << connection.status().message() << "\n";
    return app::kExitFailure;
  }
  auto transport = kube::makeHttpTransport(*connection);
  if (!transport.ok()) {
    std::cerr << "banlieue devnode: " << transport.status().message() << "\n";
    return app::kExitFailure;
  }
  auto client = kube::makeKubeClient(std::move(transport).value());

  std::filesystem::path state_dir = o.state_dir.empty() ? std::filesystem::temp_directory_path() /
                                                              ("banlieue-devnode-" + o.node_name)
                                                        : std::filesystem::path(o.state_dir);
  std::error_code ec;
  std::filesystem::create_directories(state_dir, ec);
  if (ec) {
    std::cerr << "banlieue devnode: cannot create state directory " << state_dir << ": "
              << ec.message() << "\n";
    return app::kExitFailure;
  }

  // Before the Node's first status, which tells the apiserver where to fetch logs.
  std::optional<LogServer> logs;
  NodeOptions node{o.node_name, o.unschedulable};
  if (!o.tls_cert_file.empty()) {
    logs.emplace(LogServerOptions{"127.0.0.1", o.kubelet_port, o.tls_cert_file, o.tls_key_file,
                                  o.client_ca_file, state_dir / "pods"});
    if (auto s = logs->start(); !s.isOk()) {
      std::cerr << "banlieue devnode: " << s.message() << "\n";
      return app::kExitFailure;
    }
    node.kubelet_port = logs->port();
  }
  if (auto s = registerNode(*client, node); !s.isOk()) {
    std::cerr << "banlieue devnode: cannot register node " << o.node_name << ": " << s.message()
              << "\n";
    return app::kExitFailure;
  }
  if (auto s = renewNodeLease(*client, node); !s.isOk()) {
    log->warn("node {} lease renewal failed: {}", o.node_name, s.message());
  }
  if (auto s = postNodeStatus(*client, node); !s.isOk()) {
    std::cerr << "banlieue devnode: cannot post the status of node " << o.node_name << ": "
              << s.message() << "\n";
    return app::kExitFailure;
  }

  NodeContext context_for_pods;
  context_for_pods.image_repository = o.image_repository;
  context_for_pods.banlieue_binary = std::filesystem::read_symlink("/proc/self/exe", ec);
  std::tie(context_for_pods.api_host, context_for_pods.api_port) = hostAndPort(connection->server);

  runtime::InformerOptions pod_options;
  pod_options.field_selector = "spec.nodeName=" + o.node_name;
  runtime::Informer pods(*client, kube::resources::kPod, pod_options);
  PodSupervisor supervisor(*client, pods, context_for_pods, state_dir);
  runtime::Controller controller("devnode", supervisor, runtime::ControllerOptions{1});
  controller.watch(pods);

  runtime::HealthServer health;
  health.addReadinessCheck("pod-informer", [&](std::string& reason) {
    if (!pods.hasSynced()) reason = "pods of this node not listed yet";
    return pods.hasSynced();
  });
  if (o.health_port >= 0) {
    if (auto s = health.start("127.0.0.1", o.health_port); !s.isOk()) {
      std::cerr << "banlieue devnode: " << s.message() << "\n";
      return app::kExitFailure;
    }
  }

  std::atomic<bool> stop{false};
  std::thread signal_thread([&] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    stop = true;
  });
  std::thread informer_thread([&] { pods.run(stop); });
  std::thread controller_thread([&] { controller.run(stop); });
  std::thread heartbeat_thread([&] {
    while (!stop) {
      for (int i = 0; i < o.heartbeat_seconds * 10 && !stop; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      if (stop) break;
      if (auto s = postNodeStatus(*client, node); !s.isOk()) {
        log->warn("node {} heartbeat failed: {}", o.node_name, s.message());
      }
      if (auto s = renewNodeLease(*client, node); !s.isOk()) {
        log->warn("node {} lease renewal failed: {}", o.node_name, s.message());
      }
    }
  });
  log->info("node {} is ready; running pods of image {} from {}", o.node_name, o.image_repository,
            state_dir.string());
  // Exit watcher: a container that ends is reported at once, not at the next resync.
  while (!stop) {
    for (const auto& [pid, key] : supervisor.runningContainers()) {
      if (hasExited(pid)) controller.enqueue(key);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  log->info("node {} stopping: terminating its containers", o.node_name);
  informer_thread.join();
  controller_thread.join();
  heartbeat_thread.join();
  supervisor.stopAll(std::chrono::seconds(10));
  if (logs) logs->stop();
  health.stop();
  signal_thread.join();
  return app::kExitOk;
}

}  // namespace

void registerDevnodeCommand(CLI::App& app, app::Action& action) {
  auto options = std::make_shared<Options>();
  auto* sub = app.add_subcommand(
      "devnode",
      "Local node agent for development and tests: registers a Node and runs the pods bound "
      "to it whose image is banlieue's own as local processes of this binary (volumes "
      "bind-mounted in a private mount namespace, status and readiness reported, deletion "
      "and restartPolicy honoured). Pods of other images stay Pending with reason "
      "ImageNotRunnable.");
  sub->add_option("--kubeconfig", options->kubeconfig, "Kubeconfig file (default: $KUBECONFIG)");
  sub->add_option("--context", options->context, "Kubeconfig context");
  sub->add_option("--node-name", options->node_name, "Name of the Node to register")
      ->capture_default_str();
  sub->add_option("--state-dir", options->state_dir,
                  "Where pod volumes and container logs live (default: a temp directory)");
  sub->add_option("--image-repository", options->image_repository,
                  "Container images of this repository run as the banlieue binary")
      ->capture_default_str();
  // A node agent run as a pod of another node agent is given its port in the environment.
  if (const char* assigned = std::getenv("BANLIEUE_PORT_HEALTH"); assigned && *assigned) {
    options->health_port = std::atoi(assigned);
  }
  sub->add_option("--health-port", options->health_port,
                  "Serve /healthz, /readyz and /metrics on 127.0.0.1:PORT (-1: off, 0: any; "
                  "default $BANLIEUE_PORT_HEALTH)")
      ->capture_default_str();
  sub->add_flag("--unschedulable", options->unschedulable,
                "Register the Node unschedulable (only pods bound by name land on it)");
  sub->add_option("--heartbeat-seconds", options->heartbeat_seconds,
                  "How often the Node's Ready heartbeat is renewed")
      ->capture_default_str()
      ->check(CLI::Range(1, 3600));
  sub->add_option("--tls-cert-file", options->tls_cert_file,
                  "Serve container logs (`kubectl logs`) over HTTPS with this certificate, as a "
                  "kubelet does; needs --tls-private-key-file and --client-ca-file");
  sub->add_option("--tls-private-key-file", options->tls_key_file,
                  "Private key of --tls-cert-file");
  sub->add_option("--client-ca-file", options->client_ca_file,
                  "Only clients with a certificate from this CA (the apiserver's kubelet client "
                  "certificate) may read logs");
  sub->add_option("--kubelet-port", options->kubelet_port,
                  "Port of the log endpoint on 127.0.0.1 (0: any free port), published in the "
                  "Node's status.daemonEndpoints")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  sub->callback([options, &action] {
    bool any = !options->tls_cert_file.empty() || !options->tls_key_file.empty() ||
               !options->client_ca_file.empty();
    bool all = !options->tls_cert_file.empty() && !options->tls_key_file.empty() &&
               !options->client_ca_file.empty();
    if (any && !all) {
      throw CLI::ValidationError("--tls-cert-file, --tls-private-key-file and --client-ca-file",
                                 "give all three or none");
    }
    action = [options] { return runDevnode(*options); };
  });
}

}  // namespace banlieue::roles::devnode
