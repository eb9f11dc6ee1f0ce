#include "tests/vsphere/vcsim.h"

#include "tests/support/build_paths.h"

#include "tests/support/json_escape.h"
#include "tests/support/read_file.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace banlieue::vsphere::testing {
namespace {

using ::banlieue::testing::readFile;

pid_t spawn(const std::vector<std::string>& argv, int stdout_fd, int stderr_fd) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (stdout_fd >= 0) posix_spawn_file_actions_adddup2(&actions, stdout_fd, 1);
  if (stderr_fd >= 0) posix_spawn_file_actions_adddup2(&actions, stderr_fd, 2);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error("cannot start " + argv[0]);
  return pid;
}

using ::banlieue::testing::jsonEscape;

}  // namespace

void runOrThrow(const std::vector<std::string>& argv) {
  int devnull = open("/dev/null", O_WRONLY);
  pid_t pid = spawn(argv, devnull, devnull);
  close(devnull);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string cmd;
    for (const auto& a : argv) cmd += a + " ";
    throw std::runtime_error("command failed: " + cmd);
  }
}

Vcsim::Vcsim(std::vector<std::string> extra_args, std::string listen_address)
    : extra_args_(std::move(extra_args)), listen_address_(std::move(listen_address)) {
  char tmpl[] = "/tmp/banlieue-vcsim-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
  dir_ = tmpl;
  auto p = [&](const char* name) { return (dir_ / name).string(); };
  // A project CA, a server certificate for the listen address signed by it, and an unrelated
  // CA.
  for (const char* ca : {"ca", "other-ca"}) {
    runOrThrow({"openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                "-nodes", "-keyout", p(ca) + ".key", "-out", p(ca) + ".crt", "-days", "2", "-subj",
                std::string("/CN=banlieue-test-") + ca});
  }
  runOrThrow({"openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
              "-keyout", p("server.key"), "-out", p("server.csr"), "-subj",
              "/CN=" + listen_address_});
  std::ofstream(p("server.ext")) << "subjectAltName=IP:" << listen_address_
                                 << (listen_address_ == kLoopback ? ",DNS:localhost" : "") << "\n";
  runOrThrow({"openssl", "x509", "-req", "-in", p("server.csr"), "-CA", p("ca.crt"), "-CAkey",
              p("ca.key"), "-CAcreateserial", "-out", p("server.crt"), "-days", "2", "-extfile",
              p("server.ext")});
  start();
}

Vcsim::~Vcsim() {
  stop();
  // BANLIEUE_KEEP_VCSIM=1 keeps the certificates and vcsim.log for debugging.
  if (const char* keep = std::getenv("BANLIEUE_KEEP_VCSIM"); keep != nullptr && keep[0] == '1') {
    std::fprintf(stderr, "vcsim state kept in %s\n", dir_.c_str());
    return;
  }
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

void Vcsim::start() {
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error("pipe failed");
  std::vector<std::string> argv = {BANLIEUE_VCSIM_BINARY,
                                   "-l",
                                   listen_address_ + ":" + port_,
                                   "-tlscert",
                                   (dir_ / "server.crt").string(),
                                   "-tlskey",
                                   (dir_ / "server.key").string(),
                                   "-username",
                                   kUser,
                                   "-password",
                                   kPassword};
  argv.insert(argv.end(), extra_args_.begin(), extra_args_.end());
  int log = open((dir_ / "vcsim.log").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
  pid_ = spawn(argv, fds[1], log);
  close(fds[1]);
  close(log);
  // Wait for the "url=... pid=..." line the simulator prints once it listens.
  std::string line;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (line.find('\n') == std::string::npos) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    pollfd pfd{fds[0], POLLIN, 0};
    if (left <= 0 || poll(&pfd, 1, static_cast<int>(left)) <= 0) break;
    char buf[512];
    ssize_t n = read(fds[0], buf, sizeof(buf));
    if (n <= 0) break;
    line.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  auto at = line.find("url=");
  if (at == std::string::npos) {
    stop();
    throw std::runtime_error("vcsim did not start: " + readFile(dir_ / "vcsim.log"));
  }
  url_ = line.substr(at + 4, line.find(' ', at) - at - 4);
  auto colon = url_.rfind(':');
  port_ = url_.substr(colon + 1, url_.find('/', colon) - colon - 1);
}

void Vcsim::stop() {
  if (pid_ <= 0) return;
  kill(pid_, SIGTERM);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
}

std::string Vcsim::caPem() const {
  return readFile(dir_ / "ca.crt");
}

std::string Vcsim::otherCaPem() const {
  return readFile(dir_ / "other-ca.crt");
}

std::string Vcsim::providerConnection(const std::string& credentials_secret) const {
  return R"({"endpoint":")" + url_ + R"(","credentialsRef":{"name":")" +
         jsonEscape(credentials_secret) + R"("},"caBundle":{"inline":")" + jsonEscape(caPem()) +
         R"("}})";
}

std::string Vcsim::instanceConfig(const std::string& provider, const std::string& password,
                                  const std::string& ca_pem, bool insecure,
                                  const std::string& capabilities) const {
  std::string ca = ca_pem.empty() && !insecure ? caPem() : ca_pem;
  std::string connection = R"({"endpoint":")" + url_ + R"(","credentialsRef":{"name":"vc-creds"})";
  if (insecure) connection += R"(,"insecureSkipTLSVerify":true)";
  if (!ca.empty()) connection += R"(,"caBundle":{"data":")" + jsonEscape(ca) + R"("})";
  connection += "}";
  return R"({"provider":{"apiVersion":"banlieue.io/v1alpha1","kind":"Provider","metadata":{"name":")" +
         provider + R"(","namespace":"default","uid":"0b6f5a8e-1d2c-4e3f-8a9b-7c6d5e4f3a2b"},)" +
         R"("spec":{"providerClassRef":{"name":"vsphere"},"connection":)" + connection +
         R"(,"capabilities":)" + capabilities + R"(}},"credentials":{"username":")" + kUser +
         R"(","password":")" + jsonEscape(password) + R"("}})";
}

}  // namespace banlieue::vsphere::testing
