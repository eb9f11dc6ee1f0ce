// Test support for the real local control plane (deploy/local): a shared cluster per test
// run, a namespace per test, and kubectl as a user would run it.
// The cluster serves banlieue's CRDs from deploy/crds (applied once per test process).
//
// The cluster is the one named by BANLIEUE_TEST_KUBECONFIG (CTest starts it once through the
// `local_cluster_up` fixture); when that is unset, the first test brings one up itself with
// deploy/local/up --node in a temporary state directory and stops it at exit. Either way it
// has a real node (kubelet and containerd) running localhost/banlieue built from this tree.
#pragma once

#include "host/kube/client.h"

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace banlieue::testing {

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr, interleaved
};

// Runs a shell command line, capturing output; kills it after `timeout`.
CommandResult runCommand(const std::string& command_line,
                         std::chrono::seconds timeout = std::chrono::seconds(60));

// Quotes one argument for /bin/sh.
std::string shellQuote(const std::string& arg);

class LocalCluster {
 public:
  // The shared cluster (started on first use). Fails the calling test when it cannot start.
  static LocalCluster& shared();

  const std::filesystem::path& kubeconfig() const { return kubeconfig_; }

  // The address on this machine that the cluster's pods reach: the host side of the node's
  // veth pair (deploy/local/node.sh). Backends a provider pod must reach (vcsim, libvirtd,
  // the fake PVE API) listen here. Empty, with the calling test failed, when the cluster has
  // no node.
  std::string podReachableAddress() const;

  // Gives an image the node already holds one more name in the node's containerd: what pushing
  // a new tag to a registry does on a real cluster (this node pulls from none, and the kubelet
  // runs only what its containerd has). Fails the calling test when it cannot.
  void tagNodeImage(const std::string& image, const std::string& new_name) const;

  // A new banlieue Kubernetes client (own connection pool) for the cluster's admin identity.
  // Fails the calling test and returns nullptr when the kubeconfig cannot be used.
  std::unique_ptr<kube::KubeClient> client() const;

  // kubectl with the cluster's kubeconfig; args are passed through the shell unquoted.
  CommandResult kubectl(const std::string& args,
                        std::chrono::seconds timeout = std::chrono::seconds(60)) const;
  // `kubectl banlieue <args>`, as a user runs banlieue as a kubectl plugin: kubectl finds
  // kubectl-banlieue (a link to the built binary) on PATH and runs it with kubectl's
  // environment; the kubeconfig goes by $KUBECONFIG, as kubectl hands a plugin no flag given
  // before the plugin's name.
  CommandResult kubectlBanlieue(const std::string& args,
                                std::chrono::seconds timeout = std::chrono::seconds(60)) const;
  // A fresh token of a ServiceAccount (the TokenRequest API, valid ten minutes): what
  // `kubectl create token` prints on newer clients. Empty, with the calling test failed, when
  // the apiserver issues none.
  std::string serviceAccountToken(const std::string& ns, const std::string& service_account) const;
  // kubectl apply -f - with `manifest` on stdin.
  CommandResult apply(const std::string& manifest, const std::string& extra_args = {}) const;
  // Applies the CRD file `file` (a plugin's own, as bootstrap would) and waits until the API
  // server serves `crd_name`; a non-zero exit code carries the failing step's output.
  CommandResult installCrd(const std::string& file, const std::string& crd_name) const;
  // Cluster API core's v1beta2 Cluster, Machine and MachineDeployment CRDs
  // (tests/integration/testdata), for the tests that play Cluster API core (issue #24).
  CommandResult installClusterApiCrds() const;

  // The node's conditions, taints and free disk, a line each: why a pod stays Pending with no
  // node (a disk-pressure taint, a NotReady kubelet) when a test gives up waiting for it.
  std::string nodeDiagnostics() const;

  // Creates a fresh namespace named after the running test; deleted by ~TestNamespace.
  class TestNamespace {
   public:
    explicit TestNamespace(const LocalCluster& cluster);
    ~TestNamespace();
    const std::string& name() const { return name_; }

   private:
    std::unique_ptr<kube::KubeClient> client_;  // creates and deletes the namespace
    std::string name_;
  };

  // Polls `probe` every 200 ms until it returns true or `timeout` passes.
  static bool eventually(const std::function<bool()>& probe,
                         std::chrono::milliseconds timeout = std::chrono::seconds(30));

  // The kubectl binary tests use: kubectl.1.32 from the Cloud SDK when present, else kubectl.
  static std::string kubectlBinary();

 private:
  LocalCluster() = default;
  void start();
  void installCrds();  // deploy/crds, when present
  std::filesystem::path kubeconfig_;
  std::filesystem::path owned_state_;  // set when this process started the cluster
  friend struct ClusterStopper;
};

}  // namespace banlieue::testing
