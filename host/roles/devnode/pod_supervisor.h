// The node agent's pod lifecycle, as a reconciler over the pods bound to its node: start each
// container as a local process once its volumes are ready, restart per restartPolicy with
// kubelet's back-off (10 s doubling to 5 min), probe readiness (httpGet), report phase,
// conditions and container states to pod status, and on deletion stop the processes (SIGTERM,
// SIGKILL after the grace period) before removing the pod for good.
#pragma once

#include "host/kube/client.h"
#include "host/roles/devnode/pod_launch.h"
#include "host/runtime/controller.h"
#include "host/runtime/informer.h"

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace banlieue::roles::devnode {

class PodSupervisor final : public runtime::Reconciler {
 public:
  PodSupervisor(kube::KubeClient& client, runtime::Informer& pods, NodeContext node,
                std::filesystem::path state_dir);

  runtime::Result reconcile(const runtime::Request& request) override;

  // Pids of running containers and the pod key each belongs to (for the exit watcher).
  std::vector<std::pair<pid_t, std::string>> runningContainers() const;
  // Stops every container (SIGTERM, then SIGKILL after `grace`): the agent is shutting down.
  void stopAll(std::chrono::seconds grace);

 private:
  using TimePoint = std::chrono::steady_clock::time_point;
  struct ContainerRun {
    std::string name;
    std::string image;
    pid_t pid = 0;
    int restarts = 0;
    std::optional<int> exit_code;     // of the last run
    std::string termination_message;  // of the last run
    std::string started_at, finished_at;
    TimePoint next_start{};
    bool ready = false;
    std::string waiting_reason, waiting_message;
    // Pods share the node's network, so each declared containerPort gets a free host port
    // (kept across restarts); the container learns it as $BANLIEUE_PORT_<NAME> and probes use it.
    std::map<int, int> host_ports;  // containerPort -> host port
    std::vector<std::string> port_env;
  };
  struct PodRun {
    std::string uid;
    std::filesystem::path dir;
    std::optional<VolumePaths> volumes;
    std::vector<ContainerRun> containers;
    std::string start_time;
    bool terminating = false;
    TimePoint kill_deadline{};
    std::string last_status;  // the last status patch written
  };

  runtime::Result finishDeletion(const runtime::Request& request, const rapidjson::Value& pod);
  void forget(const std::string& key);
  bool reapAndStart(PodRun& run, const rapidjson::Value& pod);
  void probeReadiness(ContainerRun& c, const rapidjson::Value& pod);
  static void assignHostPorts(ContainerRun& c, const rapidjson::Value& spec);
  std::string statusPatch(const PodRun& run, const rapidjson::Value& pod) const;

  kube::KubeClient& client_;
  runtime::Informer& pods_;
  NodeContext node_;
  std::filesystem::path state_dir_;
  mutable std::mutex mutex_;
  std::map<std::string, PodRun> runs_;  // by pod key
};

}  // namespace banlieue::roles::devnode
