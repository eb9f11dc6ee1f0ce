#include "plugins/proxmox/src/node_ssh.h"

#include <banlieue/sdk/status.h>
#include <fcntl.h>
#include <libssh2.h>
#include <libssh2_sftp.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <utility>
#include <vector>

namespace banlieue::proxmox {
namespace {

using sdk::Code;
using sdk::Error;

// Host key algorithms we accept, offered to the server in this order. No ssh-rsa: libssh2
// 1.10 only verifies SHA-1 RSA signatures, which current OpenSSH (and so PVE) refuses anyway.
constexpr const char* kHostKeyAlgorithms =
    "ssh-ed25519,ecdsa-sha2-nistp256,ecdsa-sha2-nistp384,ecdsa-sha2-nistp521";
constexpr size_t kBlock = size_t{256} * 1024;

void initOnce() {
  static std::once_flag once;
  // libssh2_init is not thread-safe and must run before any session exists.
  std::call_once(once, [] { (void)libssh2_init(0); });
}

void wipe(std::string& s) {
  volatile char* p = s.data();
  for (size_t i = 0; i < s.size(); ++i) p[i] = 0;
}

// A TCP connection within `timeout`, or SshConnectFailed.
int connectTcp(const std::string& host, int port, std::chrono::milliseconds timeout) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string where = host + ":" + std::to_string(port);
  if (int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found); rc != 0) {
    throw Error(Code::kUnavailable, "SshConnectFailed",
                "cannot resolve " + host + ": " + gai_strerror(rc));
  }
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> list(found, freeaddrinfo);
  std::string last = "no address";
  for (addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) continue;
    int flags = fcntl(fd, F_GETFL, 0);
    fcntl(fd, F_SETFL, flags | O_NONBLOCK);
    int rc = connect(fd, ai->ai_addr, ai->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      rc = poll(&p, 1, static_cast<int>(timeout.count()));
      if (rc == 1) {
        int error = 0;
        socklen_t len = sizeof error;
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len);
        rc = error == 0 ? 0 : -1;
        errno = error;
      } else {
        errno = rc == 0 ? ETIMEDOUT : errno;
        rc = -1;
      }
    }
    if (rc == 0) {
      fcntl(fd, F_SETFL, flags);  // libssh2 runs blocking, bounded by its own timeout
      return fd;
    }
    last = std::strerror(errno);
    close(fd);
  }
  throw Error(Code::kUnavailable, "SshConnectFailed", "cannot connect to " + where + ": " + last);
}

int knownHostKeyType(int hostkey_type) {
  switch (hostkey_type) {
    case LIBSSH2_HOSTKEY_TYPE_ED25519: return LIBSSH2_KNOWNHOST_KEY_ED25519;
    case LIBSSH2_HOSTKEY_TYPE_ECDSA_256: return LIBSSH2_KNOWNHOST_KEY_ECDSA_256;
    case LIBSSH2_HOSTKEY_TYPE_ECDSA_384: return LIBSSH2_KNOWNHOST_KEY_ECDSA_384;
    case LIBSSH2_HOSTKEY_TYPE_ECDSA_521: return LIBSSH2_KNOWNHOST_KEY_ECDSA_521;
    default: return 0;
  }
}

}  // namespace

SshSettings::~SshSettings() {
  wipe(private_key);
}

struct NodeSftp::Handles {
  int fd = -1;
  LIBSSH2_SESSION* session = nullptr;
  LIBSSH2_SFTP* sftp = nullptr;

  ~Handles() {
    if (sftp != nullptr) libssh2_sftp_shutdown(sftp);
    if (session != nullptr) {
      libssh2_session_disconnect(session, "banlieue: done");
      libssh2_session_free(session);
    }
    if (fd >= 0) close(fd);
  }

  std::string lastError() const {
    char* message = nullptr;
    int len = 0;
    libssh2_session_last_error(session, &message, &len, 0);
    std::string out = message != nullptr ? std::string(message, static_cast<size_t>(len)) : "";
    if (sftp != nullptr && libssh2_session_last_errno(session) == LIBSSH2_ERROR_SFTP_PROTOCOL) {
      out += " (SFTP status " + std::to_string(libssh2_sftp_last_error(sftp)) + ")";
    }
    return out;
  }
};

NodeSftp::NodeSftp(const std::string& host, const std::string& node_name,
                   const SshSettings& settings, std::chrono::milliseconds timeout)
    : handles_(std::make_unique<Handles>()),
      where_(settings.user + "@" + host + ":" + std::to_string(settings.port)) {
  initOnce();
  Handles& h = *handles_;
  h.fd = connectTcp(host, settings.port, timeout);
  h.session = libssh2_session_init();
  if (h.session == nullptr) throw Error(Code::kInternal, "SshFailed", "libssh2_session_init");
  libssh2_session_set_blocking(h.session, 1);
  libssh2_session_set_timeout(h.session, static_cast<long>(timeout.count()));
  libssh2_session_method_pref(h.session, LIBSSH2_METHOD_HOSTKEY, kHostKeyAlgorithms);
  if (libssh2_session_handshake(h.session, h.fd) != 0) {
    throw Error(Code::kUnavailable, "SshConnectFailed",
                "SSH handshake with " + where_ + " failed: " + h.lastError());
  }

  // The host key, checked against the pins before anything is sent under our identity.
  size_t key_len = 0;
  int key_type = 0;
  const char* key = libssh2_session_hostkey(h.session, &key_len, &key_type);
  int known_type = knownHostKeyType(key_type);
  if (key == nullptr || known_type == 0) {
    throw Error(Code::kFailedPrecondition, "HostKeyTypeRefused",
                "node " + node_name + " (" + where_ +
                    ") offered no ed25519 or ECDSA host key; only those can be pinned");
  }
  std::unique_ptr<LIBSSH2_KNOWNHOSTS, decltype(&libssh2_knownhost_free)> pins(
      libssh2_knownhost_init(h.session), libssh2_knownhost_free);
  std::istringstream lines(settings.known_hosts);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    // A line libssh2 cannot read (an rsa key, a typo) pins nothing; it is skipped.
    (void)libssh2_knownhost_readline(pins.get(), line.c_str(), line.size(),
                                     LIBSSH2_KNOWNHOST_FILE_OPENSSH);
  }
  const int mask = LIBSSH2_KNOWNHOST_TYPE_PLAIN | LIBSSH2_KNOWNHOST_KEYENC_RAW | known_type;
  int verdict = LIBSSH2_KNOWNHOST_CHECK_NOTFOUND;
  for (const std::string& name : {host, node_name}) {
    if (name.empty()) continue;
    int v = libssh2_knownhost_checkp(pins.get(), name.c_str(), settings.port, key, key_len, mask,
                                     nullptr);
    if (v == LIBSSH2_KNOWNHOST_CHECK_MATCH) {
      verdict = v;
      break;
    }
    if (v == LIBSSH2_KNOWNHOST_CHECK_MISMATCH) verdict = v;
  }
  if (verdict == LIBSSH2_KNOWNHOST_CHECK_MISMATCH) {
    throw Error(Code::kFailedPrecondition, "HostKeyMismatch",
                "the host key of node " + node_name + " (" + where_ +
                    ") does not match the key pinned in sshKnownHosts; refusing to connect "
                    "(a reinstalled node or a man in the middle: re-pin after checking)");
  }
  if (verdict != LIBSSH2_KNOWNHOST_CHECK_MATCH) {
    throw Error(Code::kFailedPrecondition, "HostKeyNotPinned",
                "sshKnownHosts pins no ed25519/ECDSA host key for node " + node_name + " (" +
                    where_ + "); add its line (ssh-keyscan -t ed25519, checked out of band)");
  }

  std::string private_key = settings.private_key;
  int rc = libssh2_userauth_publickey_frommemory(h.session, settings.user.c_str(),
                                                 settings.user.size(), nullptr, 0,
                                                 private_key.c_str(), private_key.size(), nullptr);
  wipe(private_key);
  if (rc != 0) {
    throw Error(Code::kUnauthenticated, "SshAuthFailed",
                "SSH key authentication as " + where_ + " failed: " + h.lastError());
  }
  h.sftp = libssh2_sftp_init(h.session);
  if (h.sftp == nullptr) {
    throw Error(Code::kUnavailable, "SftpFailed",
                "cannot start SFTP on " + where_ + ": " + h.lastError());
  }
}

NodeSftp::~NodeSftp() = default;

void NodeSftp::ensureDirectory(const std::string& remote_path) {
  LIBSSH2_SFTP_ATTRIBUTES attrs{};
  if (libssh2_sftp_stat_ex(handles_->sftp, remote_path.c_str(),
                           static_cast<unsigned>(remote_path.size()), LIBSSH2_SFTP_STAT,
                           &attrs) == 0) {
    return;
  }
  if (libssh2_sftp_mkdir_ex(handles_->sftp, remote_path.c_str(),
                            static_cast<unsigned>(remote_path.size()), 0755) != 0) {
    throw Error(Code::kUnavailable, "SftpFailed",
                "cannot create " + remote_path + " on " + where_ + ": " + handles_->lastError());
  }
}

void NodeSftp::remove(const std::string& remote_path) {
  if (libssh2_sftp_unlink_ex(handles_->sftp, remote_path.c_str(),
                             static_cast<unsigned>(remote_path.size())) == 0) {
    return;
  }
  if (libssh2_sftp_last_error(handles_->sftp) == LIBSSH2_FX_NO_SUCH_FILE) return;
  throw Error(Code::kUnavailable, "SftpFailed",
              "cannot remove " + remote_path + " on " + where_ + ": " + handles_->lastError());
}

namespace {

// Writes every block that `next` yields into `path`, then closes it.
template <class Next>
void writeFile(LIBSSH2_SFTP* sftp, const std::string& path, long mode, Next&& next,
               const std::function<std::string()>& error) {
  LIBSSH2_SFTP_HANDLE* file = libssh2_sftp_open_ex(
      sftp, path.c_str(), static_cast<unsigned>(path.size()),
      LIBSSH2_FXF_WRITE | LIBSSH2_FXF_CREAT | LIBSSH2_FXF_TRUNC, mode, LIBSSH2_SFTP_OPENFILE);
  if (file == nullptr) {
    throw Error(Code::kUnavailable, "SftpFailed", "cannot open " + path + ": " + error());
  }
  try {
    std::string_view block;
    while (next(block)) {
      while (!block.empty()) {
        ssize_t n = libssh2_sftp_write(file, block.data(), block.size());
        if (n <= 0) {
          throw Error(Code::kUnavailable, "SftpFailed", "writing " + path + ": " + error());
        }
        block.remove_prefix(static_cast<size_t>(n));
      }
    }
  } catch (...) {
    libssh2_sftp_close_handle(file);
    throw;
  }
  if (libssh2_sftp_close_handle(file) != 0) {
    throw Error(Code::kUnavailable, "SftpFailed", "closing " + path + ": " + error());
  }
}

}  // namespace

void NodeSftp::upload(const std::string& local_path, const std::string& remote_path,
                      const std::function<void(uint64_t)>& progress,
                      const std::function<bool()>& stop) {
  std::ifstream in(local_path, std::ios::binary);
  if (!in) {
    throw Error(Code::kFailedPrecondition, "ArtifactUnreadable", "cannot read " + local_path);
  }
  const std::string partial = remote_path + ".partial";
  std::vector<char> buffer(kBlock);
  uint64_t sent = 0;
  auto error = [this] { return handles_->lastError(); };
  try {
    writeFile(
        handles_->sftp, partial, 0640,
        [&](std::string_view& block) {
          if (stop && stop())
            throw Error(Code::kCancelled, "Cancelled", "the upload was cancelled");
          if (progress) progress(sent);
          in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
          if (in.bad()) {
            throw Error(Code::kFailedPrecondition, "ArtifactUnreadable",
                        "error reading " + local_path);
          }
          block = std::string_view(buffer.data(), static_cast<size_t>(in.gcount()));
          sent += block.size();
          return !block.empty();
        },
        error);
    if (progress) progress(sent);
    publish(partial, remote_path);
  } catch (...) {
    try {
      remove(partial);
    } catch (const Error&) {
      // The original failure is the one worth reporting.
    }
    throw;
  }
}

void NodeSftp::write(const std::string& remote_path, const std::string& content) {
  const std::string partial = remote_path + ".partial";
  bool done = false;
  try {
    writeFile(
        handles_->sftp, partial, 0640,
        [&](std::string_view& block) {
          block = content;
          return !std::exchange(done, true);
        },
        [this] { return handles_->lastError(); });
    publish(partial, remote_path);
  } catch (...) {
    try {
      remove(partial);
    } catch (const Error&) {
      // The original failure is the one worth reporting.
    }
    throw;
  }
}

void NodeSftp::publish(const std::string& partial, const std::string& remote_path) {
  // SFTP v3 rename refuses an existing target: the final name is cleared first.
  remove(remote_path);
  if (libssh2_sftp_rename_ex(handles_->sftp, partial.c_str(), static_cast<unsigned>(partial.size()),
                             remote_path.c_str(), static_cast<unsigned>(remote_path.size()),
                             LIBSSH2_SFTP_RENAME_OVERWRITE | LIBSSH2_SFTP_RENAME_ATOMIC |
                                 LIBSSH2_SFTP_RENAME_NATIVE) != 0) {
    throw Error(Code::kUnavailable, "SftpFailed",
                "renaming " + partial + " on " + where_ + ": " + handles_->lastError());
  }
}

}  // namespace banlieue::proxmox
