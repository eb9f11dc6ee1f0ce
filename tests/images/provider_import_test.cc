// The provider runtime's half of the image pipeline on the local control plane, for three
// plugins. The test stands in for kairos-operator (and, but for libvirt, the imagebuilder): it
// writes the artifact into a directory per artifacts PVC (and the VMImage's
// status.buildArtifact). `banlieue provider
// <backend>` (a process of the test's, naming the image's plugin directory for its Jobs) then
// creates one import Job per failure domain; the cluster's node runs `banlieue image-import` in
// a container of localhost/banlieue under ServiceAccount banlieue-image-import with the
// operator's import Role (it reads the Provider and its credentials Secret through the API),
// and the Provider's row becomes Ready with the zone's resolvedRef, read from the Job's
// termination message.
//   - file (the example plugin, which imports by copying, from its provider image
//     localhost/banlieue-provider-file): the verified artifact is imported; a one-byte-flipped
//     artifact fails with ChecksumMismatch; banlieue.io/force-reimport makes exactly one new
//     Job per token;
//   - libvirt, the whole pipeline: `banlieue imagebuilder` requests the OSArtifact, the test
//     makes it Ready with its file, and the Job reaches a private libvirtd over qemu+tls:// at
//     the cluster's pod-reachable address (client certificate, CA and key from the Provider's
//     credentials Secret) and lands the volume in its dir pool;
//   - vSphere: vcsim with TLS and a login at the pod-reachable address; the ISO reaches a
//     datastore and becomes a template.
// Labels: integration;images.
#include "host/api/codec.h"
#include "host/common/version.h"
#include "host/kube/api_error.h"
#include "host/plugin/loader.h"
#include "host/roles/common/image_finalizer.h"
#include "host/roles/images/artifact_checksum.h"
#include "host/roles/operator/workload.h"
#include "tests/support/background_process.h"
#include "tests/support/build_paths.h"
#include "tests/support/local_cluster.h"
#include "tests/support/private_libvirtd.h"
#include "tests/support/read_file.h"
#include "tests/vsphere/plugin_driver.h"
#include "tests/vsphere/vcsim.h"

#include <banlieue/sdk/json.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>

namespace banlieue::testing {
namespace {

namespace fs = std::filesystem;
namespace json = sdk::json;
using namespace std::chrono_literals;

const kube::ResourceType kVMImages{"banlieue.io", "v1alpha1", "vmimages", false};
const kube::ResourceType kJobs{"batch", "v1", "jobs", true};
const kube::ResourceType kOsArtifacts{"build.kairos.io", "v1alpha2", "osartifacts", true};

class ProviderImportTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto& cluster = LocalCluster::shared();
    auto crd =
        cluster.kubectl(std::string("apply -f ") + PLUGIN_DIR + "/file/crds/filemachines.yaml");
    ASSERT_EQ(crd.exit_code, 0) << crd.output;
    // kairos-operator's OSArtifact, which the imagebuilder requests builds with.
    auto osa = cluster.kubectl(std::string("apply -f ") + IMAGES_TEST_DIR + "/osartifact-crd.yaml");
    ASSERT_EQ(osa.exit_code, 0) << osa.output;
    ASSERT_TRUE(LocalCluster::eventually([&] {
      return cluster.kubectl("get osartifacts -A").exit_code == 0;
    })) << "the OSArtifact CRD was not served";
  }

  void SetUp() override {
    client_ = cluster_.client();
    ASSERT_NE(client_, nullptr);
    ns_ = std::make_unique<LocalCluster::TestNamespace>(cluster_);
    dir_ = fs::temp_directory_path() / ("banlieue-import-" + ns_->name());
    fs::create_directories(dir_ / "artifacts");
    // The Jobs' containers (uid 65532) read the artifacts through a hostPath: the test's temp
    // tree must be traversable.
    fs::permissions(dir_, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
  }

  // Deletes the test's images while the provider still runs: it releases its finalizer on them
  // (ADR 0037). Whatever it could not release (it may have died with the test) is released
  // here, so that no VMImage stays Terminating in the shared cluster. True when the provider
  // released every one within 60 s.
  bool removeImages() {
    bool released = true;
    for (const auto& image : images_) {
      auto deleted =
          cluster_.kubectl("delete vmimage " + image + " --ignore-not-found --timeout=60s", 90s);
      if (deleted.exit_code != 0) {
        released = false;
        std::cerr << "vmimage " << image << " was not released: " << deleted.output << "\n";
        cluster_.kubectl("patch vmimage " + image +
                         " --type=merge -p '{\"metadata\":{\"finalizers\":null}}'");
      }
    }
    images_.clear();
    return released;
  }

  void TearDown() override {
    removeImages();  // the images first, while the provider still runs
    builder_.reset();
    provider_.reset();
    controller_.reset();
    libvirtd_.reset();  // after the provider, whose plugin holds a connection to it
    // Not waited for: a PersistentVolume goes once its claim has (with the namespace).
    for (const auto& pv : volumes_) {
      cluster_.kubectl("delete pv " + pv + " --ignore-not-found --wait=false");
    }
    // No wait: an operator elsewhere in the cluster holds the class's in-use finalizer until
    // this test's namespace and its Provider are gone (ADR 0024).
    if (!class_.empty())
      cluster_.kubectl("delete providerclass " + class_ + " --ignore-not-found --wait=false");
    cluster_.kubectl("delete clusterrolebinding,clusterrole " + ns_->name() +
                     "-image-import --ignore-not-found");
    std::error_code ec;
    if (!HasFailure()) fs::remove_all(dir_, ec);
  }

  // What differs between the backends under test.
  struct Backend {
    std::string name;                // the backend, and the plugin's path in the plugin directory
    std::string connection;          // spec.connection, JSON
    std::string capabilities;        // spec.capabilities, JSON ("{}" for none)
    std::string credentials_secret;  // empty: no Secret
    std::map<std::string, std::string> credentials;  // its stringData
    // The ProviderClass's image repository, at this build's version: the Jobs run it.
    std::string image = "localhost/banlieue";
  };

  // The class, the Provider (with its credentials Secret), the import identity (as bootstrap
  // makes it, in this test's namespace) and the operator's import Role for the Provider.
  void applyProviderAndIdentity(const Backend& backend) {
    std::string ns = ns_->name();
    backend_ = backend.name;
    // Cluster-scoped and labelled onto workloads (at most 63 characters): one per test process.
    class_ = "import-" + backend.name + "-" + std::to_string(::getpid());
    std::string secret;
    if (!backend.credentials_secret.empty()) {
      rapidjson::Document data(rapidjson::kObjectType);
      for (const auto& [k, v] : backend.credentials) {
        data.AddMember(rapidjson::Value(k.c_str(), data.GetAllocator()),
                       rapidjson::Value(v.c_str(), data.GetAllocator()), data.GetAllocator());
      }
      secret = "apiVersion: v1\nkind: Secret\nmetadata: {name: " + backend.credentials_secret +
               ", namespace: " + ns + "}\nstringData: " + json::serialize(data) + "\n---\n";
    }
    auto applied = cluster_.apply(secret + R"(apiVersion: banlieue.io/v1alpha1
kind: ProviderClass
metadata: {name: )" + class_ + R"(}
spec:
  backend: )" + backend.name + R"(
  plugin: {path: )" + backend.name +
                                  R"(}
  image: {repository: )" + backend.image +
                                  ", tag: " + std::string(kVersion) +
                                  R"(}
---
apiVersion: banlieue.io/v1alpha1
kind: Provider
metadata: {name: )" + provider_name_ +
                                  ", namespace: " + ns + R"(}
spec:
  providerClassRef: {name: )" + class_ +
                                  R"(}
  connection: )" + backend.connection +
                                  R"(
  capabilities: )" + backend.capabilities +
                                  R"(
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: banlieue-image-import, namespace: )" +
                                  ns + R"(}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: )" + ns + R"(-image-import}
rules:
- {apiGroups: [banlieue.io], resources: [vmimages], verbs: [get]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: )" + ns + R"(-image-import}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: )" +
                                  ns +
                                  R"(-image-import}
subjects:
- {kind: ServiceAccount, name: banlieue-image-import, namespace: )" +
                                  ns + R"(}
)");
    ASSERT_EQ(applied.exit_code, 0) << applied.output;

    // The operator's import Role and RoleBinding, from its own builder.
    auto provider_doc = client_->get(roles::provider_operator::kProviderType, ns, provider_name_);
    ASSERT_TRUE(provider_doc.ok()) << provider_doc.status().message();
    auto class_doc = client_->get(roles::provider_operator::kProviderClassType, "", class_);
    ASSERT_TRUE(class_doc.ok()) << class_doc.status().message();
    auto provider = api::fromJson<api::Provider>(json::serialize(*provider_doc));
    auto provider_class = api::fromJson<api::ProviderClass>(json::serialize(*class_doc));
    ASSERT_TRUE(provider.ok() && provider_class.ok());
    roles::provider_operator::WorkloadOptions options;
    options.build_namespace = ns;
    auto workload = roles::provider_operator::buildWorkload(*provider, *provider_class, options);
    ASSERT_TRUE(workload.ok()) << workload.status().message();
    int applied_import = 0;
    for (const auto& o : workload->objects) {
      if (o.name.size() < 7 || o.name.compare(o.name.size() - 7, 7, "-import") != 0) continue;
      auto r = client_->apply(o.type, o.ns, o.name, json::serialize(o.body),
                              {.field_manager = "banlieue.io/operator", .force = true});
      ASSERT_TRUE(r.ok()) << r.status().message();
      ++applied_import;
    }
    EXPECT_EQ(applied_import, 2);  // the Role and its RoleBinding
  }

  // The imagebuilder, building into this test's namespace, as bootstrap runs it: the digest of
  // each build comes from its checksum Job, which runs banlieue's image on the node with the
  // build's artifacts PVC mounted read-only (ADR 0052).
  void startImageBuilder() {
    builder_ = std::make_unique<BackgroundProcess>(std::vector<std::string>{
        BANLIEUE_BINARY, "--log-level", "debug", "imagebuilder", "--kubeconfig",
        cluster_.kubeconfig().string(), "--health-port", "-1", "--metrics-port", "-1",
        "--build-namespace", ns_->name(), "--leader-election-namespace", ns_->name(), "--job-image",
        "localhost/banlieue:" + std::string(kVersion)});
    ASSERT_TRUE(builder_->started());
  }

  // `pvc_artifacts`: the Jobs mount each build's artifacts PVC, as in a real cluster; else the
  // PVC's directory under dir_ as a hostPath (a development node without PVCs).
  void startProvider(bool pvc_artifacts = false) {
    std::vector<std::string> argv{
        BANLIEUE_BINARY, "--log-level", "debug", "provider", backend_, "--provider",
        ns_->name() + "/" + provider_name_, "--plugin-dir", PLUGIN_DIR, "--kubeconfig",
        cluster_.kubeconfig().string(), "--health-port", "0", "--metrics-port", "-1",
        "--leader-election-namespace", ns_->name(), "--import-namespace", ns_->name(),
        // The Jobs run the ProviderClass's image, whose plugins
        // are not where this process loads them from.
        "--import-plugin-dir", plugin::kDefaultPluginRoot};
    if (!pvc_artifacts) {
      argv.insert(argv.end(), {"--artifacts-host-root", (dir_ / "artifacts").string()});
    }
    provider_ = std::make_unique<BackgroundProcess>(argv);
    ASSERT_TRUE(provider_->started());
  }

  // What kairos-operator does for a build's storage: PVC `pvc` in the build namespace, here
  // bound to a PersistentVolume of the node's (a hostPath at dir_/artifacts/<pvc>, made now).
  void provideArtifactsVolume(const std::string& pvc) {
    fs::path where = dir_ / "artifacts" / pvc;
    fs::create_directories(where);
    fs::permissions(where, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
    std::string pv = ns_->name() + "-" + pvc;
    volumes_.push_back(pv);
    auto applied = cluster_.apply(R"(apiVersion: v1
kind: PersistentVolume
metadata: {name: )" + pv + R"(}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: ""
  hostPath: {path: )" + where.string() +
                                  R"(, type: Directory}
  claimRef: {namespace: )" + ns_->name() +
                                  ", name: " + pvc + R"(}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: )" + pvc +
                                  ", namespace: " + ns_->name() + R"(}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: ""
  volumeName: )" + pv + R"(
  resources: {requests: {storage: 1Gi}}
)");
    ASSERT_EQ(applied.exit_code, 0) << applied.output;
    ASSERT_TRUE(LocalCluster::eventually([&] {
      return cluster_
                 .kubectl("get pvc " + pvc + " -n " + ns_->name() + " -o jsonpath={.status.phase}")
                 .output == "Bound";
    })) << "PVC "
        << pvc << " was not bound: "
        << cluster_.kubectl("describe pvc " + pvc + " -n " + ns_->name()).output;
  }

  // kairos-operator's part of a build: once the imagebuilder asked for OSArtifact `osa`, its
  // artifacts PVC holding `file` (written by `write`), then the OSArtifact Ready.
  void playKairos(const std::string& osa, const std::function<void(const fs::path&)>& write) {
    ASSERT_TRUE(LocalCluster::eventually(
        [&] { return client_->get(kOsArtifacts, ns_->name(), osa).ok(); }, 60s))
        << diagnostics();
    provideArtifactsVolume(osa + "-artifacts");
    if (HasFatalFailure()) return;
    write(dir_ / "artifacts" / (osa + "-artifacts"));
    auto ready = client_->patch(kOsArtifacts, ns_->name(), osa, kube::PatchType::kMerge,
                                R"({"status":{"phase":"Ready"}})", "status");
    ASSERT_TRUE(ready.ok()) << ready.status().message();
  }

  std::string buildField(const std::string& image, const std::string& field) {
    auto doc = client_->get(kVMImages, "", image);
    return doc.ok() ? json::stringOr(&*doc, "status.buildArtifact." + field) : std::string();
  }

  // The controller owns the VMImage's top-level Ready (from the rows). Narrowed to this
  // namespace, it judges only images whose rows all come from this test's Provider.
  void startController() {
    controller_ = std::make_unique<BackgroundProcess>(std::vector<std::string>{
        BANLIEUE_BINARY, "controller", "--kubeconfig", cluster_.kubeconfig().string(),
        "--leader-election-namespace", ns_->name(), "--namespace", ns_->name(), "--health-port",
        "0", "--metrics-port", "-1"});
    ASSERT_TRUE(controller_->started());
  }

  // A Url VMImage for the class. `spec_extra`: more of the spec (YAML lines indented by two).
  void applyUrlImage(const std::string& name, const std::string& spec_extra = {}) {
    images_.push_back(name);
    auto applied = cluster_.apply(R"(apiVersion: banlieue.io/v1alpha1
kind: VMImage
metadata: {name: )" + name + R"(}
spec:
  sources:
  - {providerClass: )" + class_ + R"(, kind: Url, ref: unused, importFrom: quay.io/kairos/x:1}
)" + spec_extra);
    ASSERT_EQ(applied.exit_code, 0) << applied.output;
  }

  // applyUrlImage, then its artifact `file` (under PVC directory `pvc`) Ready with `checksum`,
  // written as the imagebuilder writes it. `kind`: the artifact's kind (cloudImage or iso).
  void applyBuiltImage(const std::string& name, const std::string& pvc, const std::string& file,
                       const std::string& checksum, const std::string& kind = "cloudImage",
                       const std::string& spec_extra = {}) {
    applyUrlImage(name, spec_extra);
    if (HasFatalFailure()) return;
    std::string status = R"({"apiVersion":"banlieue.io/v1alpha1","kind":"VMImage",)"
                         R"("metadata":{"name":")" +
                         name + R"("},"status":{"buildArtifact":{"kind":")" + kind +
                         R"(","phase":"Ready",)"
                         R"("pvcRef":")" +
                         pvc + R"(","file":")" + file + R"(","checksum":")" + checksum + "\"}}}";
    auto written =
        client_->apply(kVMImages, "", name, status,
                       {.field_manager = "banlieue.io/imagebuilder", .subresource = "status"});
    ASSERT_TRUE(written.ok()) << written.status().message();
  }

  // This Provider's row of `image`, or null.
  std::unique_ptr<rapidjson::Document> row(const std::string& image) {
    auto doc = client_->get(kVMImages, "", image);
    if (!doc.ok()) return nullptr;
    const auto* rows = json::find(&*doc, "status.perProvider");
    if (rows == nullptr || !rows->IsArray()) return nullptr;
    for (const auto& r : rows->GetArray()) {
      if (json::stringOr(&r, "providerName") == provider_name_ &&
          json::stringOr(&r, "providerNamespace") == ns_->name()) {
        auto out = std::make_unique<rapidjson::Document>();
        out->CopyFrom(r, out->GetAllocator());
        return out;
      }
    }
    return nullptr;
  }

  bool waitForRow(const std::string& image, const std::string& reason, std::string* last) {
    return LocalCluster::eventually(
        [&] {
          auto r = row(image);
          *last = r ? json::serialize(*r) : "<no row>";
          return r && json::stringOr(r.get(), "reason") == reason;
        },
        240s);
  }

  std::vector<std::string> jobsOf(const std::string& image) {
    std::vector<std::string> out;
    auto jobs = client_->list(kJobs, ns_->name(), {});
    if (!jobs.ok()) return out;
    for (const auto& j : (*jobs)["items"].GetArray()) {
      const auto* a = json::member(json::find(&j, "metadata.annotations"), "banlieue.io/vmimage");
      if (a != nullptr && a->IsString() && a->GetString() == image) {
        out.push_back(json::stringOr(&j, "metadata.name"));
      }
    }
    return out;
  }

  // The image's metadata.finalizers.
  std::vector<std::string> finalizersOf(const std::string& image) {
    std::vector<std::string> out;
    auto doc = client_->get(kVMImages, "", image);
    if (!doc.ok()) return out;
    const auto* list = json::find(&*doc, "metadata.finalizers");
    if (list == nullptr || !list->IsArray()) return out;
    for (const auto& f : list->GetArray()) out.emplace_back(f.GetString());
    return out;
  }

  // Deletes the image and waits until it is gone (the provider's finalizer released).
  bool deleteImageAndWait(const std::string& image) {
    auto deleted = cluster_.kubectl("delete vmimage " + image + " --wait=false");
    if (deleted.exit_code != 0) return false;
    return LocalCluster::eventually(
        [&] { return kube::isNotFound(client_->get(kVMImages, "", image).status()); }, 120s);
  }

  bool jobSucceeded(const std::string& name) {
    auto job = client_->get(kJobs, ns_->name(), name);
    return job.ok() && json::integer(&*job, "status.succeeded").value_or(0) == 1;
  }

  std::string diagnostics() {
    return "\n--- imagebuilder ---\n" + (builder_ ? builder_->output() : "") +
           "\n--- provider ---\n" + (provider_ ? provider_->output() : "") +
           "\n--- controller ---\n" + (controller_ ? controller_->output() : "") +
           "\n--- objects ---\n" +
           cluster_.kubectl("get jobs,pods -o wide -n " + ns_->name()).output +
           cluster_.kubectl("get bvmimage -o yaml").output + cluster_.nodeDiagnostics();
  }

  LocalCluster& cluster_ = LocalCluster::shared();
  std::unique_ptr<kube::KubeClient> client_;
  std::unique_ptr<LocalCluster::TestNamespace> ns_;
  std::unique_ptr<BackgroundProcess> provider_;
  std::unique_ptr<BackgroundProcess> controller_;
  std::unique_ptr<BackgroundProcess> builder_;
  std::string provider_name_ = "under-test";
  std::string backend_;
  std::string class_;
  fs::path dir_;
  std::vector<std::string> images_;
  std::vector<std::string> volumes_;  // PersistentVolumes (cluster-scoped) the test made
  std::unique_ptr<PrivateLibvirtd> libvirtd_;
};

// An artifact of `size` bytes at <dir>/artifacts/<pvc>/<file> (one directory per artifacts
// PVC, as kairos-operator leaves it); returns the bytes.
std::string writeArtifact(const fs::path& dir, const std::string& pvc, const std::string& file,
                          size_t size) {
  fs::create_directories(dir / "artifacts" / pvc);
  std::string bytes(size, '\0');
  for (size_t i = 0; i < bytes.size(); i += 512) bytes[i] = static_cast<char>(i / 512);
  std::ofstream(dir / "artifacts" / pvc / file, std::ios::binary) << bytes;
  return bytes;
}

// The file plugin's backend is a directory where the plugin runs: /tmp, which is this
// process's for the provider and each Job's own emptyDir in its container. What a Job copied
// there leaves with its pod, so this case judges the Jobs by their outcome (the byte-identical
// copy into a backend the test can read is the libvirt case's).
TEST_F(ProviderImportTest, ImportJobsRunOnTheNodeAndFillTheRow) {
  applyProviderAndIdentity(
      {.name = "file",
       .connection = R"({"endpoint":"file:///tmp","credentialsRef":{"name":"files-credentials"}})",
       .capabilities = "{}",
       .credentials_secret = "files-credentials",
       .credentials = {{"token", "not-used-by-the-file-plugin"}},
       .image = "localhost/banlieue-provider-file"});
  if (HasFatalFailure()) return;
  // The artifact as kairos-operator leaves it: one directory per artifacts PVC.
  std::string bytes =
      writeArtifact(dir_, "tiny-build-artifacts", "tiny-build.raw", size_t{1} << 20);
  auto sha =
      roles::images::fileDigest(dir_ / "artifacts/tiny-build-artifacts/tiny-build.raw", "sha256");
  ASSERT_TRUE(sha.ok());
  // The same artifact with one byte flipped, still pinned to the good digest.
  fs::create_directories(dir_ / "artifacts/bad-build-artifacts");
  std::string flipped = bytes;
  flipped[4242] = '\x01';
  std::ofstream(dir_ / "artifacts/bad-build-artifacts/bad-build.raw", std::ios::binary) << flipped;

  startProvider();
  startController();
  std::string good = ns_->name() + "-tiny";
  std::string bad = ns_->name() + "-bad";
  applyBuiltImage(good, "tiny-build-artifacts", "tiny-build.raw", "sha256:" + *sha);
  applyBuiltImage(bad, "bad-build-artifacts", "bad-build.raw", "sha256:" + *sha);

  std::string last;
  ASSERT_TRUE(waitForRow(good, "Imported", &last)) << last << diagnostics();
  auto r = row(good);
  EXPECT_TRUE(json::boolean(r.get(), "ready"));
  ASSERT_EQ((*r)["zones"].Size(), 1u);
  EXPECT_EQ(json::stringOr(&(*r)["zones"][0], "name"), "local");
  EXPECT_TRUE(json::boolean(&(*r)["zones"][0], "ready"));
  ASSERT_EQ(jobsOf(good).size(), 1u);
  EXPECT_TRUE(jobSucceeded(jobsOf(good)[0])) << diagnostics();
  // kubectl shows the image Ready: the controller's condition from the row.
  auto waited = cluster_.kubectl("wait --for=condition=Ready --timeout=90s bvmimage/" + good, 120s);
  EXPECT_EQ(waited.exit_code, 0) << waited.output << diagnostics();
  auto shown = cluster_.kubectl("get bvmimage " + good);
  EXPECT_NE(shown.output.find("True"), std::string::npos) << shown.output;

  ASSERT_TRUE(waitForRow(bad, "ChecksumMismatch", &last)) << last << diagnostics();
  auto b = row(bad);
  EXPECT_FALSE(json::boolean(b.get(), "ready", true));
  EXPECT_EQ(json::stringOr(&(*b)["zones"][0], "reason"), "ChecksumMismatch");
  auto bad_ready = cluster_.kubectl(
      "get bvmimage " + bad + " -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}'");
  EXPECT_NE(bad_ready.output, "True");

  // A force re-import: one new Job for the token, which imports again; the old one goes, the
  // row is Ready again.
  auto before = jobsOf(good);
  ASSERT_EQ(before.size(), 1u);
  auto annotated = cluster_.kubectl("annotate vmimage " + good + " banlieue.io/force-reimport=t1");
  ASSERT_EQ(annotated.exit_code, 0) << annotated.output;
  ASSERT_TRUE(LocalCluster::eventually(
      [&] {
        auto now = jobsOf(good);
        return now.size() == 1 && now[0] != before[0] && jobSucceeded(now[0]);
      },
      240s))
      << diagnostics();
  ASSERT_TRUE(waitForRow(good, "Imported", &last)) << last << diagnostics();
  // Settled: the token was acted on once; removing it imports nothing again. The provider
  // logs each import pass with the token it saw: wait for one that saw the annotation gone.
  auto settled = jobsOf(good);
  const std::string untokened_pass =
      "vmimage " + good + ": import pass done (force-reimport token '';";
  auto passes = [&] {
    const std::string out = provider_->output();
    size_t count = 0;
    for (size_t at = out.find(untokened_pass); at != std::string::npos;
         at = out.find(untokened_pass, at + 1)) {
      ++count;
    }
    return count;
  };
  const size_t passes_before = passes();
  cluster_.kubectl("annotate vmimage " + good + " banlieue.io/force-reimport-");
  ASSERT_TRUE(LocalCluster::eventually([&] { return passes() > passes_before; })) << diagnostics();
  EXPECT_EQ(jobsOf(good), settled);

  // Issue #20 (ADR 0037): the Provider's finalizer is on what it imported; the file plugin has
  // no delete_image, so the deletion keeps the copy (zone Retained) and does not hang.
  EXPECT_THAT(finalizersOf(good),
              ::testing::Contains(roles::imageFinalizer(ns_->name(), provider_name_)));
  ASSERT_TRUE(deleteImageAndWait(good)) << diagnostics();
}

// The same pipeline into a real libvirtd's directory pool: a libvirt Provider whose endpoint is
// the TLS listener of a daemon this test starts at the cluster's pod-reachable address, with
// the allowed client certificate, its key and the CA in the Provider's credentials Secret. The
// provider process and the Job's container both reach it over qemu+tls:// (nothing of the
// host's filesystem but the artifacts); the Job writes the verified artifact as a volume.
// Skips, saying why, only when not root (a private libvirtd).
TEST_F(ProviderImportTest, LibvirtImportJobWritesTheArtifactIntoARealDirPool) {
  if (auto why = PrivateLibvirtd::unavailableReason(); !why.empty()) GTEST_SKIP() << why;
  // A short directory of its own: the socket path must fit a sockaddr_un.
  char tmpl[] = "/tmp/bnl-lv-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  fs::path lv_dir = tmpl;
  fs::permissions(lv_dir, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
  const std::string address = cluster_.podReachableAddress();
  ASSERT_FALSE(address.empty());
  libvirtd_ = std::make_unique<PrivateLibvirtd>();
  std::string error;
  std::string pool = "bnl-pi-" + std::to_string(::getpid());
  ASSERT_TRUE(libvirtd_->start(lv_dir, pool, &error, {.tls_address = address})) << error;
  // Two pools (docs/adr/0053): an import Job and a zone row each.
  const std::string second_pool = pool + "-b";
  ASSERT_TRUE(libvirtd_->addPool(second_pool, &error)) << error;
  struct RemoveDir {
    fs::path dir;
    ~RemoveDir() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } remove_lv_dir{lv_dir};

  applyProviderAndIdentity(
      {.name = "libvirt",
       .connection = R"({"endpoint":")" + libvirtd_->tlsUri() +
                     R"(","credentialsRef":{"name":"libvirt-tls"}})",
       .capabilities = R"({"storageClasses":[{"name":"local","target":{"pool":")" + pool +
                       R"("}},{"name":"second","target":{"pool":")" + second_pool + R"("}}]})",
       .credentials_secret = "libvirt-tls",
       .credentials = {{"tls.crt", libvirtd_->clientCertPem()},
                       {"tls.key", libvirtd_->clientKeyPem()},
                       {"ca.crt", libvirtd_->caPem()}}});
  if (HasFatalFailure()) return;
  // The whole pipeline as specified (issue #27): the imagebuilder requests the build, the test
  // plays kairos-operator (an artifacts PVC holding the file), the imagebuilder's checksum Job
  // records what was built, and the import Job mounts the same PVC and verifies against it. No
  // checksum is pinned anywhere.
  startImageBuilder();
  startProvider(/*pvc_artifacts=*/true);
  startController();
  std::string image = ns_->name() + "-lv";
  applyUrlImage(image);
  std::string osa = image + "-build";
  std::string bytes;
  playKairos(osa, [&](const fs::path&) {
    bytes = writeArtifact(dir_, osa + "-artifacts", osa + ".raw", size_t{2} << 20);
  });
  if (HasFatalFailure()) return;
  auto sha = roles::images::fileDigest(dir_ / "artifacts" / (osa + "-artifacts") / (osa + ".raw"),
                                       "sha256");
  ASSERT_TRUE(sha.ok());
  ASSERT_TRUE(LocalCluster::eventually(
      [&] { return buildField(image, "checksum") == "sha256:" + *sha; }, 180s))
      << "the checksum Job did not record the artifact's digest" << diagnostics();
  EXPECT_EQ(buildField(image, "phase"), "Ready");

  std::string last;
  ASSERT_TRUE(waitForRow(image, "Imported", &last))
      << last << diagnostics() << "\n--- libvirtd ---\n"
      << libvirtd_->log();
  auto r = row(image);
  EXPECT_TRUE(json::boolean(r.get(), "ready"));
  // A row per pool of the host, <failure domain>/<pool>, each Ready.
  std::set<std::string> targets;
  ASSERT_EQ((*r)["zones"].Size(), 2u) << json::serialize(*r);
  for (const auto& zone : (*r)["zones"].GetArray()) {
    EXPECT_TRUE(json::boolean(&zone, "ready")) << json::serialize(zone);
    const std::string fd = json::stringOr(&zone, "failureDomain");
    const std::string target = json::stringOr(&zone, "target");
    EXPECT_FALSE(fd.empty()) << json::serialize(zone);
    EXPECT_EQ(json::stringOr(&zone, "name"), fd + "/" + target);
    targets.insert(target);
  }
  EXPECT_EQ(targets, (std::set<std::string>{pool, second_pool}));
  auto jobs = cluster_.kubectl("get jobs -n " + ns_->name() +
                               " -o jsonpath='{range .items[*]}{.metadata.annotations"
                               ".banlieue\\.io/import-target}{\" \"}{end}'");
  for (const auto& target : {pool, second_pool}) {
    EXPECT_THAT(jobs.output, ::testing::HasSubstr(target + " ")) << "an import Job per pool";
  }
  // One volume in each pool, named after the image and the artifact's digest, holding exactly
  // its bytes: read from the pools' directories, not through the plugin.
  std::string volume = image + "-" + sha->substr(0, 12) + ".raw";
  EXPECT_EQ(json::stringOr(r.get(), "resolvedRef"), volume);
  EXPECT_EQ(libvirtd_->volumes(), std::set<std::string>{volume});
  EXPECT_EQ(libvirtd_->volumes(second_pool), std::set<std::string>{volume});
  EXPECT_EQ(readFile(libvirtd_->poolPath() / volume), bytes);
  EXPECT_EQ(readFile(libvirtd_->poolPath(second_pool) / volume), bytes);
  auto waited =
      cluster_.kubectl("wait --for=condition=Ready --timeout=90s bvmimage/" + image, 120s);
  EXPECT_EQ(waited.exit_code, 0) << waited.output << diagnostics();

  // Issue #20 (ADR 0037): deleting the VMImage removes its volume from the pool, through the
  // plugin's delete_image, before the VMImage goes.
  EXPECT_THAT(finalizersOf(image),
              ::testing::Contains(roles::imageFinalizer(ns_->name(), provider_name_)));
  ASSERT_TRUE(deleteImageAndWait(image)) << diagnostics();
  EXPECT_EQ(libvirtd_->volumes(), std::set<std::string>{}) << diagnostics();
  EXPECT_EQ(libvirtd_->volumes(second_pool), std::set<std::string>{}) << diagnostics();

  // A source pin that is not what was built: the build fails closed, and says both digests.
  std::string pinned = ns_->name() + "-pinned";
  images_.push_back(pinned);
  auto applied =
      cluster_.apply("apiVersion: banlieue.io/v1alpha1\nkind: VMImage\nmetadata: {name: " + pinned +
                     "}\nspec:\n  sources:\n  - {providerClass: " + class_ +
                     ", kind: Url, ref: unused, importFrom: quay.io/kairos/x:1, "
                     "checksum: \"sha256:" +
                     std::string(64, '0') + "\"}\n");
  ASSERT_EQ(applied.exit_code, 0) << applied.output;
  playKairos(pinned + "-build", [&](const fs::path&) {
    writeArtifact(dir_, pinned + "-build-artifacts", pinned + "-build.raw", size_t{1} << 20);
  });
  if (HasFatalFailure()) return;
  ASSERT_TRUE(LocalCluster::eventually(
      [&] { return buildField(pinned, "reason") == "ChecksumMismatch"; }, 180s))
      << diagnostics();
  EXPECT_EQ(buildField(pinned, "phase"), "Failed");
  EXPECT_THAT(buildField(pinned, "message"), ::testing::HasSubstr(std::string(64, '0')));
  ASSERT_TRUE(waitForRow(pinned, "BuildFailed", &last)) << last << diagnostics();
  EXPECT_EQ(libvirtd_->volumes(), std::set<std::string>{}) << "nothing reached the pool";

  // An artifact changed after its digest was recorded (the provider is stopped meanwhile, so
  // no import starts before the change): the import Job refuses it, and the zone says so.
  provider_.reset();
  std::string corrupt = ns_->name() + "-corrupt";
  applyUrlImage(corrupt);
  fs::path corrupt_file =
      dir_ / "artifacts" / (corrupt + "-build-artifacts") / (corrupt + "-build.raw");
  playKairos(corrupt + "-build", [&](const fs::path&) {
    writeArtifact(dir_, corrupt + "-build-artifacts", corrupt + "-build.raw", size_t{1} << 20);
  });
  if (HasFatalFailure()) return;
  ASSERT_TRUE(
      LocalCluster::eventually([&] { return buildField(corrupt, "phase") == "Ready"; }, 180s))
      << diagnostics();
  {
    std::fstream f(corrupt_file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(4242);
    f.put('\x7f');
  }
  startProvider(/*pvc_artifacts=*/true);
  ASSERT_TRUE(waitForRow(corrupt, "ChecksumMismatch", &last)) << last << diagnostics();
  // The row says so as soon as one pool's Job has refused the artifact; the other pool's Job
  // refuses it on its own, a moment later or sooner (one Job per pool, ADR 0053).
  ASSERT_TRUE(LocalCluster::eventually(
      [&] {
        auto r = row(corrupt);
        last = r ? json::serialize(*r) : "<no row>";
        const auto* zones = r ? json::member(r.get(), "zones") : nullptr;
        if (zones == nullptr || !zones->IsArray() || zones->Size() != 2) return false;
        return std::all_of(zones->Begin(), zones->End(), [](const rapidjson::Value& zone) {
          return json::stringOr(&zone, "reason") == "ChecksumMismatch";
        });
      },
      240s))
      << "every pool's zone refuses the changed artifact: " << last << diagnostics();
  EXPECT_EQ(libvirtd_->volumes(), std::set<std::string>{}) << "nothing reached the pool";
  EXPECT_EQ(libvirtd_->volumes(second_pool), std::set<std::string>{}) << "nor the second";
}

// An ISO into vcsim through the vSphere plugin: a vSphere Provider with its credentials Secret
// and inline CA bundle (TLS verified), one Job per failure domain of the simulator, which
// listens where the Jobs' containers reach this machine; the ISO reaches a datastore and
// becomes a template named after the image (deferred install, so no installer has to run in
// the simulator).
TEST_F(ProviderImportTest, VsphereImportJobMakesATemplateFromAnIsoInVcsim) {
  const std::string address = cluster_.podReachableAddress();
  ASSERT_FALSE(address.empty());
  vsphere::testing::Vcsim vcsim({}, address);
  Backend backend{.name = "vsphere",
                  .connection = vcsim.providerConnection("vc-creds"),
                  .capabilities = "{}",
                  .credentials_secret = "vc-creds",
                  .credentials = {{"username", vsphere::testing::Vcsim::kUser},
                                  {"password", vsphere::testing::Vcsim::kPassword}}};
  applyProviderAndIdentity(backend);
  if (HasFatalFailure()) return;
  std::string bytes =
      writeArtifact(dir_, "iso-build-artifacts", "iso-build.iso", size_t{512} << 10);
  auto sha =
      roles::images::fileDigest(dir_ / "artifacts/iso-build-artifacts/iso-build.iso", "sha256");
  ASSERT_TRUE(sha.ok());

  startProvider();
  startController();
  std::string image = ns_->name() + "-iso";
  applyBuiltImage(image, "iso-build-artifacts", "iso-build.iso", "sha256:" + *sha, "iso",
                  R"(  osFamily: linux
  template:
    rootFolder: banlieue-templates
    installMode: deferred
    cpus: 1
    memoryMib: 512
    disk: {size: 1}
    network:
    - {network: VM Network}
)");

  std::string last;
  ASSERT_TRUE(waitForRow(image, "Imported", &last)) << last << diagnostics();
  auto r = row(image);
  EXPECT_TRUE(json::boolean(r.get(), "ready"));
  ASSERT_GE((*r)["zones"].Size(), 1u);
  EXPECT_EQ(json::stringOr(r.get(), "resolvedRef"), image);
  // Seen from vCenter's side with a client of the test's own.
  vsphere::testing::Backend vc(vcsim);
  EXPECT_TRUE(vc.vmNames().count(image)) << ::testing::PrintToString(vc.vmNames());
  bool iso_on_datastore = false;
  for (const auto& f : vc.datastoreFiles()) {
    if (f.size() >= 4 && f.compare(f.size() - 4, 4, ".iso") == 0) iso_on_datastore = true;
  }
  EXPECT_TRUE(iso_on_datastore) << ::testing::PrintToString(vc.datastoreFiles());
  auto waited =
      cluster_.kubectl("wait --for=condition=Ready --timeout=90s bvmimage/" + image, 120s);
  EXPECT_EQ(waited.exit_code, 0) << waited.output << diagnostics();
  // Deleted while vcsim and the provider run: the provider removes the template from vCenter
  // and releases the image (ADR 0037). Then the provider stops before vcsim does, so that it
  // does not spend its exit retrying.
  EXPECT_TRUE(removeImages()) << diagnostics();
  EXPECT_FALSE(vc.vmNames().count(image)) << ::testing::PrintToString(vc.vmNames());
  provider_.reset();
}

}  // namespace
}  // namespace banlieue::testing
