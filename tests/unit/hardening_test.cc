// Small hardening fixes (issue #25, item 7), each a case that once failed: label values that
// would make every apply invalid, numbers from a backend that would be undefined behaviour to
// convert, a connection pool kept for good after every apiserver restart, names that changed
// which resource a request URL reaches, and YAML the emitter wrote but could not read back.
// Label `security`.
#include "host/api/yaml.h"
#include "host/kube/client.h"
#include "host/kube/discovery.h"
#include "host/kube/http_transport.h"
#include "host/roles/controller/infra_builder.h"
#include "plugins/proxmox/src/pve_client.h"

#include <banlieue/sdk/digest.h>

#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <regex>
#include <string>
#include <thread>
#include <vector>

namespace banlieue {
namespace {

// A label value: at most 63 characters, alphanumeric at both ends, '-', '_' and '.' between.
bool validLabelValue(const std::string& value) {
  static const std::regex kValue("^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$");
  return value.size() <= 63 && std::regex_match(value, kValue);
}

TEST(HardeningTest, AVmNameLongerThanALabelValueStillGivesAValidOwnedByLabel) {
  EXPECT_EQ(controller::ownedByLabelValue("web-1"), "web-1");
  const std::string long_name = std::string(60, 'a') + ".b-" + std::string(100, 'c');
  const std::string other = std::string(60, 'a') + ".b-" + std::string(100, 'd');
  const std::string value = controller::ownedByLabelValue(long_name);
  EXPECT_TRUE(validLabelValue(value)) << value;
  EXPECT_EQ(value, controller::ownedByLabelValue(long_name)) << "stable";
  EXPECT_NE(value, controller::ownedByLabelValue(other)) << "names sharing a prefix differ";
  // A cut that would end on '.' or '-' is trimmed back to an alphanumeric.
  const std::string dotted = std::string(45, 'x') + "." + std::string(40, 'y');
  EXPECT_TRUE(validLabelValue(controller::ownedByLabelValue(dotted)))
      << controller::ownedByLabelValue(dotted);
}

TEST(HardeningTest, ANumberOutOfRangeFromProxmoxIsTheFallbackNotUndefinedBehaviour) {
  rapidjson::Document doc;
  doc.Parse(R"({"huge":1e300,"negative":-1e300,"fine":42.0,"max":9223372036854775807})");
  EXPECT_EQ(proxmox::asInt(&doc["huge"], -1), -1);
  EXPECT_EQ(proxmox::asInt(&doc["negative"], -1), -1);
  EXPECT_EQ(proxmox::asInt(&doc["fine"], -1), 42);
  EXPECT_EQ(proxmox::asInt(&doc["max"], -1), 9223372036854775807LL);
}

// The one streaming digest of the SDK, which the host, libvirt and Proxmox use to check
// artifacts before they reach a backend: the standard test vectors, and refusal of any other
// algorithm (a checksum that cannot be checked fails closed).
TEST(HardeningTest, TheSdkDigestMatchesTheStandardVectorsAndRefusesOtherAlgorithms) {
  EXPECT_EQ(sdk::sha256Hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  sdk::Digest sha512("sha512");
  sha512.update("a");
  sha512.update("bc");  // streamed in pieces
  EXPECT_EQ(sha512.hex(),
            "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a"
            "2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f");
  EXPECT_EQ(sdk::Digest::hexLength("sha512"), 128u);
  EXPECT_FALSE(sdk::Digest::supported("md5"));
  EXPECT_THROW(sdk::Digest("md5"), std::invalid_argument);
}

// An HTTP/1.1 server on loopback that answers each connection's first request with 200 and
// keeps the connection open until restart(), which resets every open connection the way an
// apiserver that restarts does: the client's pooled keep-alive connections are then dead.
class RestartingServer {
 public:
  RestartingServer() : acceptor_(io_, {boost::asio::ip::address_v4::loopback(), 0}) {
    thread_ = std::thread([this] { serve(); });
  }
  ~RestartingServer() {
    stopping_ = true;
    boost::system::error_code ec;
    // Wake the blocked accept() with a connection of our own.
    boost::asio::ip::tcp::socket wake(io_);
    wake.connect(acceptor_.local_endpoint(), ec);
    thread_.join();
  }
  RestartingServer(const RestartingServer&) = delete;
  RestartingServer& operator=(const RestartingServer&) = delete;

  int port() const { return acceptor_.local_endpoint().port(); }

  void restart() {
    std::lock_guard lock(mutex_);
    for (auto& socket : open_) {
      boost::system::error_code ec;
      socket.set_option(boost::asio::socket_base::linger(true, 0), ec);  // RST, not FIN
      socket.close(ec);
    }
    open_.clear();
  }

 private:
  void serve() {
    while (!stopping_) {
      boost::asio::ip::tcp::socket socket(io_);
      boost::system::error_code ec;
      acceptor_.accept(socket, ec);
      if (ec || stopping_) return;
      boost::asio::streambuf request;
      boost::asio::read_until(socket, request, "\r\n\r\n", ec);
      if (ec) continue;
      static const std::string kResponse =
          "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
      // Kept before the answer is written: a restart() the client makes once it has the answer
      // must find this connection. (Kept after, a restart could miss it; the client then sent
      // its next request on it and waited 30 s for an answer this one-thread server never
      // reads: a flake seen in CI.)
      std::lock_guard lock(mutex_);
      open_.push_back(std::move(socket));
      boost::asio::write(open_.back(), boost::asio::buffer(kResponse), ec);
    }
  }

  boost::asio::io_context io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::atomic<bool> stopping_{false};
  std::mutex mutex_;
  std::vector<boost::asio::ip::tcp::socket> open_;
  std::thread thread_;
};

// After a restart a request cannot be written on a pooled connection; the transport sends it
// again through a new pool. The pool it replaced must go once no request uses it: kept, every
// restart of the apiserver left one more behind for the life of the process.
TEST(HardeningTest, APoolReplacedAfterAnApiserverRestartIsReleased) {
  RestartingServer server;
  const size_t before = kube::liveConnectionPools();
  {
    kube::Connection connection;
    connection.server = "http://127.0.0.1:" + std::to_string(server.port());
    auto transport = kube::makeHttpTransport(connection);
    ASSERT_TRUE(transport.ok()) << transport.status().message();
    kube::HttpRequest request;
    request.path = "/api/v1/namespaces";
    for (int restart = 0; restart < 8; ++restart) {
      auto response = (*transport)->send(request);
      ASSERT_TRUE(response.ok()) << response.status().message();
      EXPECT_EQ(response->status, 200);
      server.restart();
    }
    auto last = (*transport)->send(request);
    ASSERT_TRUE(last.ok()) << last.status().message();
    EXPECT_EQ(kube::liveConnectionPools() - before, 1u)
        << "one pool for the one timeout in use, whatever the number of restarts";
  }
  EXPECT_EQ(kube::liveConnectionPools(), before);
}

// Answers every request with 200 and an empty object, and keeps the paths asked for.
class RecordingKubeTransport final : public kube::HttpTransport {
 public:
  std::vector<std::string> paths;

  StatusOr<kube::HttpResponse> send(const kube::HttpRequest& request) override {
    paths.push_back(request.path);
    return kube::HttpResponse{200, {}, R"({"kind":"List","items":[]})"};
  }
  StatusOr<kube::HttpResponse> stream(const kube::HttpRequest& request,
                                      const std::function<bool(std::string_view)>&,
                                      const std::atomic<bool>*) override {
    paths.push_back(request.path);
    return kube::HttpResponse{200, {}, {}};
  }
};

// Names reach request paths from users' fields (a VM's references, an infra apiVersion), not
// only from the apiserver. Each path segment is percent-encoded, and a name no Kubernetes
// object can have ('/', '%', "." or "..", which the apiserver would read as other segments)
// is refused before any request, as client-go refuses it.
TEST(HardeningTest, NamesAreEscapedOrRefusedInKubernetesRequestPaths) {
  EXPECT_EQ(kube::resources::kConfigMap.path("team a", "web?x=1#top", "status"),
            "/api/v1/namespaces/team%20a/configmaps/web%3Fx%3D1%23top/status");

  auto owned = std::make_unique<RecordingKubeTransport>();
  RecordingKubeTransport& transport = *owned;
  auto client = kube::makeKubeClient(std::move(owned), {.qps = 0});
  ASSERT_TRUE(client->get(kube::resources::kConfigMap, "ns", "a b?c#d").ok());
  ASSERT_EQ(transport.paths.size(), 1u);
  EXPECT_EQ(transport.paths[0], "/api/v1/namespaces/ns/configmaps/a%20b%3Fc%23d");

  for (const std::string name : {"a/b", "50%", "..", "."}) {
    auto got = client->get(kube::resources::kConfigMap, "ns", name);
    ASSERT_FALSE(got.ok()) << name;
    EXPECT_EQ(got.status().reason(), "InvalidName") << name;
    EXPECT_EQ(client->remove(kube::resources::kConfigMap, "ns", name, {}).reason(), "InvalidName")
        << name;
  }
  EXPECT_EQ(client->list(kube::resources::kSecret, "../kube-system").status().reason(),
            "InvalidName");
  EXPECT_EQ(client->get(kube::resources::kPod, "ns", "p", "log/../exec").status().reason(),
            "InvalidName");
  EXPECT_EQ(kube::discoverKind(*client, "example.com/v1/../../../api/v1/secrets", "Kind")
                .status()
                .reason(),
            "KindInvalid");
  EXPECT_EQ(transport.paths.size(), 1u) << "a refused name sends nothing";
}

// Answers every Proxmox request with an empty task status, and keeps the targets.
class RecordingPveTransport final : public proxmox::HttpTransport {
 public:
  std::vector<std::string> targets;

  proxmox::HttpResponse send(const proxmox::HttpRequest& request,
                             std::chrono::milliseconds) override {
    targets.push_back(request.target);
    return {.status = 200,
            .reason = "OK",
            .body = R"({"data":{"status":"stopped","exitstatus":"OK"}})"};
  }
};

// Proxmox paths carry node names and UPIDs from users' specs and from PVE's answers: each is
// one path segment, including a name made only of dots.
TEST(HardeningTest, NamesAreOnePathSegmentInProxmoxRequests) {
  auto owned = std::make_unique<RecordingPveTransport>();
  RecordingPveTransport& transport = *owned;
  proxmox::PveCredentials credentials;
  credentials.token = "root@pam!t=secret";
  proxmox::PveClient client(std::move(owned), proxmox::Endpoint{"pve.example", "8006"},
                            std::move(credentials));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  EXPECT_TRUE(client.task("..", "UPID:a/b?c#d%e f", deadline).ok());
  ASSERT_EQ(transport.targets.size(), 1u);
  EXPECT_EQ(transport.targets[0],
            "/api2/json/nodes/%2E%2E/tasks/UPID%3Aa%2Fb%3Fc%23d%25e%20f/status");
}

// What the YAML emitter prints (crdgen, bootstrap --dry-run) reads back as the same document.
// A NUL is escaped as \u0000, six characters, so a key of 200 NULs (400 characters of YAML
// input) came out past the 1024 characters YAML allows an implicit key, and did not read back
// (found by fuzzing manifest_yaml).
TEST(HardeningTest, TheYamlEmitterRoundTripsKeysAndValuesHoldingNulBytes) {
  rapidjson::Document doc(rapidjson::kObjectType);
  auto& a = doc.GetAllocator();
  const std::string nul_key(200, '\0');
  const std::string long_key(2000, 'k');
  const std::string nul_value("a\0b", 3);
  rapidjson::Value nested(rapidjson::kObjectType);
  nested.AddMember("inner", rapidjson::Value(nul_value.data(), 3, a), a);
  rapidjson::Value list(rapidjson::kArrayType);
  list.PushBack(rapidjson::Value(nul_value.data(), 3, a), a).PushBack(1, a);
  doc.AddMember(rapidjson::Value(nul_key.data(), 200, a), rapidjson::Value(nul_value.data(), 3, a),
                a);
  doc.AddMember(rapidjson::Value(long_key.data(), 2000, a), nested, a);
  doc.AddMember(rapidjson::Value((long_key + "l").data(), 2001, a), list, a);
  auto yaml = api::toYaml(doc);
  ASSERT_TRUE(yaml.ok()) << yaml.status().message();
  auto back = api::parseYamlDocuments(*yaml, "emitted");
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_EQ(back->size(), 1u);
  EXPECT_TRUE((*back)[0] == doc);
  // A list under a long key, inside a list.
  rapidjson::Document items(rapidjson::kArrayType);
  items.PushBack(rapidjson::Value(doc, items.GetAllocator()), items.GetAllocator());
  auto listed = api::toYaml(items);
  ASSERT_TRUE(listed.ok()) << listed.status().message();
  auto listed_back = api::parseYamlDocuments(*listed, "emitted");
  ASSERT_TRUE(listed_back.ok()) << listed_back.status().message();
  EXPECT_TRUE((*listed_back)[0] == items);
}

// YAML holds Unicode text only: bytes that are not UTF-8 cannot be written so that a conforming
// reader (kubectl's) reads them back. The emitter refuses them, saying where they are, and the
// reader refuses them in its input (yaml-cpp passes them through).
TEST(HardeningTest, TheYamlEmitterAndReaderRefuseTextThatIsNotUtf8) {
  rapidjson::Document doc;
  doc.Parse(R"({"spec":{"names":["ok","x"],"description":"fine"}})");
  ASSERT_FALSE(doc.HasParseError());
  doc["spec"]["names"][1].SetString(
      "a\xff"
      "b",
      doc.GetAllocator());
  auto yaml = api::toYaml(doc);
  ASSERT_FALSE(yaml.ok()) << *yaml;
  EXPECT_EQ(yaml.status().reason(), "NotUtf8");
  EXPECT_NE(yaml.status().message().find("spec.names[1]"), std::string::npos)
      << yaml.status().message();
  std::vector<const rapidjson::Value*> stream{&doc};
  EXPECT_EQ(api::toYamlStream(stream).status().reason(), "NotUtf8");

  for (const std::string text : {"a: \"x\xffy\"\n", "a: x\xc0\xafy\n", "\"k\xed\xa0\x80\": v\n"}) {
    auto read = api::parseYamlDocuments(text, "in.yaml");
    ASSERT_FALSE(read.ok()) << text;
    EXPECT_NE(read.status().message().find("not UTF-8"), std::string::npos)
        << read.status().message();
  }
}

}  // namespace
}  // namespace banlieue
