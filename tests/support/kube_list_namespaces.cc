// Lists namespaces once with banlieue's client and prints "ok" or the error, for tests whose
// request is meant to fail its TLS handshake:
//   kube_list_namespaces <kubeconfig> [--ca-file PEM] [--tls-server-name NAME]
// It runs as its own process and leaves with _exit() because cpprestsdk 2.10.18 can corrupt
// its heap after a failed handshake, which then aborts at exit (docs/adr/0004): a test must not
// fail for that, and a crash during the request itself still shows as a crash.
#include "host/kube/client.h"
#include "host/kube/config.h"
#include "host/kube/http_transport.h"

#include <unistd.h>

#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

int main(int argc, char** argv) {
  using namespace banlieue;
  if (argc < 2) {
    std::cerr << "usage: kube_list_namespaces <kubeconfig> [--ca-file PEM] [--tls-server-name N]\n";
    return 2;
  }
  auto connection = kube::loadKubeconfig({.files = {argv[1]}});
  if (!connection.ok()) {
    std::cout << connection.status().message() << std::endl;
    _exit(1);
  }
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--ca-file") {
      std::ifstream in(argv[i + 1]);
      std::stringstream pem;
      pem << in.rdbuf();
      connection->ca_pem = pem.str();
    } else if (flag == "--tls-server-name") {
      connection->tls_server_name = argv[i + 1];
    }
  }
  auto transport = kube::makeHttpTransport(*connection);
  if (!transport.ok()) {
    std::cout << transport.status().message() << std::endl;
    _exit(1);
  }
  auto client = kube::makeKubeClient(std::move(transport).value());
  auto listed = client->list(kube::resources::kNamespace, "");
  std::cout << (listed.ok() ? std::string("ok") : listed.status().message()) << std::endl;
  _exit(listed.ok() ? 0 : 1);
}
