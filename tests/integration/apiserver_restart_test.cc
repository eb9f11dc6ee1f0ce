// An informer survives its API server restarting mid-watch: on a cluster of its own (the
// shared one must not go away under other tests), the kube-apiserver is killed while the
// informer watches and started again on the same port (deploy/local/up resumes it). The
// informer reconnects with back-off and changes made after the restart reach the cache,
// including a deletion; the client's first write after the restart succeeds although its
// pooled connections died; and a watch from before the restart gets the real 410 Gone.
#include "host/kube/api_error.h"
#include "host/kube/client.h"
#include "host/kube/config.h"
#include "host/kube/http_transport.h"
#include "host/runtime/informer.h"
#include "tests/support/build_paths.h"
#include "tests/support/local_cluster.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <thread>

namespace banlieue::runtime {
namespace {

using testing::LocalCluster;
using testing::runCommand;
using testing::shellQuote;

class OwnCluster {
 public:
  OwnCluster()
      : state_(std::filesystem::temp_directory_path() /
               ("banlieue-restart-test-" + std::to_string(::getpid()))) {
    auto up = runCommand(up_command(), std::chrono::seconds(180));
    ok_ = up.exit_code == 0;
    EXPECT_TRUE(ok_) << up.output;
  }
  ~OwnCluster() {
    runCommand(std::string(BANLIEUE_SOURCE_DIR) + "/deploy/local/down --purge --state-dir " +
               shellQuote(state_.string()));
  }
  bool ok() const { return ok_; }
  std::string up_command() const {
    return std::string(BANLIEUE_SOURCE_DIR) + "/deploy/local/up --state-dir " +
           shellQuote(state_.string());
  }
  std::filesystem::path kubeconfig() const { return state_ / "kubeconfig"; }
  int apiserverPid() const {
    std::ifstream in(state_ / "run" / "kube-apiserver.pid");
    int pid = 0;
    in >> pid;
    return pid;
  }

 private:
  std::filesystem::path state_;
  bool ok_ = false;
};

// Gone or a zombie waiting to be reaped by init.
bool running(int pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string pid_field, comm, state;
  return static_cast<bool>(stat >> pid_field >> comm >> state) && state != "Z";
}

// Stops and joins the informer thread however the test ends.
struct Runner {
  std::atomic<bool> stop{false};
  std::thread thread;
  ~Runner() {
    stop = true;
    if (thread.joinable()) thread.join();
  }
};

TEST(ApiserverRestartTest, AnInformerResumesAfterTheApiServerRestarts) {
  OwnCluster cluster;
  ASSERT_TRUE(cluster.ok());
  auto connection = kube::loadKubeconfig({.files = {cluster.kubeconfig()}});
  ASSERT_TRUE(connection.ok()) << connection.status().message();
  auto transport = kube::makeHttpTransport(*connection);
  ASSERT_TRUE(transport.ok());
  auto client = kube::makeKubeClient(std::move(transport).value());
  auto cm = [](const std::string& name) {
    return R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":")" + name +
           R"(","namespace":"default"}})";
  };
  ASSERT_TRUE(client->create(kube::resources::kConfigMap, "default", cm("before")).ok());
  ASSERT_TRUE(client->create(kube::resources::kConfigMap, "default", cm("doomed")).ok());

  Informer informer(*client, kube::resources::kConfigMap, {.ns = "default"});
  Runner runner;
  runner.thread = std::thread([&] { informer.run(runner.stop); });
  ASSERT_TRUE(LocalCluster::eventually([&] { return informer.hasSynced(); }));
  ASSERT_TRUE(informer.get("default/doomed"));
  auto watches_before = informer.stats().watches;

  // Kill the API server mid-watch (SIGTERM would wait up to a minute for open watches to
  // drain) and bring it back on the same port.
  int pid = cluster.apiserverPid();
  ASSERT_GT(pid, 0);
  ::kill(pid, SIGKILL);
  ASSERT_TRUE(LocalCluster::eventually([&] { return !running(pid); }));
  auto up = runCommand(cluster.up_command(), std::chrono::seconds(120));
  ASSERT_EQ(up.exit_code, 0) << up.output;

  // The client's pooled connections died with the server: the first write must still work.
  auto after = client->create(kube::resources::kConfigMap, "default", cm("after"));
  ASSERT_TRUE(after.ok()) << after.status().reason() << ": " << after.status().message();
  ASSERT_TRUE(client->remove(kube::resources::kConfigMap, "default", "doomed").isOk());
  EXPECT_TRUE(LocalCluster::eventually(
      [&] { return informer.get("default/after") && !informer.get("default/doomed"); },
      std::chrono::seconds(60)))
      << "changes after the restart reach the cache";
  EXPECT_TRUE(informer.get("default/before"));
  EXPECT_GT(informer.stats().watches, watches_before) << "the watch was re-established";

  // What makes an informer relist, from the real server: the restarted server's watch cache
  // starts at a later resourceVersion, and a watch from before it ends with 410 Gone, which
  // the client reports as such (the informer's relist on Gone is unit-tested).
  kube::WatchOptions options;
  options.resource_version = "1";
  options.timeout_seconds = 5;
  int events = 0;
  auto gone = client->watch(kube::resources::kConfigMap, "default", options,
                            [&](kube::WatchEvent&) { return ++events > 0; });
  EXPECT_TRUE(kube::isGone(gone)) << gone.reason() << ": " << gone.message();
  EXPECT_EQ(events, 0);
}

}  // namespace
}  // namespace banlieue::runtime
