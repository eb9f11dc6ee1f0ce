// `banlieue imagebuilder` as a process against the real local apiserver, with the test standing
// in for kairos-operator: it installs a minimal OSArtifact CRD, advances the OSArtifact's
// status.phase, and writes the artifact file where the artifacts PVC would be mounted. Checks
// the merged cloud-config Secret, the OSArtifact the imagebuilder requests, the mirrored
// status.buildArtifact (phase, file, pvcRef, checksum) with field manager
// banlieue.io/imagebuilder, that a perProvider row written by another manager survives, that a
// cloudConfigs type clash and a kairos Error become Failed with their reasons, and that
// deleting the VMImage collects its OSArtifact. Labels: integration;images.
#include "host/common/base64.h"
#include "host/kube/api_error.h"
#include "host/roles/images/artifact_checksum.h"
#include "host/roles/images/os_artifact.h"
#include "tests/support/background_process.h"
#include "tests/support/build_paths.h"
#include "tests/support/local_cluster.h"

#include <banlieue/sdk/json.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <iostream>
#include <regex>
#include <thread>

namespace banlieue::roles::images {
namespace {

namespace fs = std::filesystem;
namespace json = sdk::json;
using testing::BackgroundProcess;
using ::testing::HasSubstr;
using testing::LocalCluster;
using ::testing::Not;
using testing::runCommand;
using namespace std::chrono_literals;

const kube::ResourceType kVMImages{"banlieue.io", "v1alpha1", "vmimages", false};
const kube::ResourceType kOsArtifacts{"build.kairos.io", "v1alpha2", "osartifacts", true};

class ImageBuilderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cluster_ = &LocalCluster::shared();
    client_ = cluster_->client();
    ASSERT_NE(client_, nullptr);
    auto crd =
        cluster_->kubectl(std::string("apply -f ") + IMAGES_TEST_DIR + "/osartifact-crd.yaml");
    ASSERT_EQ(crd.exit_code, 0) << crd.output;
    ASSERT_TRUE(LocalCluster::eventually([&] {
      return cluster_->kubectl("get osartifacts -A").exit_code == 0;
    })) << "the OSArtifact CRD was not served";
    ns_ = std::make_unique<LocalCluster::TestNamespace>(*cluster_);
    root_ = fs::temp_directory_path() / ("banlieue-artifacts-" + ns_->name());
    fs::create_directories(root_);
  }

  void TearDown() override {
    if (builder_) builder_->terminate();
    for (const auto& name : images_) (void)client_->remove(kVMImages, "", name);
    std::error_code ec;
    if (HasFailure()) {
      std::cerr << "imagebuilder log and artifacts kept in " << root_ << "\n";
    } else {
      fs::remove_all(root_, ec);
    }
  }

  std::string image(const std::string& suffix) {
    std::string name = ns_->name() + "-" + suffix;
    images_.push_back(name);
    return name;
  }

  void secret(const std::string& name, const std::string& key, const std::string& yaml) {
    auto created = client_->create(kube::resources::kSecret, ns_->name(),
                                   R"({"apiVersion":"v1","kind":"Secret","metadata":{"name":")" +
                                       name + R"("},"data":{")" + key + R"(":")" +
                                       common::encodeBase64(yaml) + R"("}})");
    ASSERT_TRUE(created.ok()) << created.status().message();
  }

  // health_port -1: no health endpoints; 0: any free port (healthPort() reads it).
  void startBuilder(std::vector<std::string> extra = {}, const std::string& health_port = "-1") {
    std::vector<std::string> argv{BANLIEUE_BINARY,
                                  "--log-level",
                                  "debug",
                                  "imagebuilder",
                                  "--kubeconfig",
                                  cluster_->kubeconfig().string(),
                                  "--health-port",
                                  health_port,
                                  "--metrics-port",
                                  "-1",
                                  "--build-namespace",
                                  ns_->name(),
                                  "--leader-election-namespace",
                                  ns_->name(),
                                  "--artifacts-root",
                                  root_.string()};
    argv.insert(argv.end(), extra.begin(), extra.end());
    builder_ = std::make_unique<BackgroundProcess>(argv);
  }

  // The port of the builder's health endpoints (started with --health-port 0).
  int healthPort() {
    int port = -1;
    LocalCluster::eventually([&] {
      std::smatch m;
      std::string out = builderLog();
      if (!std::regex_search(out, m, std::regex(R"(health endpoints on [^:\s]+:(\d+))"))) {
        return false;
      }
      port = std::stoi(m[1]);
      return true;
    });
    return port;
  }

  std::string buildField(const std::string& image_name, const std::string& field) {
    auto got = client_->get(kVMImages, "", image_name);
    if (!got.ok()) return "<" + got.status().reason() + ">";
    return json::stringOr(&*got, "status.buildArtifact." + field);
  }

  void setPhase(const std::string& os_artifact, const std::string& phase,
                const std::string& message = "") {
    // Empty strings are left out: this apiserver build stores "" as null (then fails the schema).
    std::string body = R"({"status":{"phase":")" + phase + "\"";
    if (!message.empty()) body += R"(,"message":")" + message + "\"";
    body += "}}";
    auto patched = client_->patch(kOsArtifacts, ns_->name(), os_artifact, kube::PatchType::kMerge,
                                  body, "status");
    ASSERT_TRUE(patched.ok()) << patched.status().message();
  }

  std::string builderLog() { return builder_ ? builder_->output() : std::string(); }

  LocalCluster* cluster_ = nullptr;
  std::unique_ptr<kube::KubeClient> client_;
  std::unique_ptr<LocalCluster::TestNamespace> ns_;
  std::unique_ptr<BackgroundProcess> builder_;
  std::vector<std::string> images_;
  fs::path root_;
};

// Without kairos-operator (the quickstart), the imagebuilder is Ready, says once in its log and
// on each Url VMImage that the OSArtifact API is missing, and builds once the API appears
// (issue #27).
TEST_F(ImageBuilderTest, WithoutTheOsArtifactApiItIsReadySaysWhyAndBuildsOnceItAppears) {
  auto removed = cluster_->kubectl("delete crd osartifacts.build.kairos.io --wait=true", 90s);
  ASSERT_EQ(removed.exit_code, 0) << removed.output;
  ASSERT_TRUE(LocalCluster::eventually(
      [&] { return cluster_->kubectl("get osartifacts -A").exit_code != 0; }));
  std::string url = image("url");
  ASSERT_EQ(cluster_
                ->apply(R"(apiVersion: banlieue.io/v1alpha1
kind: VMImage
metadata:
  name: )" + url + R"(
spec:
  sources:
  - {providerClass: libvirt, kind: Url, ref: unused, importFrom: quay.io/kairos/ubuntu:1}
)")
                .exit_code,
            0);
  startBuilder({"--api-poll-seconds", "1"}, "0");
  EXPECT_TRUE(LocalCluster::eventually([&] {
    return buildField(url, "reason") == "BuildUnavailable";
  })) << builderLog();
  EXPECT_THAT(buildField(url, "message"), HasSubstr("kairos-operator"));
  EXPECT_EQ(buildField(url, "phase"), "Pending");
  const int port = healthPort();
  ASSERT_GT(port, 0) << builderLog();
  const std::string readyz =
      "curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:" + std::to_string(port) + "/readyz";
  EXPECT_TRUE(LocalCluster::eventually([&] { return runCommand(readyz).output == "200"; }))
      << "not Ready without the OSArtifact API" << builderLog();
  std::this_thread::sleep_for(3s);  // several looks for the API
  const std::string log = builderLog();
  size_t said = 0;
  for (size_t at = log.find("is not served by this cluster"); at != std::string::npos;
       at = log.find("is not served by this cluster", at + 1)) {
    ++said;
  }
  EXPECT_EQ(said, 1u) << "said once, not on every retry: " << log;
  // A 404 as the client or the apiserver words it; not the digits inside a port (CI saw the
  // health port 40459 fail a plain substring check) or a timestamp's milliseconds.
  EXPECT_FALSE(std::regex_search(log, std::regex(R"([^0-9.:]404([^0-9]|$))"))) << log;
  EXPECT_THAT(log, Not(HasSubstr("could not find the requested resource"))) << log;

  // kairos-operator installed: the image is built without a restart.
  auto crd = cluster_->kubectl(std::string("apply -f ") + IMAGES_TEST_DIR + "/osartifact-crd.yaml");
  ASSERT_EQ(crd.exit_code, 0) << crd.output;
  EXPECT_TRUE(LocalCluster::eventually(
      [&] {
        return !buildField(url, "osArtifactRef").empty() &&
               buildField(url, "reason") != "BuildUnavailable";
      },
      60s))
      << builderLog();
}

TEST_F(ImageBuilderTest, BuildsMergesMirrorsAndNeverTouchesPerProvider) {
  secret("base", "cloud-config.yaml",
         "#cloud-config\ninstall:\n  poweroff: false\nusers:\n- name: kairos\n  groups: [admin]\n");
  secret("site", "extra.yaml", "install:\n  poweroff: true\nusers:\n- name: ops\n");
  secret("clash", "cloud-config.yaml", "users:\n  name: not-a-list\n");

  std::string iso = image("iso");
  ASSERT_EQ(cluster_
                ->apply(R"(apiVersion: banlieue.io/v1alpha1
kind: VMImage
metadata:
  name: )" + iso + R"(
spec:
  osDistribution: ubuntu
  osVersion: "24.04"
  sources:
  - providerClass: vsphere
    kind: Url
    ref: unused
    importFrom: quay.io/kairos/ubuntu:24.04-core-amd64-generic-v3.5.0
  cloudConfigs:
  - secretRef: {name: base}
  - secretRef: {name: site, key: extra.yaml}
)")
                .exit_code,
            0);
  // A row another writer (a provider runtime) already owns.
  auto row = client_->apply(
      kVMImages, "", iso,
      R"({"apiVersion":"banlieue.io/v1alpha1","kind":"VMImage","metadata":{"name":")" + iso +
          R"("},"status":{"perProvider":[{"providerName":"vc1","providerNamespace":"infra","ready":false,"reason":"BuildPending"}]}})",
      {.field_manager = "banlieue.io/provider-vsphere", .force = true, .subresource = "status"});
  ASSERT_TRUE(row.ok()) << row.status().message();

  std::string clash = image("clash");
  ASSERT_EQ(cluster_
                ->apply(R"(apiVersion: banlieue.io/v1alpha1
kind: VMImage
metadata:
  name: )" + clash + R"(
spec:
  sources:
  - {providerClass: vsphere, kind: Url, ref: unused, importFrom: quay.io/kairos/ubuntu:1}
  cloudConfigs:
  - secretRef: {name: base}
  - secretRef: {name: clash}
)")
                .exit_code,
            0);
  std::string raw = image("raw");
  ASSERT_EQ(cluster_
                ->apply(R"(apiVersion: banlieue.io/v1alpha1
kind: VMImage
metadata:
  name: )" + raw + R"(
spec:
  sources:
  - {providerClass: libvirt, kind: Url, ref: unused, importFrom: quay.io/kairos/ubuntu:1}
)")
                .exit_code,
            0);

  startBuilder();

  // The build request: an ISO with the merged cloud-config, owned by the VMImage.
  std::string osa = iso + "-build";
  ASSERT_TRUE(LocalCluster::eventually([&] { return buildField(iso, "phase") == "Pending"; }))
      << buildField(iso, "phase") << "\n"
      << builderLog();
  auto artifact = client_->get(kOsArtifacts, ns_->name(), osa);
  ASSERT_TRUE(artifact.ok()) << artifact.status().message();
  EXPECT_TRUE(json::boolean(&*artifact, "spec.artifacts.iso"));
  EXPECT_EQ(json::stringOr(&*artifact, "spec.image.ref"),
            "quay.io/kairos/ubuntu:24.04-core-amd64-generic-v3.5.0");
  EXPECT_EQ(json::stringOr(&*artifact, "spec.artifacts.cloudConfigRef.name"),
            iso + "-cloud-config-merged");
  EXPECT_EQ(json::stringOr(&(*artifact)["metadata"]["ownerReferences"][0], "kind"), "VMImage");
  auto merged = client_->get(kube::resources::kSecret, ns_->name(), iso + "-cloud-config-merged");
  ASSERT_TRUE(merged.ok()) << merged.status().message();
  auto text = common::decodeBase64(merged.value()["data"]["cloud-config.yaml"].GetString());
  ASSERT_TRUE(text.has_value());
  EXPECT_THAT(*text, HasSubstr("#cloud-config"));
  EXPECT_THAT(*text, HasSubstr("name: kairos"));
  EXPECT_THAT(*text, HasSubstr("name: ops"));
  EXPECT_THAT(*text, HasSubstr("poweroff: true"));

  // The libvirt image asks for a raw cloud image, without a cloud-config.
  ASSERT_TRUE(LocalCluster::eventually(
      [&] { return client_->get(kOsArtifacts, ns_->name(), raw + "-build").ok(); }));
  auto raw_artifact = client_->get(kOsArtifacts, ns_->name(), raw + "-build");
  EXPECT_TRUE(json::boolean(&*raw_artifact, "spec.artifacts.cloudImage"));
  EXPECT_FALSE(json::boolean(&*raw_artifact, "spec.artifacts.iso"));
  EXPECT_EQ(json::find(&*raw_artifact, "spec.artifacts.cloudConfigRef"), nullptr);

  // A clash between cloudConfigs layers fails the build with a reason, and requests nothing.
  ASSERT_TRUE(LocalCluster::eventually([&] { return buildField(clash, "phase") == "Failed"; }))
      << builderLog();
  EXPECT_EQ(buildField(clash, "reason"), "CloudConfigConflict");
  EXPECT_THAT(buildField(clash, "message"), HasSubstr("'users'"));
  EXPECT_TRUE(kube::isNotFound(client_->get(kOsArtifacts, ns_->name(), clash + "-build").status()));

  // kairos-operator's part: Building, then the file on the volume and Ready.
  setPhase(osa, "Building");
  ASSERT_TRUE(LocalCluster::eventually([&] { return buildField(iso, "phase") == "Building"; }));
  setPhase(osa, "Exporting");
  fs::path file = root_ / (osa + "-artifacts") / (osa + ".iso");
  fs::create_directories(file.parent_path());
  {
    std::ofstream out(file, std::ios::binary);
    for (int i = 0; i < 4096; ++i) out << "kairos iso block " << i << "\n";
  }
  auto sha = fileDigest(file, "sha256");
  ASSERT_TRUE(sha.ok());
  setPhase(osa, "Ready");
  ASSERT_TRUE(LocalCluster::eventually([&] { return buildField(iso, "phase") == "Ready"; }))
      << builderLog();
  EXPECT_EQ(buildField(iso, "kind"), "iso");
  EXPECT_EQ(buildField(iso, "file"), osa + ".iso");
  EXPECT_EQ(buildField(iso, "pvcRef"), osa + "-artifacts");
  EXPECT_EQ(buildField(iso, "osArtifactRef"), osa);
  EXPECT_EQ(buildField(iso, "checksum"), "sha256:" + *sha);
  EXPECT_EQ(buildField(iso, "reason"), "Reconciled");

  // The provider's row is intact, and buildArtifact belongs to the imagebuilder's manager.
  auto got = client_->get(kVMImages, "", iso);
  ASSERT_TRUE(got.ok());
  const auto* rows = json::find(&*got, "status.perProvider");
  ASSERT_NE(rows, nullptr);
  ASSERT_EQ(rows->Size(), 1u);
  EXPECT_EQ(json::stringOr(&(*rows)[0], "reason"), "BuildPending");
  bool imagebuilder_owns = false;
  for (const auto& m : (*got)["metadata"]["managedFields"].GetArray()) {
    std::string fields = json::serialize(m["fieldsV1"]);
    if (json::stringOr(&m, "manager") == "banlieue.io/imagebuilder") {
      imagebuilder_owns = fields.find("f:buildArtifact") != std::string::npos;
      EXPECT_EQ(fields.find("f:perProvider"), std::string::npos) << fields;
    }
  }
  EXPECT_TRUE(imagebuilder_owns);

  // kairos reports an error on the raw build.
  setPhase(raw + "-build", "Error", "exporter job failed: no space left");
  ASSERT_TRUE(LocalCluster::eventually([&] { return buildField(raw, "phase") == "Failed"; }));
  EXPECT_EQ(buildField(raw, "reason"), "BuildFailed");
  EXPECT_EQ(buildField(raw, "message"), "exporter job failed: no space left");

  // A changed source replaces the immutable OSArtifact with a new one.
  std::string old_uid = json::stringOr(&*artifact, "metadata.uid");
  ASSERT_EQ(cluster_
                ->kubectl("patch vmimage " + iso +
                          " --type=json -p '[{\"op\":\"replace\",\"path\":\"/spec/sources/0/"
                          "importFrom\",\"value\":\"quay.io/kairos/ubuntu:2\"}]'")
                .exit_code,
            0);
  ASSERT_TRUE(LocalCluster::eventually([&] {
    auto now = client_->get(kOsArtifacts, ns_->name(), osa);
    return now.ok() && json::stringOr(&*now, "metadata.uid") != old_uid &&
           json::stringOr(&*now, "spec.image.ref") == "quay.io/kairos/ubuntu:2";
  })) << builderLog();
  ASSERT_TRUE(LocalCluster::eventually([&] { return buildField(iso, "phase") == "Pending"; }));
  EXPECT_EQ(buildField(iso, "checksum"), "");

  // Deleting the VMImage collects its OSArtifact and merged Secret (owner references).
  ASSERT_EQ(cluster_->kubectl("delete vmimage " + iso).exit_code, 0);
  EXPECT_TRUE(LocalCluster::eventually(
      [&] { return kube::isNotFound(client_->get(kOsArtifacts, ns_->name(), osa).status()); },
      std::chrono::seconds(60)));

  EXPECT_EQ(builder_->terminate(), 0) << builderLog();
}

// isoOverlay and trustedBoot reach kairos-operator as specified, and what cannot be built says
// why on the image before anything is asked of kairos (issue #27): a Secret without a declared
// key, and both set at once. The imagebuilder reads key names only.
TEST_F(ImageBuilderTest, OverlayAndTrustedBootAreRequestedOrRefusedWithAReason) {
  secret("extras", "motd", "welcome\n");
  std::string keys_yaml;
  for (const auto& key : trustedBootKeyNames()) {
    keys_yaml += "  " + key + ": " + common::encodeBase64("not-a-real-key") + "\n";
  }
  ASSERT_EQ(cluster_
                ->apply("apiVersion: v1\nkind: Secret\nmetadata: {name: sb-keys, namespace: " +
                        ns_->name() + "}\ndata:\n" + keys_yaml)
                .exit_code,
            0);
  auto vmimage = [&](const std::string& name, const std::string& extra) {
    return cluster_->apply(R"(apiVersion: banlieue.io/v1alpha1
kind: VMImage
metadata: {name: )" + name +
                           R"(}
spec:
  sources:
  - {providerClass: vsphere, kind: Url, ref: unused, importFrom: quay.io/kairos/ubuntu:1}
)" + extra);
  };
  std::string overlay = image("overlay");
  std::string missing = image("missing-key");
  std::string uki = image("uki");
  std::string both = image("both");
  ASSERT_EQ(vmimage(overlay,
                    "  isoOverlay:\n    secretRef: {name: extras}\n"
                    "    files: [{key: motd, path: /etc/motd}]\n")
                .exit_code,
            0);
  ASSERT_EQ(vmimage(missing,
                    "  isoOverlay:\n    secretRef: {name: extras}\n"
                    "    files: [{key: motd, path: /etc/motd}, {key: ca.pem, path: "
                    "/etc/ssl/ca.pem}]\n")
                .exit_code,
            0);
  ASSERT_EQ(vmimage(uki, "  trustedBoot: {secretRef: {name: sb-keys}}\n").exit_code, 0);
  ASSERT_EQ(vmimage(both,
                    "  trustedBoot: {secretRef: {name: sb-keys}}\n"
                    "  isoOverlay: {secretRef: {name: extras}}\n")
                .exit_code,
            0);
  startBuilder();

  auto osa = [&](const std::string& image_name) -> std::unique_ptr<rapidjson::Document> {
    auto got = client_->get(kOsArtifacts, ns_->name(), image_name + "-build");
    return got.ok() ? std::make_unique<rapidjson::Document>(std::move(*got)) : nullptr;
  };
  ASSERT_TRUE(LocalCluster::eventually([&] { return osa(overlay) && osa(uki); })) << builderLog();
  auto overlay_osa = osa(overlay);
  EXPECT_EQ(json::stringOr(overlay_osa.get(), "spec.artifacts.overlayISOVolume"), "iso-overlay");
  EXPECT_EQ(json::stringOr(&(*overlay_osa)["spec"]["volumes"][0], "secret.secretName"), "extras");
  EXPECT_EQ(json::stringOr(&(*overlay_osa)["spec"]["importers"][0], "name"),
            "iso-overlay-materialize");
  auto uki_osa = osa(uki);
  EXPECT_TRUE(json::boolean(uki_osa.get(), "spec.artifacts.uki.iso"));
  EXPECT_EQ(json::stringOr(uki_osa.get(), "spec.artifacts.uki.keysVolume"), "trusted-boot-keys");
  EXPECT_FALSE(json::boolean(uki_osa.get(), "spec.artifacts.iso"));

  EXPECT_TRUE(LocalCluster::eventually([&] {
    return buildField(missing, "reason") == "IsoOverlayUnavailable";
  })) << builderLog();
  EXPECT_THAT(buildField(missing, "message"), HasSubstr("has no key ca.pem"));
  EXPECT_EQ(buildField(missing, "phase"), "Failed");
  EXPECT_EQ(osa(missing), nullptr) << "nothing is asked of kairos for a build that cannot work";
  EXPECT_TRUE(LocalCluster::eventually([&] {
    return buildField(both, "reason") == "TrustedBootWithIsoOverlay";
  })) << builderLog();
  EXPECT_EQ(osa(both), nullptr);
  // Key names only: no value of either Secret appears in what the imagebuilder says.
  EXPECT_THAT(builderLog(), Not(HasSubstr("welcome")));
  EXPECT_THAT(builderLog(), Not(HasSubstr(common::encodeBase64("not-a-real-key"))));
}

}  // namespace
}  // namespace banlieue::roles::images
