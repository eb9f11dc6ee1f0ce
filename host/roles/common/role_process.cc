#include "host/roles/common/role_process.h"

#include "host/common/logging.h"
#include "host/kube/config.h"
#include "host/kube/http_transport.h"

#include <signal.h>

#include <CLI/CLI.hpp>

#include <cstdlib>
#include <optional>

namespace banlieue::roles {
namespace {

sigset_t stopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  return set;
}

}  // namespace

void addRoleProcessFlags(CLI::App* sub, RoleProcessOptions* options) {
  sub->add_option("--kubeconfig", options->kubeconfig,
                  "Kubeconfig file (default: $KUBECONFIG, in-cluster, ~/.kube/config)");
  sub->add_option("--context", options->context, "Kubeconfig context");
  sub->add_option("--bind-address", options->bind_address,
                  "Address /healthz and /readyz listen on (the kubelet probes the pod's IP)")
      ->capture_default_str();
  sub->add_option("--metrics-bind-address", options->metrics_bind_address,
                  "Address /metrics listens on: loopback keeps it inside the pod (a sidecar or "
                  "kubectl port-forward); 0.0.0.0 lets the cluster scrape it, unauthenticated, "
                  "so pair it with a NetworkPolicy")
      ->capture_default_str();
  sub->add_option("--health-port", options->health_port,
                  "Port of /healthz and /readyz (-1: off; equal to --metrics-port: /metrics "
                  "too, on the health address)")
      ->capture_default_str();
  sub->add_option("--metrics-port", options->metrics_port, "Port of /metrics (-1: off)")
      ->capture_default_str();
  sub->add_option("--kube-qps", options->kube_qps,
                  "Requests per second to the API server, sustained (0: no client-side limit; "
                  "the API server's priority and fairness applies either way)")
      ->capture_default_str();
  sub->add_option("--kube-burst", options->kube_burst,
                  "Requests to the API server at once before --kube-qps paces them (with "
                  "--kube-qps above 0)")
      ->capture_default_str();
}

StatusOr<std::unique_ptr<kube::KubeClient>> connectToApiServer(const RoleProcessOptions& options) {
  std::optional<std::filesystem::path> kubeconfig;
  if (!options.kubeconfig.empty()) kubeconfig = options.kubeconfig;
  std::optional<std::string> context;
  if (!options.context.empty()) context = options.context;
  auto connection = kube::loadDefaultConfig(kubeconfig, context);
  if (!connection.ok()) return connection.status();
  auto transport = kube::makeHttpTransport(*connection);
  if (!transport.ok()) return transport.status();
  kube::ClientOptions client_options;
  client_options.qps = options.kube_qps;
  client_options.burst = options.kube_burst;
  return kube::makeKubeClient(std::move(transport).value(), client_options);
}

StopSignal::StopSignal() {
  sigset_t set = stopSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  waiter_ = std::thread([this, set] {
    // A bounded wait, so requestStop() ends this thread without signalling it.
    timespec period{0, 200'000'000};
    while (!stop_) {
      if (sigtimedwait(&set, nullptr, &period) > 0) break;
    }
    stop_ = true;
    stop_.notify_all();
  });
}

StopSignal::~StopSignal() {
  requestStop();
  if (waiter_.joinable()) waiter_.join();
}

void StopSignal::wait() {
  stop_.wait(false);
}

void StopSignal::requestStop() {
  stop_ = true;
  stop_.notify_all();
}

Status RoleEndpoints::start(const RoleProcessOptions& options, runtime::HealthServer& health) {
  const bool shared_port = options.metrics_port >= 0 && options.metrics_port == options.health_port;
  health.setServesMetrics(shared_port);
  if (options.health_port >= 0) {
    if (auto s = health.start(options.bind_address, options.health_port); !s.isOk()) return s;
    common::logger("role")->info("health endpoints on {}:{}", options.bind_address, health.port());
  }
  if (options.metrics_port >= 0 && !shared_port) {
    if (auto s = metrics_.start(options.metrics_bind_address, options.metrics_port); !s.isOk()) {
      return s;
    }
    common::logger("role")->info("metrics on {}:{}", options.metrics_bind_address, metrics_.port());
  }
  return Status::ok();
}

}  // namespace banlieue::roles
