#include "tests/proxmox/sshd.h"

#include "tests/support/free_port.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

extern char** environ;

namespace banlieue::proxmox::testing {
namespace {

bool accepts(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  close(fd);
  return ok;
}

}  // namespace

std::string run(const std::string& command) {
  std::unique_ptr<FILE, decltype(&pclose)> pipe(popen((command + " 2>&1").c_str(), "r"), pclose);
  if (!pipe) throw std::runtime_error("cannot run " + command);
  std::string out;
  char buf[4096];
  size_t n = 0;
  while ((n = fread(buf, 1, sizeof buf, pipe.get())) > 0) out.append(buf, n);
  int status = pclose(pipe.release());
  if (status != 0) throw std::runtime_error(command + " failed: " + out);
  return out;
}

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

Sshd::Sshd() {
  char dir[] = "/tmp/banlieue-sshd-XXXXXX";
  if (mkdtemp(dir) == nullptr) throw std::runtime_error("mkdtemp failed");
  dir_ = dir;
  passwd* pw = getpwuid(geteuid());
  if (pw == nullptr) throw std::runtime_error("the test's user has no passwd entry");
  user_ = pw->pw_name;
  run("ssh-keygen -q -t ed25519 -N '' -C banlieue-test-host -f " + dir_ + "/host_ed25519");
  run("ssh-keygen -q -t ed25519 -N '' -C banlieue-test-client -f " + dir_ + "/client_ed25519");
  run("cp " + dir_ + "/client_ed25519.pub " + dir_ + "/authorized_keys");
  client_key_ = readFile(dir_ + "/client_ed25519");
  // Run as root, sshd needs its privilege separation directory; unprivileged it serves only
  // the user it runs as, which is the user the plugin logs in as here.
  if (geteuid() == 0) mkdir("/run/sshd", 0755);
  std::string log;
  for (int attempt = 0; attempt < 5; ++attempt) {
    port_ = banlieue::testing::freePort();
    if (port_ == 0) throw std::runtime_error("no free loopback port");
    std::ofstream(dir_ + "/sshd_config")
        << "Port " << port_ << "\nListenAddress 127.0.0.1\nHostKey " << dir_
        << "/host_ed25519\nPidFile " << dir_ << "/sshd.pid\nAuthorizedKeysFile " << dir_
        << "/authorized_keys\n"
           "StrictModes no\nPermitRootLogin prohibit-password\nPubkeyAuthentication yes\n"
           "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n"
           "Subsystem sftp internal-sftp\n";
    std::vector<std::string> args = {"/usr/sbin/sshd",      "-D", "-f",
                                     dir_ + "/sshd_config", "-E", dir_ + "/sshd.log"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (posix_spawn(&pid_, argv[0], nullptr, nullptr, argv.data(), environ) != 0) {
      throw std::runtime_error("cannot start /usr/sbin/sshd (package openssh-server)");
    }
    auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    bool up = false;
    int status = 0;
    while (std::chrono::steady_clock::now() < give_up) {
      if (waitpid(pid_, &status, WNOHANG) == pid_) break;  // died (a port race): try again
      if (accepts(port_)) {
        up = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (up) {
      known_hosts_ =
          "[127.0.0.1]:" + std::to_string(port_) + " " + readFile(dir_ + "/host_ed25519.pub");
      return;
    }
    kill(pid_, SIGTERM);
    waitpid(pid_, &status, 0);
    pid_ = -1;
    log = readFile(dir_ + "/sshd.log");
  }
  throw std::runtime_error("sshd did not come up: " + log);
}

Sshd::~Sshd() {
  if (pid_ > 0) {
    kill(pid_, SIGTERM);
    int status = 0;
    waitpid(pid_, &status, 0);
  }
  if (!dir_.empty()) (void)std::system(("rm -rf '" + dir_ + "'").c_str());
}

std::string Sshd::wrongKnownHosts() const {
  const std::string other = dir_ + "/other_ed25519";
  std::remove(other.c_str());
  std::remove((other + ".pub").c_str());
  run("ssh-keygen -q -t ed25519 -N '' -f " + other);
  return "[127.0.0.1]:" + std::to_string(port_) + " " + readFile(other + ".pub");
}

}  // namespace banlieue::proxmox::testing
