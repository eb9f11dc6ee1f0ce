#include "host/roles/devnode/node_registration.h"

#include "host/common/logging.h"
#include "host/common/version.h"
#include "host/kube/api_error.h"
#include "host/runtime/object_helpers.h"

#include <banlieue/sdk/json.h>
#include <fmt/format.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <fstream>
#include <thread>

namespace banlieue::roles::devnode {
namespace {

namespace json = sdk::json;

std::string firstLine(const char* path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// MemTotal in KiB.
int64_t memoryKib() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  int64_t value = 0;
  while (in >> key >> value) {
    if (key == "MemTotal:") return value;
    in.ignore(256, '\n');
  }
  return 0;
}

}  // namespace

Status registerNode(kube::KubeClient& client, const NodeOptions& options) {
  std::string node = fmt::format(
      R"({{"apiVersion":"v1","kind":"Node","metadata":{{"name":"{0}","labels":{{)"
      R"("kubernetes.io/hostname":"{0}","kubernetes.io/os":"linux","kubernetes.io/arch":"amd64",)"
      R"("banlieue.io/devnode":"true"}}}},"spec":{{"unschedulable":{1}}}}})",
      options.name, options.unschedulable ? "true" : "false");
  auto created = client.create(kube::resources::kNode, "", node);
  if (created.ok() || kube::isAlreadyExists(created.status())) return Status::ok();
  return created.status();
}

Status postNodeStatus(kube::KubeClient& client, const NodeOptions& options) {
  utsname uts{};
  uname(&uts);
  std::string now = runtime::rfc3339Now();
  static const std::string ready_since = now;  // Ready since this agent first posted
  unsigned cpus = std::max(1U, std::thread::hardware_concurrency());
  std::string resources = fmt::format(R"({{"cpu":"{}","memory":"{}Ki","pods":"{}"}})", cpus,
                                      memoryKib(), options.max_pods);
  std::string patch = fmt::format(
      R"({{"status":{{"capacity":{0},"allocatable":{0},)"
      R"("addresses":[{{"type":"InternalIP","address":"127.0.0.1"}},{{"type":"Hostname","address":"{1}"}}],)"
      R"("daemonEndpoints":{{"kubeletEndpoint":{{"Port":{8}}}}},)"
      R"("conditions":[{{"type":"Ready","status":"True","reason":"KubeletReady",)"
      R"("message":"banlieue node agent is posting ready status","lastHeartbeatTime":"{2}",)"
      R"("lastTransitionTime":"{7}"}}],)"
      R"("nodeInfo":{{"machineID":"{3}","systemUUID":"{3}","bootID":"{4}","kernelVersion":"{5}",)"
      R"("osImage":"banlieue devnode","containerRuntimeVersion":"banlieue-devnode://{6}",)"
      R"("kubeletVersion":"v1.20.2","kubeProxyVersion":"v1.20.2","operatingSystem":"linux",)"
      R"("architecture":"amd64"}}}}}})",
      resources, options.name, now, firstLine("/etc/machine-id"),
      firstLine("/proc/sys/kernel/random/boot_id"), common::jsonEscape(uts.release), kVersion,
      ready_since, options.kubelet_port);
  auto written = client.patch(kube::resources::kNode, "", options.name, kube::PatchType::kMerge,
                              patch, "status");
  return written.ok() ? Status::ok() : written.status();
}

Status renewNodeLease(kube::KubeClient& client, const NodeOptions& options) {
  std::string lease = fmt::format(
      R"({{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{{"name":"{0}",)"
      R"("namespace":"kube-node-lease"}},"spec":{{"holderIdentity":"{0}","leaseDurationSeconds":40,)"
      R"("renewTime":"{1}"}}}})",
      options.name, runtime::rfc3339MicroNow());
  kube::ApplyOptions apply;
  apply.field_manager = "banlieue-devnode";
  apply.force = true;
  auto written =
      client.apply(kube::resources::kLease, "kube-node-lease", options.name, lease, apply);
  return written.ok() ? Status::ok() : written.status();
}

}  // namespace banlieue::roles::devnode
