#include "host/roles/devnode/pod_launch.h"
#include "host/roles/devnode/termination_message.h"
#include "tests/support/fake_kube_client.h"

#include <banlieue/sdk/json.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace banlieue::roles::devnode {
namespace {

namespace json = sdk::json;
using ::testing::Contains;
using ::testing::ElementsAre;
using testing::FakeKubeClient;
using ::testing::HasSubstr;

NodeContext node() {
  return {"localhost/banlieue", "/opt/banlieue/bin/banlieue", "127.0.0.1", "6443"};
}

TEST(DevnodeTest, ImageRepositoryDropsTagAndDigest) {
  EXPECT_EQ(imageRepository("localhost/banlieue:0.1.0"), "localhost/banlieue");
  EXPECT_EQ(imageRepository("localhost/banlieue@sha256:abc"), "localhost/banlieue");
  EXPECT_EQ(imageRepository("localhost:5000/banlieue:1"), "localhost:5000/banlieue");
  EXPECT_EQ(imageRepository("localhost/banlieue"), "localhost/banlieue");
}

TEST(DevnodeTest, ReferencesExpandLikeAKubelet) {
  std::vector<std::pair<std::string, std::string>> vars{{"A", "1"}, {"B", "two"}};
  EXPECT_EQ(expandReferences("$(A)-$(B)", vars), "1-two");
  EXPECT_EQ(expandReferences("$$(A)", vars), "$(A)") << "$$ escapes";
  EXPECT_EQ(expandReferences("$(MISSING)", vars), "$(MISSING)") << "unknown stays as written";
  EXPECT_EQ(expandReferences("$(A", vars), "$(A");
}

TEST(DevnodeTest, LaunchSpecResolvesEnvCommandAndMounts) {
  FakeKubeClient client;
  ASSERT_TRUE(client
                  .create(kube::resources::kSecret, "team-a",
                          R"({"metadata":{"name":"creds","namespace":"team-a"},
                              "data":{"password":"czNjcjN0"}})")
                  .ok());
  auto pod = json::parse(R"js({"metadata":{"name":"p","namespace":"team-a","uid":"u"},
      "spec":{"nodeName":"n1","containers":[{"name":"c","image":"localhost/banlieue:dev",
        "command":["/usr/local/bin/banlieue"],"args":["provider","$(BACKEND)"],
        "env":[{"name":"BACKEND","value":"libvirt"},
               {"name":"PASS","valueFrom":{"secretKeyRef":{"name":"creds","key":"password"}}},
               {"name":"NS","valueFrom":{"fieldRef":{"fieldPath":"metadata.namespace"}}}],
        "volumeMounts":[{"name":"plugins","mountPath":"/plugins","readOnly":true}]}]}})js",
                         "pod");
  VolumePaths volumes{{"plugins", "/state/pods/p/volumes/plugins"}};
  auto spec = buildLaunchSpec(client, node(), pod, pod["spec"]["containers"][0], volumes, "/l");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(spec->executable, "/opt/banlieue/bin/banlieue");
  EXPECT_THAT(spec->argv, ElementsAre("banlieue", "provider", "libvirt"));
  EXPECT_THAT(spec->env, Contains("PASS=s3cr3t"));
  EXPECT_THAT(spec->env, Contains("NS=team-a"));
  EXPECT_THAT(spec->env, Contains("KUBERNETES_SERVICE_HOST=127.0.0.1"));
  ASSERT_EQ(spec->mounts.size(), 1u);
  EXPECT_EQ(spec->mounts[0].target, "/plugins");
  EXPECT_TRUE(spec->mounts[0].read_only);
}

TEST(DevnodeTest, RefusesWhatIsNotInTheImageAndMissingReferences) {
  FakeKubeClient client;
  auto pod = json::parse(R"({"metadata":{"name":"p","namespace":"team-a"},"spec":{"containers":[
      {"name":"web","image":"nginx:1.25"},
      {"name":"sh","image":"localhost/banlieue:dev","command":["/bin/sh","-c","true"]},
      {"name":"env","image":"localhost/banlieue:dev",
       "env":[{"name":"X","valueFrom":{"secretKeyRef":{"name":"absent","key":"k"}}}]},
      {"name":"opt","image":"localhost/banlieue:dev",
       "env":[{"name":"X","valueFrom":{"secretKeyRef":{"name":"absent","key":"k","optional":true}}}]},
      {"name":"esc","image":"localhost/banlieue:dev",
       "volumeMounts":[{"name":"v","mountPath":"/m","subPath":"../../etc"}]}]}})",
                         "pod");
  const auto& c = pod["spec"]["containers"];
  VolumePaths volumes{{"v", "/state/v"}};
  auto web = buildLaunchSpec(client, node(), pod, c[0], volumes, "/l");
  EXPECT_EQ(web.status().reason(), "ImageNotRunnable");
  auto sh = buildLaunchSpec(client, node(), pod, c[1], volumes, "/l");
  EXPECT_EQ(sh.status().reason(), "CreateContainerError");
  EXPECT_THAT(sh.status().message(), HasSubstr("/bin/sh"));
  auto env = buildLaunchSpec(client, node(), pod, c[2], volumes, "/l");
  EXPECT_EQ(env.status().reason(), "CreateContainerConfigError");
  EXPECT_THAT(env.status().message(), HasSubstr("secret \"absent\" not found"));
  EXPECT_TRUE(buildLaunchSpec(client, node(), pod, c[3], volumes, "/l").ok());
  auto esc = buildLaunchSpec(client, node(), pod, c[4], volumes, "/l");
  EXPECT_EQ(esc.status().reason(), "CreateContainerConfigError");
}

// A kubelet's rules for a terminated container's message: the file wins (cut at 4 KiB); the
// log tail (80 lines, 2 KiB) only with FallbackToLogsOnError and a failure.
TEST(DevnodeTest, TerminationMessageIsTheFileOrTheLogTailOnFailure) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("devnode-term-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::path file = dir / "main.termination-log";
  fs::path log = dir / "main.log";
  {
    std::ofstream out(log);
    for (int i = 1; i <= 200; ++i) out << "line " << i << "\n";
  }
  std::ofstream(file, std::ios::trunc);
  EXPECT_EQ(readTerminationMessage(file, log, "File", 1), "");
  EXPECT_EQ(readTerminationMessage(file, log, "FallbackToLogsOnError", 0), "");
  std::string tail = readTerminationMessage(file, log, "FallbackToLogsOnError", 3);
  EXPECT_TRUE(tail.ends_with("line 200\n")) << tail;
  EXPECT_TRUE(tail.starts_with("line 121\n")) << tail;  // the last 80 lines
  // A long log: cut at 2 KiB, not 80 lines.
  {
    std::ofstream out(log, std::ios::app);
    out << std::string(5000, 'x') << "\n";
  }
  tail = readTerminationMessage(file, log, "FallbackToLogsOnError", 3);
  EXPECT_EQ(tail.size(), 2048u);
  std::ofstream(file) << R"({"reason":"ChecksumMismatch"})";
  EXPECT_EQ(readTerminationMessage(file, log, "FallbackToLogsOnError", 3),
            R"({"reason":"ChecksumMismatch"})");
  std::ofstream(file) << std::string(10000, 'm');
  EXPECT_EQ(readTerminationMessage(file, log, "File", 0).size(), 4096u);
  EXPECT_EQ(
      readTerminationMessage(dir / "missing", dir / "missing.log", "FallbackToLogsOnError", 1), "");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace banlieue::roles::devnode
