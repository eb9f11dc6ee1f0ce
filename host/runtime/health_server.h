// The operational HTTP endpoints every long-running role serves on one port:
//   /healthz  200 while the process's liveness checks pass (kubelet livenessProbe);
//   /readyz   200 only when every readiness check passes, e.g. informer caches synced and,
//             where it matters, this replica leading (kubelet readinessProbe, `kubectl wait`);
//   /metrics  the Prometheus text format of MetricsRegistry::global() (unless turned off).
// A failing check answers 500 with one "[-]name: reason" line per failure; `?verbose` lists
// the passing ones too, as kube-apiserver does. Plain HTTP: these endpoints carry no secrets
// and are meant for the node-local kubelet and a scraper inside the cluster network.
#pragma once

#include "host/common/status_or.h"

#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace banlieue::runtime {

// Which endpoint one request asks for, from its method (GET or HEAD) and request target; the
// session parses the request with Beast and answers what this says. Pure, so the request
// parsing is fuzzed end to end (fuzz/health_request_fuzz.cc).
struct HealthRoute {
  enum class Endpoint { kLiveness, kReadiness, kMetrics, kNotFound, kMethodNotAllowed };
  Endpoint endpoint;
  bool verbose;  // ?verbose: list the passing checks too
};
HealthRoute routeHealthRequest(bool get_or_head, std::string_view target);

// Returns true when healthy; otherwise fills `reason`.
using HealthCheck = std::function<bool(std::string& reason)>;

class HealthServer {
 public:
  HealthServer();
  ~HealthServer();  // stops serving
  HealthServer(const HealthServer&) = delete;
  HealthServer& operator=(const HealthServer&) = delete;

  // Before start().
  void addLivenessCheck(const std::string& name, HealthCheck check);
  void addReadinessCheck(const std::string& name, HealthCheck check);
  // Whether /metrics is served here too (the default); a role whose metrics have a port and
  // address of their own turns it off, so the health port never exposes them.
  void setServesMetrics(bool serves);

  // Binds `address:port` (port 0 picks a free one) and serves on a background thread.
  Status start(const std::string& address, int port);
  int port() const;
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace banlieue::runtime
