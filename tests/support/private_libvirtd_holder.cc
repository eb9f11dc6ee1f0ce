// Starts a PrivateLibvirtd in the directory given and holds it until killed: the process whose
// death must take the daemon with it (tests/suite/private_libvirtd_test.cc), and a daemon to try
// things against by hand (bench/import_bench.sh). With a TLS address, holder.ready names the
// daemon's TLS URI; holder.uri always holds its unix-socket URI.
//   private_libvirtd_holder <dir> <pool> [<tls-address>]
#include "tests/support/private_libvirtd.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) {
    std::fprintf(stderr, "usage: private_libvirtd_holder <dir> <pool> [<tls-address>]\n");
    return 2;
  }
  banlieue::testing::PrivateLibvirtd libvirtd;
  std::string error;
  if (!libvirtd.start(argv[1], argv[2], &error, {.tls_address = argc == 4 ? argv[3] : ""})) {
    std::fprintf(stderr, "private_libvirtd_holder: %s\n", error.c_str());
    return 1;
  }
  std::ofstream(std::string(argv[1]) + "/holder.uri") << libvirtd.uri() << "\n";
  std::ofstream ready(std::string(argv[1]) + "/holder.ready");
  ready << "ready" << (libvirtd.tlsUri().empty() ? "" : " " + libvirtd.tlsUri()) << "\n";
  ready.close();
  for (;;) ::pause();
}
