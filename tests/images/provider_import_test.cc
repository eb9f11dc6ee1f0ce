// The provider runtime's half of the image pipeline on the local control plane: `banlieue
// provider file` (the example plugin, which imports by copying the artifact into its backend
// directory) sees a Url VMImage whose status.buildArtifact the test writes as the imagebuilder
// would (standing in for kairos-operator and the imagebuilder: the artifact sits in a
// directory per artifacts PVC), creates one import Job per failure domain, the node agent runs
// `banlieue image-import` under ServiceAccount banlieue-image-import with the operator's import
// Role (it reads the Provider and its credentials Secret through the API), and the Provider's
// row becomes Ready with an Imported zone. A one-byte-flipped artifact fails with
// ChecksumMismatch on the row and writes nothing to the backend; banlieue.io/force-reimport
// makes exactly one new Job per token. Labels: integration;images.
#include "host/api/codec.h"
#include "host/roles/images/artifact_checksum.h"
#include "host/roles/operator/workload.h"
#include "tests/support/background_process.h"
#include "tests/support/local_cluster.h"

#include <banlieue/sdk/json.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace banlieue::testing {
namespace {

namespace fs = std::filesystem;
namespace json = sdk::json;
using namespace std::chrono_literals;

const kube::ResourceType kVMImages{"banlieue.io", "v1alpha1", "vmimages", false};
const kube::ResourceType kJobs{"batch", "v1", "jobs", true};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class ProviderImportTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto& cluster = LocalCluster::shared();
    auto crd =
        cluster.kubectl(std::string("apply -f ") + PLUGIN_DIR + "/file/crds/filemachines.yaml");
    ASSERT_EQ(crd.exit_code, 0) << crd.output;
  }

  void SetUp() override {
    client_ = cluster_.client();
    ASSERT_NE(client_, nullptr);
    ns_ = std::make_unique<LocalCluster::TestNamespace>(cluster_);
    class_ = "file-" + ns_->name();
    dir_ = fs::temp_directory_path() / ("banlieue-import-" + ns_->name());
    fs::create_directories(dir_ / "backend");
    fs::create_directories(dir_ / "artifacts");
    // The node agent runs the Job's process as root; the test's temp tree must be reachable.
    fs::permissions(dir_, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
  }

  void TearDown() override {
    provider_.reset();
    controller_.reset();
    for (const auto& image : images_) {
      cluster_.kubectl("delete vmimage " + image + " --ignore-not-found --wait=false");
    }
    cluster_.kubectl("delete providerclass " + class_ + " --ignore-not-found");
    cluster_.kubectl("delete clusterrolebinding,clusterrole " + ns_->name() +
                     "-image-import --ignore-not-found");
    std::error_code ec;
    if (!HasFailure()) fs::remove_all(dir_, ec);
  }

  // The class, a Provider with a credentials Secret, the import identity (as bootstrap makes
  // it, in this test's namespace) and the operator's import Role for the Provider.
  void applyProviderAndIdentity() {
    std::string ns = ns_->name();
    auto applied = cluster_.apply(R"(apiVersion: banlieue.io/v1alpha1
kind: ProviderClass
metadata: {name: )" + class_ + R"(}
spec:
  backend: file
  plugin: {path: file}
  image: {repository: localhost/banlieue, tag: test}
---
apiVersion: v1
kind: Secret
metadata: {name: files-credentials, namespace: )" +
                                  ns + R"(}
stringData: {token: not-used-by-the-file-plugin}
---
apiVersion: banlieue.io/v1alpha1
kind: Provider
metadata: {name: files, namespace: )" +
                                  ns + R"(}
spec:
  providerClassRef: {name: )" + class_ +
                                  R"(}
  connection:
    endpoint: "file://)" + (dir_ / "backend").string() +
                                  R"("
    credentialsRef: {name: files-credentials}
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
    auto provider_doc = client_->get(roles::provider_operator::kProviderType, ns, "files");
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

  void startProvider() {
    provider_ = std::make_unique<BackgroundProcess>(
        std::vector<std::string>{BANLIEUE_BINARY,
                                 "--log-level",
                                 "debug",
                                 "provider",
                                 "file",
                                 "--provider",
                                 ns_->name() + "/files",
                                 "--plugin-dir",
                                 PLUGIN_DIR,
                                 "--kubeconfig",
                                 cluster_.kubeconfig().string(),
                                 "--health-port",
                                 "0",
                                 "--metrics-port",
                                 "-1",
                                 "--leader-election-namespace",
                                 ns_->name(),
                                 "--import-namespace",
                                 ns_->name(),
                                 "--artifacts-host-root",
                                 (dir_ / "artifacts").string()});
    ASSERT_TRUE(provider_->started());
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

  // A Url VMImage for the class whose artifact `file` (under PVC directory `pvc`) is Ready
  // with `checksum`, written as the imagebuilder writes it.
  void applyBuiltImage(const std::string& name, const std::string& pvc, const std::string& file,
                       const std::string& checksum) {
    images_.push_back(name);
    auto applied = cluster_.apply(R"(apiVersion: banlieue.io/v1alpha1
kind: VMImage
metadata: {name: )" + name + R"(}
spec:
  sources:
  - {providerClass: )" + class_ + R"(, kind: Url, ref: unused, importFrom: quay.io/kairos/x:1}
)");
    ASSERT_EQ(applied.exit_code, 0) << applied.output;
    std::string status = R"({"apiVersion":"banlieue.io/v1alpha1","kind":"VMImage",)"
                         R"("metadata":{"name":")" +
                         name +
                         R"("},"status":{"buildArtifact":{"kind":"cloudImage","phase":"Ready",)"
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
      if (json::stringOr(&r, "providerName") == "files" &&
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

  std::string diagnostics() {
    return "\n--- provider ---\n" + (provider_ ? provider_->output() : "") +
           "\n--- controller ---\n" + (controller_ ? controller_->output() : "") +
           "\n--- objects ---\n" +
           cluster_.kubectl("get jobs,pods -o wide -n " + ns_->name()).output +
           cluster_.kubectl("get vmi -o yaml").output;
  }

  LocalCluster& cluster_ = LocalCluster::shared();
  std::unique_ptr<kube::KubeClient> client_;
  std::unique_ptr<LocalCluster::TestNamespace> ns_;
  std::unique_ptr<BackgroundProcess> provider_;
  std::unique_ptr<BackgroundProcess> controller_;
  std::string class_;
  fs::path dir_;
  std::vector<std::string> images_;
};

TEST_F(ProviderImportTest, ImportJobsRunOnTheNodeAgentAndFillTheRow) {
  applyProviderAndIdentity();
  if (HasFatalFailure()) return;
  // The artifact as kairos-operator leaves it: one directory per artifacts PVC.
  fs::create_directories(dir_ / "artifacts/tiny-build-artifacts");
  std::string bytes(size_t{1} << 20, '\0');
  for (size_t i = 0; i < bytes.size(); i += 512) bytes[i] = static_cast<char>(i / 512);
  std::ofstream(dir_ / "artifacts/tiny-build-artifacts/tiny-build.raw", std::ios::binary) << bytes;
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
  // The plugin wrote exactly the verified bytes into its backend.
  EXPECT_EQ(slurp(dir_ / "backend/images" / (good + ".raw")), bytes);
  // kubectl shows the image Ready: the controller's condition from the row.
  auto waited = cluster_.kubectl("wait --for=condition=Ready --timeout=90s vmi/" + good, 120s);
  EXPECT_EQ(waited.exit_code, 0) << waited.output << diagnostics();
  auto shown = cluster_.kubectl("get vmi " + good);
  EXPECT_NE(shown.output.find("True"), std::string::npos) << shown.output;

  ASSERT_TRUE(waitForRow(bad, "ChecksumMismatch", &last)) << last << diagnostics();
  auto b = row(bad);
  EXPECT_FALSE(json::boolean(b.get(), "ready", true));
  EXPECT_EQ(json::stringOr(&(*b)["zones"][0], "reason"), "ChecksumMismatch");
  EXPECT_FALSE(fs::exists(dir_ / "backend/images" / (bad + ".raw")));
  auto bad_ready = cluster_.kubectl(
      "get vmi " + bad + " -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}'");
  EXPECT_NE(bad_ready.output, "True");

  // A force re-import: one new Job for the token, the old one goes, the row is Ready again.
  auto before = jobsOf(good);
  ASSERT_EQ(before.size(), 1u);
  fs::remove(dir_ / "backend/images" / (good + ".raw"));
  auto annotated = cluster_.kubectl("annotate vmimage " + good + " banlieue.io/force-reimport=t1");
  ASSERT_EQ(annotated.exit_code, 0) << annotated.output;
  ASSERT_TRUE(LocalCluster::eventually(
      [&] {
        auto now = jobsOf(good);
        return now.size() == 1 && now[0] != before[0] &&
               fs::exists(dir_ / "backend/images" / (good + ".raw"));
      },
      240s))
      << diagnostics();
  ASSERT_TRUE(waitForRow(good, "Imported", &last)) << last << diagnostics();
  // Settled: the token was acted on once; removing it imports nothing again.
  auto settled = jobsOf(good);
  cluster_.kubectl("annotate vmimage " + good + " banlieue.io/force-reimport-");
  std::this_thread::sleep_for(3s);  // no event to wait for: nothing must happen
  EXPECT_EQ(jobsOf(good), settled);
}

}  // namespace
}  // namespace banlieue::testing
