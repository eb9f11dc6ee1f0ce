#include "tests/proxmox/fake_pve.h"

#include "tests/support/build_paths.h"

#include "plugins/proxmox/src/https.h"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <utility>
#include <vector>

extern char** environ;

namespace banlieue::proxmox::testing {

FakePve::FakePve(std::string listen_address) : address_(std::move(listen_address)) {
  char dir[] = "/tmp/banlieue-fake-pve-XXXXXX";
  if (mkdtemp(dir) == nullptr) throw std::runtime_error("mkdtemp failed");
  dir_ = dir;
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error("pipe failed");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  std::string script = BANLIEUE_FAKE_PVE_SCRIPT;
  std::vector<std::string> args = {"/usr/bin/python3", script,  "--port", "0", "--dir", dir_,
                                   "--address",        address_};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int rc = posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    throw std::runtime_error("cannot start /usr/bin/python3 " + script);
  }
  // "READY <port> <ca.pem>\n"; EOF first means the fake died (its stderr is the test's).
  std::string line;
  char c = 0;
  while (read(fds[0], &c, 1) == 1 && c != '\n') line += c;
  close(fds[0]);
  std::istringstream in(line);
  std::string ready, ca_path;
  in >> ready >> port_ >> ca_path;
  if (ready != "READY" || port_ == 0) {
    throw std::runtime_error("the fake PVE did not start (said '" + line + "')");
  }
  std::ifstream ca(ca_path);
  ca_pem_.assign(std::istreambuf_iterator<char>(ca), std::istreambuf_iterator<char>());
}

FakePve::~FakePve() {
  if (pid_ > 0) {
    kill(pid_, SIGTERM);
    int status = 0;
    waitpid(pid_, &status, 0);
  }
  if (!dir_.empty()) {
    std::string cmd = "rm -rf '" + dir_ + "'";
    (void)std::system(cmd.c_str());
  }
}

std::string FakePve::request(const std::string& method, const std::string& target) const {
  TlsOptions tls;
  tls.ca_bundle_pem = ca_pem_;
  auto transport = makeHttpsTransport(Endpoint::parse(url()), tls);
  HttpRequest r;
  r.method = method;
  r.target = target;
  HttpResponse response = transport->send(r, std::chrono::seconds(10));
  if (response.status != 200) {
    throw std::runtime_error(method + " " + target + ": " + std::to_string(response.status) + " " +
                             response.reason);
  }
  return response.body;
}

rapidjson::Document FakePve::state() const {
  rapidjson::Document doc = sdk::json::parse(request("GET", "/_fake/state"), "fake state");
  rapidjson::Document data;
  data.CopyFrom(doc["data"], data.GetAllocator());
  return data;
}

int FakePve::guestCount() const {
  rapidjson::Document s = state();
  int n = 0;
  for (const auto& vm : s["vms"].GetArray()) {
    if (vm["template"].GetInt() == 0) ++n;
  }
  return n;
}

void FakePve::fake(const std::string& path_and_query) const {
  (void)request("POST", "/_fake/" + path_and_query);
}

std::string FakePve::instanceConfig(const std::string& token_secret,
                                    const std::string& capabilities, bool with_ca,
                                    const std::string& extra_credentials) const {
  std::string connection = R"({"endpoint":")" + url() + R"(","credentialsRef":{"name":"pve"})";
  if (with_ca) connection += R"(,"caBundle":{"data":")" + jsonEscape(ca_pem_) + R"("})";
  connection += "}";
  return R"({"provider":{"apiVersion":"banlieue.io/v1alpha1","kind":"Provider","metadata":)"
         R"({"name":"pve","namespace":"default","uid":"7d2e4c1a-0b9f-4e3d-8c2b-1a0f9e8d7c6b"},)"
         R"("spec":{"providerClassRef":{"name":"proxmox"},"connection":)" +
         connection + R"(,"capabilities":)" + capabilities + R"(}},"credentials":{"username":")" +
         kUser + R"(","tokenValue":")" + jsonEscape(token_secret) + R"(")" + extra_credentials +
         "}}";
}

std::string FakePve::ticketConfig(const std::string& password,
                                  const std::string& capabilities) const {
  std::string config = instanceConfig(kSecret, capabilities);
  const std::string token_part =
      std::string(R"("username":")") + kUser + R"(","tokenValue":")" + kSecret + R"(")";
  config.replace(config.find(token_part), token_part.size(),
                 std::string(R"("username":")") + kPasswordUser + R"(","password":")" +
                     jsonEscape(password) + R"(")");
  return config;
}

}  // namespace banlieue::proxmox::testing
