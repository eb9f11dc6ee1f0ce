// `banlieue image-import` as a process into a real libvirtd directory pool: a private libvirtd
// that this test starts and stops (its own unix socket directory), the libvirt plugin from the
// build's plugin directory, the Provider and VMImage from files. The artifact lands
// byte-identical in the pool; a one-byte-flipped artifact and an unknown checksum algorithm fail
// with their exit statuses and termination-log reasons and write nothing to the pool; a missing
// plugin fails as PluginLoadFailed. Then the same as a Job on the cluster's node: importJob()'s
// Job runs in a container of localhost/banlieue (uid 65532, read-only root filesystem), under a
// ServiceAccount that may read only the VMImage, the Provider, its credentials Secret and its CA
// ConfigMap through the API server, and reaches the daemon as it reaches a libvirt host on a
// real site: qemu+tls:// at the cluster's pod-reachable address, with a client certificate the
// daemon allows and the daemon's certificate verified against the Provider's CA bundle. The
// good artifact lands and the Job's result maps to an Imported zone row; a flipped one fails
// the Job with ChecksumMismatch and writes nothing. Labels: integration;images.
//
// Skips (saying why) only when not root (tests/skip_allowlist.txt); anything else that stops
// the daemon fails.
#include "host/common/version.h"
#include "host/plugin/loader.h"
#include "host/roles/images/artifact_checksum.h"
#include "host/roles/images/import_exit.h"
#include "host/roles/images/import_job.h"
#include "tests/support/build_paths.h"
#include "tests/support/local_cluster.h"
#include "tests/support/private_libvirtd.h"
#include "tests/support/read_file.h"

#include <banlieue/sdk/json.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

namespace banlieue::roles::images {
namespace {

using ::banlieue::testing::readFile;

namespace fs = std::filesystem;
namespace json = sdk::json;
using ::testing::HasSubstr;
using testing::runCommand;
using testing::shellQuote;

class ImageImportLibvirtTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = testing::PrivateLibvirtd::unavailableReason(); !why.empty()) GTEST_SKIP() << why;
    char tmpl[] = "/tmp/banlieue-image-import-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    // The import Job's container (uid 65532) reads the artifacts below through a hostPath.
    fs::permissions(dir_, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
    std::ofstream(dir_ / "image.yaml") << R"(apiVersion: banlieue.io/v1alpha1
kind: VMImage
metadata: {name: kairos-tiny, uid: img-1}
spec:
  sources:
  - {providerClass: libvirt, kind: Url, ref: unused, importFrom: quay.io/kairos/ubuntu:1}
status:
  buildArtifact: {kind: cloudImage, phase: Ready, file: tiny.raw}
)";
    artifact_ = dir_ / "artifacts" / "tiny.raw";
    fs::create_directories(artifact_.parent_path());
    std::string bytes(size_t{3} << 20, '\0');
    for (size_t i = 0; i < bytes.size(); i += 512) bytes[i] = static_cast<char>(i / 512);
    std::ofstream(artifact_, std::ios::binary) << bytes;
    auto sha = fileDigest(artifact_, "sha256");
    ASSERT_TRUE(sha.ok());
    sha256_ = *sha;
  }

  // Starts the private libvirtd (with `options`) and writes the Provider file for a run by hand,
  // which reaches the daemon on its unix socket.
  void startLibvirtd(const testing::PrivateLibvirtd::Options& options) {
    std::string error;
    ASSERT_TRUE(libvirtd_.start(dir_, "bnl-import-" + std::to_string(::getpid()), &error, options))
        << error;
    uri_ = libvirtd_.uri();
    pool_ = libvirtd_.pool();
    writeProvider({pool_});
  }

  // The Provider file for a run by hand: a storage class per pool of `pools`.
  void writeProvider(const std::vector<std::string>& pools) {
    std::string classes;
    for (const auto& pool : pools) {
      if (!classes.empty()) classes += ",";
      classes += R"({"name":"class-)" + pool + R"(","target":{"pool":")" + pool + R"("}})";
    }
    std::ofstream(dir_ / "provider.json")
        << R"({"apiVersion":"banlieue.io/v1alpha1","kind":"Provider",
          "metadata":{"name":"lv1","namespace":"infra","uid":"p-1"},
          "spec":{"providerClassRef":{"name":"libvirt"},"connection":{"endpoint":")"
        << uri_ << R"("},"capabilities":{"storageClasses":[)" << classes << "]}}}";
  }

  void TearDown() override {
    libvirtd_.stop();  // before the directory holding its socket goes
    if (!dir_.empty() && !HasFailure()) fs::remove_all(dir_);
    if (HasFailure() && !dir_.empty()) std::cerr << "kept " << dir_ << "\n";
  }

  struct Run {
    int exit_code;
    std::string output;
    std::string termination;
  };

  Run import(const fs::path& artifact, const std::string& checksum,
             const std::string& backend = "libvirt", const std::string& extra = "") {
    fs::path term = dir_ / "termination-log";
    fs::remove(term);
    std::string command = std::string(BANLIEUE_BINARY) + " image-import --plugin-dir " +
                          shellQuote(PLUGIN_BUILD_DIR) + " --backend " + backend +
                          " --provider-file " + shellQuote((dir_ / "provider.json").string()) +
                          " --image-file " + shellQuote((dir_ / "image.yaml").string()) +
                          " --failure-domain host --artifact " + shellQuote(artifact.string()) +
                          " --format raw --checksum " + shellQuote(checksum) +
                          " --termination-log " + shellQuote(term.string()) + extra;
    auto r = runCommand(command, std::chrono::seconds(120));
    return {r.exit_code, r.output, readFile(term)};
  }

  std::set<std::string> volumes() { return libvirtd_.volumes(); }

  fs::path dir_;
  fs::path artifact_;
  std::string uri_;
  std::string pool_;
  std::string sha256_;
  testing::PrivateLibvirtd libvirtd_;
};

TEST_F(ImageImportLibvirtTest, VerifiedArtifactLandsAndCorruptOnesWriteNothing) {
  startLibvirtd({});
  if (HasFatalFailure()) return;
  // A one-byte flip of the artifact: refused before any backend write.
  fs::path flipped = dir_ / "artifacts" / "flipped.raw";
  fs::copy_file(artifact_, flipped);
  {
    std::fstream f(flipped, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(1000);
    f.put('\x5a');
  }
  auto bad = import(flipped, "sha256:" + sha256_);
  EXPECT_EQ(bad.exit_code, kImportChecksumMismatch) << bad.output;
  EXPECT_THAT(bad.termination, HasSubstr(R"("reason":"ChecksumMismatch")"));
  EXPECT_THAT(bad.output, HasSubstr("refusing to import"));
  EXPECT_TRUE(volumes().empty()) << "a corrupted artifact must write nothing";

  // Checksums that cannot be verified fail closed the same way.
  auto md5 = import(artifact_, "md5:0123456789abcdef0123456789abcdef");
  EXPECT_EQ(md5.exit_code, kImportChecksumUnusable) << md5.output;
  EXPECT_THAT(md5.termination, HasSubstr(R"("reason":"ChecksumAlgorithmUnsupported")"));
  auto none = import(artifact_, "");
  EXPECT_EQ(none.exit_code, kImportChecksumUnusable) << none.output;
  EXPECT_TRUE(volumes().empty());

  // A backend with no plugin directory is refused by the loader.
  auto missing = import(artifact_, "sha256:" + sha256_, "nosuchplugin");
  EXPECT_EQ(missing.exit_code, kImportPluginLoadFailed) << missing.output;

  // The real import, verified with sha512 (sha256 derived for the plugin contract).
  auto sha512 = fileDigest(artifact_, "sha512");
  ASSERT_TRUE(sha512.ok());
  auto ok = import(artifact_, "sha512:" + *sha512);
  ASSERT_EQ(ok.exit_code, kImportOk) << ok.output << "\n" << libvirtd_.log();
  EXPECT_THAT(ok.output, HasSubstr("verified"));
  std::string volume = "kairos-tiny-" + sha256_.substr(0, 12) + ".raw";
  EXPECT_THAT(ok.termination, HasSubstr(R"("resolvedRef":")" + volume + "\""));
  ASSERT_EQ(volumes(), std::set<std::string>{volume});
  // Byte-identical, read back through libvirt rather than the plugin.
  fs::path back = dir_ / "back.raw";
  auto download = runCommand("virsh -q -c " + shellQuote(uri_) + " vol-download --pool " + pool_ +
                             " " + volume + " " + shellQuote(back.string()));
  ASSERT_EQ(download.exit_code, 0) << download.output;
  auto back_sha = fileDigest(back, "sha256");
  ASSERT_TRUE(back_sha.ok());
  EXPECT_EQ(*back_sha, sha256_);
}

// `--target` (a per-pool import Job, docs/adr/0053) reaches the plugin: the volume lands in
// that pool only, and a pool the Provider does not declare is refused.
TEST_F(ImageImportLibvirtTest, ATargetImportsIntoThatPoolOnly) {
  startLibvirtd({});
  if (HasFatalFailure()) return;
  const std::string second = pool_ + "-2";
  std::string error;
  ASSERT_TRUE(libvirtd_.addPool(second, &error)) << error;
  writeProvider({pool_, second});

  auto ok = import(artifact_, "sha256:" + sha256_, "libvirt", " --target " + shellQuote(second));
  ASSERT_EQ(ok.exit_code, kImportOk) << ok.output << "\n" << libvirtd_.log();
  EXPECT_THAT(ok.termination, HasSubstr("target " + second));
  std::string volume = "kairos-tiny-" + sha256_.substr(0, 12) + ".raw";
  EXPECT_TRUE(volumes().empty()) << "the first pool is not this Job's";
  EXPECT_EQ(libvirtd_.volumes(second), std::set<std::string>{volume});

  auto refused =
      import(artifact_, "sha256:" + sha256_, "libvirt", " --target " + shellQuote("default"));
  EXPECT_EQ(refused.exit_code, kImportRejected) << refused.output;
  EXPECT_THAT(refused.termination, HasSubstr(R"("reason":"PoolNotDeclared")"));
  EXPECT_TRUE(volumes().empty());
}

const kube::ResourceType kJobs{"batch", "v1", "jobs", true};
const kube::ResourceType kVMImages{"banlieue.io", "v1alpha1", "vmimages", false};

TEST_F(ImageImportLibvirtTest, ImportJobsReachTheDaemonOverTlsAndMapToZoneRows) {
  auto& cluster = testing::LocalCluster::shared();
  auto client = cluster.client();
  ASSERT_NE(client, nullptr);
  const std::string address = cluster.podReachableAddress();
  ASSERT_FALSE(address.empty());
  startLibvirtd({.tls_address = address});
  if (HasFatalFailure()) return;
  ASSERT_FALSE(libvirtd_.tlsUri().empty());
  testing::LocalCluster::TestNamespace ns(cluster);
  std::string image_name = ns.name() + "-tiny";
  std::string role = ns.name() + "-image-import";
  struct Cleanup {
    testing::LocalCluster& cluster;
    std::string image, role;
    ~Cleanup() {
      cluster.kubectl("delete vmimage " + image + " --ignore-not-found");
      cluster.kubectl("delete clusterrolebinding,clusterrole " + role + " --ignore-not-found");
    }
  } cleanup{cluster, image_name, role};

  // The dedicated ServiceAccount may only read VMImages, Providers and, by name, the Provider's
  // credentials Secret (the client certificate) and CA ConfigMap (examples/02's layout).
  auto yamlBlock = [](const std::string& pem) {
    std::string out = "|\n";
    std::istringstream lines(pem);
    for (std::string line; std::getline(lines, line);) out += "    " + line + "\n";
    return out;
  };
  auto rbac = cluster.apply(R"(apiVersion: v1
kind: ServiceAccount
metadata: {name: banlieue-image-import, namespace: )" +
                            ns.name() + R"(}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: )" + role + R"(}
rules:
- apiGroups: [banlieue.io]
  resources: [vmimages, providers]
  verbs: [get]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: )" + role + R"(}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: )" +
                            role + R"(}
subjects:
- {kind: ServiceAccount, name: banlieue-image-import, namespace: )" +
                            ns.name() + R"(}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: lv1-connection, namespace: )" +
                            ns.name() + R"(}
rules:
- {apiGroups: [""], resources: [secrets], resourceNames: [lv1-tls], verbs: [get]}
- {apiGroups: [""], resources: [configmaps], resourceNames: [lv1-ca], verbs: [get]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: lv1-connection, namespace: )" +
                            ns.name() + R"(}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: lv1-connection}
subjects:
- {kind: ServiceAccount, name: banlieue-image-import, namespace: )" +
                            ns.name() + R"(}
---
apiVersion: v1
kind: Secret
metadata: {name: lv1-tls, namespace: )" +
                            ns.name() + R"(}
type: kubernetes.io/tls
stringData:
  tls.crt: )" + yamlBlock(libvirtd_.clientCertPem()) +
                            R"(  tls.key: )" + yamlBlock(libvirtd_.clientKeyPem()) + R"(---
apiVersion: v1
kind: ConfigMap
metadata: {name: lv1-ca, namespace: )" +
                            ns.name() + R"(}
data:
  ca.crt: )" + yamlBlock(libvirtd_.caPem()) +
                            R"(---
apiVersion: banlieue.io/v1alpha1
kind: Provider
metadata: {name: lv1, namespace: )" +
                            ns.name() + R"(}
spec:
  providerClassRef: {name: libvirt}
  connection:
    endpoint: ")" + libvirtd_.tlsUri() +
                            R"("
    credentialsRef: {name: lv1-tls}
    caBundle: {configMapRef: {name: lv1-ca}}
  capabilities:
    storageClasses:
    - {name: local, target: {pool: )" +
                            pool_ + R"(}}
---
apiVersion: banlieue.io/v1alpha1
kind: VMImage
metadata: {name: )" + image_name +
                            R"(}
spec:
  sources:
  - {providerClass: libvirt, kind: Url, ref: unused, importFrom: quay.io/kairos/ubuntu:1}
)");
  ASSERT_EQ(rbac.exit_code, 0) << rbac.output;

  ImportJobParams p;
  p.image_name = image_name;
  p.provider_namespace = ns.name();
  p.provider_name = "lv1";
  p.backend = "libvirt";
  p.failure_domain = "host";
  p.artifact_file = "tiny.raw";
  p.artifact_format = "raw";
  p.checksum = "sha256:" + sha256_;
  p.artifacts_host_path = artifact_.parent_path().string();
  p.job_namespace = ns.name();
  // The image the node runs (deploy/local/images) and its plugin root, as a provider names them.
  p.container_image = std::string("localhost/banlieue:") + kVersion;
  p.plugin_dir = plugin::kDefaultPluginRoot;
  p.log_level = "debug";
  p.backoff_limit = 0;
  p.active_deadline_seconds = 300;

  auto runJob = [&](const ImportJobParams& params) -> ImportOutcome {
    auto manifest = importJob(params);
    EXPECT_TRUE(manifest.ok()) << manifest.status().message();
    if (!manifest.ok()) return {};
    auto created = client->create(kJobs, ns.name(), *manifest);
    EXPECT_TRUE(created.ok()) << created.status().message();
    std::string name = importJobName(params);
    ImportOutcome outcome;
    bool finished = testing::LocalCluster::eventually(
        [&] {
          auto job = client->get(kJobs, ns.name(), name);
          if (!job.ok()) return false;
          auto pods = client->list(kube::resources::kPod, ns.name(),
                                   {.label_selector = "job-name=" + name});
          const rapidjson::Value* pod = nullptr;
          if (pods.ok() && (*pods)["items"].IsArray() && !(*pods)["items"].Empty()) {
            pod = &(*pods)["items"][(*pods)["items"].Size() - 1];
          }
          outcome = importOutcome(*job, pod);
          return outcome.state != ImportOutcome::State::kRunning;
        },
        std::chrono::seconds(180));
    EXPECT_TRUE(finished) << "Job " << name << " did not finish: " << outcome.message << "\n"
                          << cluster.kubectl("get pods,jobs -o wide -n " + ns.name()).output
                          << cluster.kubectl("describe pods -n " + ns.name()).output
                          << cluster.nodeDiagnostics();
    return outcome;
  };

  // A flipped byte: the Job fails with the checksum reason, the pool stays empty.
  fs::path flipped = artifact_.parent_path() / "flipped.raw";
  fs::copy_file(artifact_, flipped);
  {
    std::fstream f(flipped, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(4242);
    f.put('\x01');
  }
  ImportJobParams bad = p;
  bad.artifact_file = "flipped.raw";
  auto failed = runJob(bad);
  EXPECT_EQ(failed.state, ImportOutcome::State::kFailed);
  EXPECT_EQ(failed.reason, "ChecksumMismatch") << failed.message;
  EXPECT_EQ(failed.exit_code, kImportChecksumMismatch);
  EXPECT_FALSE(zoneRow("host", failed).ready);
  EXPECT_TRUE(volumes().empty());

  auto imported = runJob(p);
  ASSERT_EQ(imported.state, ImportOutcome::State::kSucceeded)
      << imported.message << "\n--- libvirtd ---\n"
      << libvirtd_.log();
  auto row = zoneRow("host", imported);
  EXPECT_TRUE(row.ready);
  EXPECT_EQ(row.reason, "Imported");
  std::string volume = image_name + "-" + sha256_.substr(0, 12) + ".raw";
  EXPECT_EQ(volumes(), std::set<std::string>{volume});
}

}  // namespace
}  // namespace banlieue::roles::images
