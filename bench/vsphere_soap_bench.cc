// SOAP round trips of the vSphere plugin against the project's vcsim: per introspection of a
// small and a 3-datacenter, 6-cluster, ~200-VM inventory (the count must not grow with the
// VMs: PropertyCollector batching over a ContainerView) and per VSphereMachine create
// (reconcile driven to Ready) and delete. Prints one JSON object.
//   build/<preset>/bench/vsphere_soap_bench
#include "plugins/vsphere/src/errors.h"
#include "plugins/vsphere/src/inventory.h"
#include "plugins/vsphere/src/machine.h"
#include "tests/vsphere/vcsim.h"

#include <banlieue/sdk/json.h>

#include <chrono>
#include <cstdio>
#include <thread>

namespace {

using namespace banlieue::vsphere;
namespace sdk = banlieue::sdk;

std::unique_ptr<SoapClient> connect(const testing::Vcsim& vcsim) {
  Url url = Url::parse(vcsim.url());
  TlsOptions tls;
  tls.ca_bundle_pem = vcsim.caPem();
  Credentials creds;
  creds.username = testing::Vcsim::kUser;
  creds.password = testing::Vcsim::kPassword;
  auto client = std::make_unique<SoapClient>(makeHttpsTransport(url, tls), url, std::move(creds));
  client->connect(std::chrono::steady_clock::now() + std::chrono::seconds(30));
  return client;
}

struct IntrospectFigures {
  size_t vms = 0;
  size_t failure_domains = 0;
  uint64_t round_trips = 0;
  double ms = 0;
};

IntrospectFigures introspect(const std::vector<std::string>& flags) {
  testing::Vcsim vcsim(flags);
  auto client = connect(vcsim);
  Vim vim(*client);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  IntrospectFigures f;
  f.vms = vim.retrieveFromContainer(client->content(deadline).root_folder,
                                    {{"VirtualMachine", {"name"}}}, deadline)
              .objects.size();
  ProviderSpec spec;
  spec.name = "bench";
  uint64_t before = client->roundTrips();
  auto start = std::chrono::steady_clock::now();
  f.failure_domains = computeFailureDomains(Inventory::load(vim, deadline), spec).size();
  f.ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  f.round_trips = client->roundTrips() - before;
  return f;
}

// Drives reconcile or finalize to a final answer; returns the SOAP round trips it took.
uint64_t drive(SoapClient& client, MachineReconciler& machines, bool finalize,
               const std::string& object, int* calls) {
  uint64_t before = client.roundTrips();
  std::string token;
  for (*calls = 1; *calls < 500; ++*calls) {
    std::string request = R"({"object":)" + object +
                          (token.empty() ? "" : R"(,"operation":{"token":")" + token + "\"}") + "}";
    auto parsed = sdk::ReconcileRequest::parse("VSphereMachine", request);
    sdk::Reply reply;
    sdk::Call call(nullptr);
    sdk::Status s =
        finalize ? machines.finalize(call, parsed, reply) : machines.reconcile(call, parsed, reply);
    if (s.code() != sdk::Code::kInProgress) {
      if (!s.isOk())
        std::fprintf(stderr, "bench: %s: %s\n", s.reason().c_str(), s.message().c_str());
      break;
    }
    token = sdk::json::stringOr(&reply.body(), "operation.token");
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return client.roundTrips() - before;
}

}  // namespace

int main() {
  IntrospectFigures small = introspect({});
  IntrospectFigures large =
      introspect({"-dc", "3", "-cluster", "2", "-standalone-host", "0", "-vm", "34"});

  testing::Vcsim vcsim;
  auto client = connect(vcsim);
  Vim vim(*client);
  MachineReconciler machines(vim);
  const std::string object =
      R"({"apiVersion":"infrastructure.banlieue.io/v1alpha1","kind":"VSphereMachine",)"
      R"("metadata":{"name":"bench-vm","namespace":"default","uid":"5e5e5e5e-0000-4000-8000-000000000001"},)"
      R"("spec":{"template":"DC0_C0_RP0_VM0","datacenter":"DC0","cluster":"DC0_C0","datastore":"LocalDS_0",)"
      R"("numCpus":2,"memoryMiB":2048,"network":[{"portGroup":"VM Network"}],"userData":"#cloud-config\n"}})";
  int create_calls = 0, delete_calls = 0;
  uint64_t create = drive(*client, machines, false, object, &create_calls);
  uint64_t remove = drive(*client, machines, true, object, &delete_calls);

  std::printf(
      "{\"introspect\":{\"small\":{\"vms\":%zu,\"failureDomains\":%zu,\"soapCalls\":%llu,\"ms\":%."
      "1f},"
      "\"large\":{\"vms\":%zu,\"failureDomains\":%zu,\"soapCalls\":%llu,\"ms\":%.1f}},"
      "\"vmCreate\":{\"soapCalls\":%llu,\"pluginCalls\":%d},"
      "\"vmDelete\":{\"soapCalls\":%llu,\"pluginCalls\":%d},"
      "\"soap_calls_per_create\":%llu,\"soap_calls_per_delete\":%llu}\n",
      small.vms, small.failure_domains, static_cast<unsigned long long>(small.round_trips),
      small.ms, large.vms, large.failure_domains,
      static_cast<unsigned long long>(large.round_trips), large.ms,
      static_cast<unsigned long long>(create), create_calls,
      static_cast<unsigned long long>(remove), delete_calls,
      static_cast<unsigned long long>(create), static_cast<unsigned long long>(remove));
  return large.round_trips == small.round_trips ? 0 : 1;
}
