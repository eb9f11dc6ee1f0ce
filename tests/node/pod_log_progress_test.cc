// Import progress on the VMImage zone row (issue #22) reads the tail of a running import pod's
// log through the pods/log subresource: against the real apiserver, which fetches it from the
// real kubelet, the client's podLogTail returns the pod's output and the last progress line
// parses. Labels: integration;node;ux.
#include "host/roles/bootstrap/manifests.h"
#include "host/roles/images/import_progress.h"
#include "tests/support/local_cluster.h"

#include <gtest/gtest.h>

namespace banlieue::testing {
namespace {

TEST(PodLogProgressTest, APodsLogTailCarriesItsLastImportProgressLine) {
  LocalCluster& cluster = LocalCluster::shared();
  LocalCluster::TestNamespace ns(cluster);
  auto applied = cluster.apply(
      "apiVersion: v1\nkind: Pod\nmetadata: {name: importer, namespace: " + ns.name() +
      "}\nspec:\n  terminationGracePeriodSeconds: 1\n"
      "  securityContext: {runAsNonRoot: true, runAsUser: 65532}\n"
      "  containers:\n  - name: import\n    image: " +
      roles::bootstrap::defaultImage() +
      "\n    imagePullPolicy: Never\n    command: [/bin/sh, -c, 'echo import progress: "
      "phase=Verifying bytesDone=10 bytesTotal=10 percent=100; echo import progress: "
      "phase=Uploading bytesDone=5 bytesTotal=20 percent=25; echo working; exec sleep 3600']\n");
  ASSERT_EQ(applied.exit_code, 0) << applied.output;
  auto client = cluster.client();
  ASSERT_NE(client, nullptr);
  std::optional<roles::images::ImportProgress> progress;
  std::string tail;
  EXPECT_TRUE(LocalCluster::eventually(
      [&] {
        auto log = client->podLogTail(ns.name(), "importer", 20, 16384);
        tail = log.ok() ? *log : "<" + log.status().message() + ">";
        progress = roles::images::lastImportProgress(tail);
        return progress.has_value();
      },
      std::chrono::seconds(90)))
      << tail;
  ASSERT_TRUE(progress.has_value());
  EXPECT_EQ(progress->phase, "Uploading");
  EXPECT_EQ(progress->percent, 25);
  EXPECT_EQ(progress->bytes_done, 5u);
  EXPECT_EQ(progress->bytes_total, 20u);
  EXPECT_FALSE(client->podLogTail(ns.name(), "no-such-pod", 20, 16384).ok());
}

}  // namespace
}  // namespace banlieue::testing
