// The node agent's container log endpoint: request parsing, tailing and the pod directory
// lookup (the TLS server itself is exercised through `kubectl logs` in the integration tier).
#include "host/roles/devnode/log_server.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace banlieue::roles::devnode {
namespace {

namespace fs = std::filesystem;

TEST(LogRequestTest, ParsesThePathAndTheQueryKubectlSends) {
  auto r = parseLogRequest("/containerLogs/ns1/pod-a/provider?follow=true&tailLines=10");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->ns, "ns1");
  EXPECT_EQ(r->pod, "pod-a");
  EXPECT_EQ(r->container, "provider");
  EXPECT_TRUE(r->follow);
  EXPECT_EQ(r->tail_lines, 10);
  EXPECT_FALSE(r->limit_bytes.has_value());

  auto plain = parseLogRequest("/containerLogs/ns1/pod-a/c?limitBytes=5&timestamps=true");
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->follow);
  EXPECT_EQ(plain->limit_bytes, 5);
}

TEST(LogRequestTest, RefusesOtherPathsBadCountsAndPreviousContainers) {
  EXPECT_EQ(parseLogRequest("/exec/ns/pod/c").status().code(), Code::kNotFound);
  EXPECT_EQ(parseLogRequest("/containerLogs/ns/pod").status().code(), Code::kNotFound);
  EXPECT_EQ(parseLogRequest("/containerLogs/ns/pod/c/extra").status().code(), Code::kNotFound);
  EXPECT_EQ(parseLogRequest("/containerLogs/../pod/c").status().code(), Code::kNotFound);
  EXPECT_EQ(parseLogRequest("/containerLogs/ns/pod/c?tailLines=-1").status().code(),
            Code::kInvalidArgument);
  EXPECT_EQ(parseLogRequest("/containerLogs/ns/pod/c?tailLines=x").status().code(),
            Code::kInvalidArgument);
  EXPECT_EQ(parseLogRequest("/containerLogs/ns/pod/c?previous=true").status().code(),
            Code::kInvalidArgument);
}

TEST(LogRequestTest, LastLinesCountsLinesNotTheTrailingNewline) {
  EXPECT_EQ(lastLines("a\nb\nc\n", 2), "b\nc\n");
  EXPECT_EQ(lastLines("a\nb\nc", 2), "b\nc");
  EXPECT_EQ(lastLines("a\nb\nc\n", 10), "a\nb\nc\n");
  EXPECT_EQ(lastLines("a\nb\nc\n", 0), "");
  EXPECT_EQ(lastLines("", 3), "");
}

TEST(LogRequestTest, FindsTheContainersLogOnlyInThatPodsDirectory) {
  fs::path pods = fs::temp_directory_path() / ("banlieue-logs-test-" + std::to_string(::getpid()));
  fs::create_directories(pods / "ns_web_uid-1");
  fs::create_directories(pods / "ns_web_extra_uid-2");  // not pod "web": another name
  std::ofstream(pods / "ns_web_uid-1" / "app.log") << "hello\n";
  std::ofstream(pods / "ns_web_extra_uid-2" / "app.log") << "other\n";

  LogRequest request{"ns", "web", "app"};
  auto found = findContainerLog(pods, request);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(*found, pods / "ns_web_uid-1" / "app.log");
  request.container = "sidecar";
  EXPECT_FALSE(findContainerLog(pods, request).has_value());
  request = {"other", "web", "app"};
  EXPECT_FALSE(findContainerLog(pods, request).has_value());
  EXPECT_FALSE(findContainerLog(pods / "missing", request).has_value());
  fs::remove_all(pods);
}

}  // namespace
}  // namespace banlieue::roles::devnode
