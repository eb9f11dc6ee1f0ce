// What every long-running role (controller, operator, provider, imagebuilder) does the same
// way: the flags that say how to reach the API server and where to serve health and metrics,
// the connection, the operational endpoints, and a clean stop on SIGTERM/SIGINT.
#pragma once

#include "host/common/status_or.h"
#include "host/kube/client.h"
#include "host/runtime/health_server.h"

#include <atomic>
#include <memory>
#include <string>
#include <thread>

namespace CLI {  // NOLINT(readability-identifier-naming): the library's name
class App;
}

namespace banlieue::roles {

struct RoleProcessOptions {
  std::string kubeconfig;  // empty: $KUBECONFIG, in-cluster, ~/.kube/config
  std::string context;
  // /healthz and /readyz on every address by default: the kubelet probes the pod's IP.
  std::string bind_address = "0.0.0.0";
  // /metrics on loopback by default: only the pod itself (a scraping sidecar, or
  // `kubectl port-forward`) reads them, unless the manifests choose another address.
  std::string metrics_bind_address = "127.0.0.1";
  // -1 leaves a server off; the same port for both serves /metrics on the health address. The
  // defaults are the container ports the generated Deployments declare (health 8081, metrics
  // 8080).
  int health_port = 8081;
  int metrics_port = 8080;
  double kube_qps = kube::ClientOptions{}.qps;
  int kube_burst = kube::ClientOptions{}.burst;
};

// Adds --kubeconfig, --context, --bind-address, --metrics-bind-address, --health-port,
// --metrics-port, --kube-qps and --kube-burst to `sub`, with defaults taken from the environment as
// described above.
void addRoleProcessFlags(CLI::App* sub, RoleProcessOptions* options);

// The API server client for these options; errors name the kubeconfig problem.
StatusOr<std::unique_ptr<kube::KubeClient>> connectToApiServer(const RoleProcessOptions& options);

// SIGTERM and SIGINT, taken by one thread instead of interrupting arbitrary ones. Construct it
// first in the role's main thread, before any other thread starts, so every thread inherits the
// blocked mask.
class StopSignal {
 public:
  StopSignal();
  ~StopSignal();
  StopSignal(const StopSignal&) = delete;
  StopSignal& operator=(const StopSignal&) = delete;

  const std::atomic<bool>& stopping() const { return stop_; }
  // Blocks until a stop signal arrives (or requestStop()).
  void wait();
  void requestStop();

 private:
  std::atomic<bool> stop_{false};
  std::thread waiter_;  // takes the signals; polls stop_ so requestStop() ends it too
};

// Starts `health` on the health address and port and, when the metrics port differs, a second
// endpoint serving /metrics (and the same checks) on the metrics address and port; /metrics is
// then not served on the health port.
class RoleEndpoints {
 public:
  Status start(const RoleProcessOptions& options, runtime::HealthServer& health);
  int metricsPort() const { return metrics_.port(); }

 private:
  runtime::HealthServer metrics_;
};

}  // namespace banlieue::roles
