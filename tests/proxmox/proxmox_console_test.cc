// The serial console of a Proxmox guest (issue #20, ABI 1.3's console slots) against the fake
// PVE API: the plugin opens a termproxy session on serial0, a websocket to vncwebsocket with
// its own API credentials, authenticates with the session's user and ticket and speaks PVE's
// xterm.js framing. Behind the fake's termproxy a scripted serial line stands in for the guest
// (a login prompt, an echo, and the lines it received recorded in the guest's state).
#include "plugins/proxmox/src/https.h"
#include "plugins/proxmox/src/pve_client.h"
#include "tests/proxmox/proxmox_fixture.h"

#include <banlieue/sdk/json.h>
#include <banlieue/sdk/testing/fake_host.h>
#include <dirent.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace banlieue::proxmox::testing {
namespace {

using Clock = std::chrono::steady_clock;

// Threads of this process (the plugin runs in it): a console must not leave one behind.
int threadCount() {
  int n = 0;
  if (DIR* dir = opendir("/proc/self/task")) {
    while (const dirent* entry = readdir(dir)) {
      if (entry->d_name[0] != '.') ++n;
    }
    closedir(dir);
  }
  return n;
}

// Reads until `needle` shows in what was read, the console ends or `limit` passes.
std::string readUntil(Driver& driver, banlieue_console* console, const std::string& needle,
                      banlieue_status* last = nullptr,
                      std::chrono::milliseconds limit = std::chrono::seconds(10)) {
  std::string got;
  const auto until = Clock::now() + limit;
  banlieue_status status = BANLIEUE_OK;
  while (Clock::now() < until && got.find(needle) == std::string::npos) {
    status = driver.consoleRead(console, got, std::chrono::milliseconds(200));
    if (status != BANLIEUE_OK) break;
  }
  if (last != nullptr) *last = status;
  return got;
}

void writeAll(Driver& driver, banlieue_console* console, std::string data) {
  while (!data.empty()) {
    size_t n = 0;
    ASSERT_EQ(driver.consoleWrite(console, data, n), BANLIEUE_OK);
    ASSERT_GT(n, 0u);
    ASSERT_LE(n, data.size());
    data.erase(0, n);
  }
}

// Waits until the fake holds `sessions` console sessions (its termproxy connections).
bool waitForSessions(const FakePve& fake, size_t sessions) {
  const auto until = Clock::now() + std::chrono::seconds(10);
  while (Clock::now() < until) {
    auto state = fake.state();
    if (state["consoleSessions"].Size() == sessions) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

// The host's copy of a provisioned machine with spec.providerID, as the runtime sets it.
std::string withProviderId(const std::string& object, int vmid) {
  std::string out = provisioned(object, vmid);
  const std::string spec = R"("spec":{)";
  return out.insert(out.find(spec) + spec.size(),
                    R"("providerID":"proxmox://pve1/)" + std::to_string(vmid) + R"(",)");
}

class ProxmoxConsoleTest : public ProxmoxTest {
 protected:
  void SetUp() override {
    ProxmoxTest::SetUp();
    sdk::testing::FakeHost::shared().clearRecords();
  }

  // A running guest, provisioned through the plugin; with a serial port unless told not to.
  std::string runningGuest(const std::string& name, const std::string& uid, bool serial = true) {
    CallOutcome out = driver_->drive("reconcile", machine(name, uid, ""));
    EXPECT_TRUE(out.ok()) << out.reason << ": " << out.message;
    vmid_ = json::parse(out.body, "reply")["status"]["vmid"].GetInt();
    if (serial) fake_->fake("config?vmid=" + std::to_string(vmid_) + "&key=serial0&value=socket");
    return withProviderId(machine(name, uid, ""), vmid_);
  }

  // Neither the token nor any console ticket the fake issued shows in `text`.
  void expectNoSecretsIn(const std::string& text) {
    EXPECT_EQ(text.find(FakePve::kSecret), std::string::npos) << text;
    auto state = fake_->state();
    for (const auto& ticket : state["consoleTickets"].GetArray()) {
      EXPECT_EQ(text.find(ticket.GetString()), std::string::npos) << text;
    }
  }
  void expectNoSecretsInLogs() {
    for (const auto& line : sdk::testing::FakeHost::shared().logs())
      expectNoSecretsIn(line.message);
  }

  int vmid_ = 0;
};

// Bytes typed reach the guest's serial port (PVE's "0:<len>:<data>" framing undone by the
// fake's termproxy) and what the guest writes comes back; closing the console ends the
// session on PVE's side and leaves no thread in the plugin.
TEST_F(ProxmoxConsoleTest, TypedBytesReachTheGuestAndItsOutputComesBack) {
  const std::string object = runningGuest("tty", "a1b2c3d4-0000-4000-8000-00000000c001");
  const int threads_before = threadCount();

  banlieue_console* console = nullptr;
  CallOutcome opened = driver_->consoleOpen(object, &console);
  ASSERT_TRUE(opened.ok()) << opened.reason << ": " << opened.message;
  ASSERT_NE(console, nullptr);
  auto reply = json::parse(opened.body, "reply");
  EXPECT_EQ(json::stringOr(&reply, "status.console"), "serial");
  EXPECT_NE(json::stringOr(&reply, "status.description").find("serial0"), std::string::npos)
      << opened.body;
  ASSERT_TRUE(waitForSessions(*fake_, 1));

  const std::string prompt = readUntil(*driver_, console, "tty login: ");
  ASSERT_NE(prompt.find("tty login: "), std::string::npos) << prompt;

  // Bytes with the framing's own separator in them, and more than one frame's worth.
  const std::string typed = "root:0:1:x " + std::string(20000, 'a') + "\r";
  writeAll(*driver_, console, typed);
  const std::string echoed = readUntil(*driver_, console, "Password: ");
  EXPECT_NE(echoed.find("root:0:1:x aaaa"), std::string::npos) << echoed.substr(0, 200);
  EXPECT_NE(echoed.find("Password: "), std::string::npos) << echoed.substr(echoed.size() - 200);

  auto state = fake_->state();
  const rapidjson::Value* vm = guest(state, "tty");
  ASSERT_NE(vm, nullptr);
  ASSERT_TRUE(vm->HasMember("serialInput")) << json::serialize(*vm);
  ASSERT_EQ((*vm)["serialInput"].Size(), 1u);
  EXPECT_EQ(std::string((*vm)["serialInput"][0].GetString()), typed.substr(0, typed.size() - 1))
      << "the guest got other bytes than were typed";
  const auto& session = state["consoleSessions"][0];
  EXPECT_EQ(session["vmid"].GetInt(), vmid_);
  EXPECT_EQ(json::stringOr(&session, "iface"), "serial0");

  driver_->consoleClose(console);
  EXPECT_TRUE(waitForSessions(*fake_, 0)) << "the termproxy session outlived console_close";
  state = fake_->state();
  EXPECT_EQ(state["runningTasks"].Size(), 0u) << json::serialize(state["runningTasks"]);
  EXPECT_EQ(threadCount(), threads_before) << "console_close left a thread behind";
  expectNoSecretsIn(opened.body);
  expectNoSecretsInLogs();
  remove(object);
}

// Ticket auth (a password Secret): the session's user is the PVE user itself, and the cookie
// authenticates the websocket.
TEST_F(ProxmoxConsoleTest, TicketAuthOpensTheConsoleToo) {
  CallOutcome created = driver_->create(fake_->ticketConfig(FakePve::kPassword, kCapabilities));
  ASSERT_TRUE(created.ok()) << created.reason << ": " << created.message;
  const std::string object = runningGuest("pw", "a1b2c3d4-0000-4000-8000-00000000c002");
  banlieue_console* console = nullptr;
  CallOutcome opened = driver_->consoleOpen(object, &console);
  ASSERT_TRUE(opened.ok()) << opened.reason << ": " << opened.message;
  const std::string prompt = readUntil(*driver_, console, "pw login: ");
  EXPECT_NE(prompt.find("pw login: "), std::string::npos) << prompt;
  auto state = fake_->state();
  ASSERT_EQ(state["consoleSessions"].Size(), 1u);
  EXPECT_EQ(json::stringOr(&state["consoleSessions"][0], "user"), FakePve::kPasswordUser);
  driver_->consoleClose(console);
  EXPECT_TRUE(waitForSessions(*fake_, 0));
  remove(object);
}

// QEMU's serial socket serves one client at a time (a second `qm terminal` would sit silent), so
// a second console of the same guest is ConsoleBusy until the first is closed.
TEST_F(ProxmoxConsoleTest, ASecondConsoleOfTheSameGuestIsBusyUntilTheFirstCloses) {
  const std::string object = runningGuest("busy", "a1b2c3d4-0000-4000-8000-00000000c008");
  banlieue_console* first = nullptr;
  CallOutcome opened = driver_->consoleOpen(object, &first);
  ASSERT_TRUE(opened.ok()) << opened.reason << ": " << opened.message;
  banlieue_console* second = nullptr;
  CallOutcome busy = driver_->consoleOpen(object, &second);
  EXPECT_EQ(busy.code, BANLIEUE_FAILED_PRECONDITION) << busy.reason << ": " << busy.message;
  EXPECT_EQ(busy.reason, "ConsoleBusy");
  EXPECT_EQ(second, nullptr);
  driver_->consoleClose(first);
  ASSERT_TRUE(waitForSessions(*fake_, 0));
  CallOutcome again = driver_->consoleOpen(object, &second);
  ASSERT_TRUE(again.ok()) << again.reason << ": " << again.message;
  const std::string prompt = readUntil(*driver_, second, "busy login: ");
  EXPECT_NE(prompt.find("busy login: "), std::string::npos) << prompt;
  driver_->consoleClose(second);
  EXPECT_TRUE(waitForSessions(*fake_, 0));
  remove(object);
}

// A guest without a serial port has no serial console: a specific reason at once, and no
// termproxy is started (PVE's `qm terminal` would fail only after the ticket was accepted).
TEST_F(ProxmoxConsoleTest, AGuestWithoutASerialPortIsRefusedWithAReason) {
  const std::string object =
      runningGuest("noserial", "a1b2c3d4-0000-4000-8000-00000000c003", /*serial=*/false);
  banlieue_console* console = nullptr;
  const auto started = Clock::now();
  CallOutcome opened = driver_->consoleOpen(object, &console);
  EXPECT_LT(Clock::now() - started, std::chrono::seconds(5));
  EXPECT_EQ(opened.code, BANLIEUE_FAILED_PRECONDITION) << opened.reason << ": " << opened.message;
  EXPECT_EQ(opened.reason, "NoSerialPort");
  EXPECT_NE(opened.message.find("serial0"), std::string::npos) << opened.message;
  EXPECT_EQ(console, nullptr);
  auto state = fake_->state();
  for (const auto& request : state["requestLog"].GetArray()) {
    EXPECT_EQ(std::string(request.GetString()).find("termproxy"), std::string::npos)
        << request.GetString();
  }
  remove(object);
}

// A stopped guest's serial port has nobody behind it.
TEST_F(ProxmoxConsoleTest, AStoppedGuestHasNoConsole) {
  const std::string uid = "a1b2c3d4-0000-4000-8000-00000000c004";
  CallOutcome out = driver_->drive("reconcile", machine("off", uid, "", "PoweredOff"));
  ASSERT_TRUE(out.ok()) << out.reason << ": " << out.message;
  const int vmid = json::parse(out.body, "reply")["status"]["vmid"].GetInt();
  fake_->fake("config?vmid=" + std::to_string(vmid) + "&key=serial0&value=socket");
  const std::string object = withProviderId(machine("off", uid, "", "PoweredOff"), vmid);
  banlieue_console* console = nullptr;
  CallOutcome opened = driver_->consoleOpen(object, &console);
  EXPECT_EQ(opened.code, BANLIEUE_FAILED_PRECONDITION) << opened.reason << ": " << opened.message;
  EXPECT_EQ(opened.reason, "MachineNotRunning");
  EXPECT_EQ(console, nullptr);
  remove(object);
}

// A console ticket PVE no longer honours (its 40 s are over: a slow call or skewed clocks) is
// refused by vncwebsocket; the plugin says so in words without the ticket, and nothing stays
// open on either side.
TEST_F(ProxmoxConsoleTest, AnExpiredTicketIsRefusedWithoutShowingIt) {
  const std::string object = runningGuest("late", "a1b2c3d4-0000-4000-8000-00000000c005");
  const int threads_before = threadCount();
  fake_->fake("console?next=expired");
  banlieue_console* console = nullptr;
  CallOutcome opened = driver_->consoleOpen(object, &console);
  EXPECT_EQ(opened.code, BANLIEUE_UNAVAILABLE) << opened.reason << ": " << opened.message;
  EXPECT_EQ(opened.reason, "ConsoleRefused");
  EXPECT_NE(opened.message.find("invalid vnc ticket"), std::string::npos) << opened.message;
  EXPECT_EQ(console, nullptr);
  auto state = fake_->state();
  EXPECT_EQ(state["consoleTickets"].Size(), 1u);
  EXPECT_EQ(state["consoleSessions"].Size(), 0u);
  EXPECT_EQ(threadCount(), threads_before);
  expectNoSecretsIn(opened.message);
  expectNoSecretsInLogs();
  remove(object);
}

// The guest's side ends (the VM stopped: `qm terminal` exits and PVE drops the websocket):
// reads answer OUT_OF_RANGE from then on, which a terminal shows as a closed console.
TEST_F(ProxmoxConsoleTest, WhenTheGuestSideEndsReadsSayTheConsoleClosed) {
  const std::string object = runningGuest("gone", "a1b2c3d4-0000-4000-8000-00000000c006");
  banlieue_console* console = nullptr;
  CallOutcome opened = driver_->consoleOpen(object, &console);
  ASSERT_TRUE(opened.ok()) << opened.reason << ": " << opened.message;
  (void)readUntil(*driver_, console, "gone login: ");
  fake_->fake("console?end=" + std::to_string(vmid_));
  banlieue_status last = BANLIEUE_OK;
  (void)readUntil(*driver_, console, "never printed", &last);
  EXPECT_EQ(last, BANLIEUE_OUT_OF_RANGE);
  std::string more;
  EXPECT_EQ(driver_->consoleRead(console, more, std::chrono::milliseconds(10)),
            BANLIEUE_OUT_OF_RANGE);
  size_t n = 0;
  EXPECT_EQ(driver_->consoleWrite(console, "x", n), BANLIEUE_OUT_OF_RANGE);
  driver_->consoleClose(console);
  EXPECT_TRUE(waitForSessions(*fake_, 0));
  remove(object);
}

// The fake itself refuses what PVE refuses: a wrong vncticket at vncwebsocket (500 "permission
// denied - invalid vnc ticket"), a wrong ticket in termproxy's first line (the connection
// closes without "OK"), and a second use of a termproxy session (it accepts one connection).
TEST_F(ProxmoxConsoleTest, TheFakeRefusesWrongTicketsAsPveDoes) {
  const std::string object = runningGuest("strict", "a1b2c3d4-0000-4000-8000-00000000c007");
  TlsOptions tls;
  tls.ca_bundle_pem = fake_->caPem();
  const Endpoint endpoint = Endpoint::parse(fake_->url());
  PveCredentials credentials;
  credentials.token = std::string(FakePve::kUser) + "=" + FakePve::kSecret;
  PveClient client(makeHttpsTransport(endpoint, tls), endpoint, std::move(credentials));
  const auto deadline = [] { return Clock::now() + std::chrono::seconds(10); };
  const std::string vm = "/nodes/pve1/qemu/" + std::to_string(vmid_);

  auto proxy = client.post(vm + "/termproxy", {{"serial", "serial0"}}, deadline());
  const std::string port = std::to_string(asInt(json::member(&proxy, "port")));
  const std::string ticket = asString(json::member(&proxy, "ticket"));
  const std::string user = asString(json::member(&proxy, "user"));
  EXPECT_EQ(user, FakePve::kUser);
  try {
    (void)client.openWebSocket(vm + "/vncwebsocket", {{"port", port}, {"vncticket", "PVEVNC:0"}},
                               deadline());
    ADD_FAILURE() << "a wrong vncticket opened the websocket";
  } catch (const PveError& e) {
    EXPECT_EQ(e.httpStatus(), 500);
    EXPECT_NE(e.message().find("invalid vnc ticket"), std::string::npos) << e.message();
  }

  auto socket = client.openWebSocket(vm + "/vncwebsocket", {{"port", port}, {"vncticket", ticket}},
                                     deadline());
  socket->write(user + ":" + ticket + "x\n", std::chrono::seconds(5));
  std::string got;
  sdk::https::WebSocket::ReadStatus status = sdk::https::WebSocket::ReadStatus::kTimeout;
  const auto until = Clock::now() + std::chrono::seconds(10);
  while (Clock::now() < until) {
    status = socket->read(got, 4096, std::chrono::milliseconds(200));
    if (status == sdk::https::WebSocket::ReadStatus::kClosed) break;
  }
  EXPECT_EQ(status, sdk::https::WebSocket::ReadStatus::kClosed);
  EXPECT_EQ(got.find("OK"), std::string::npos) << got;
  socket.reset();

  try {
    (void)client.openWebSocket(vm + "/vncwebsocket", {{"port", port}, {"vncticket", ticket}},
                               deadline());
    ADD_FAILURE() << "a termproxy session took a second connection";
  } catch (const TransportError&) {
    // PVE's proxy finds nobody listening on the port any more and drops the connection.
  }
  EXPECT_TRUE(waitForSessions(*fake_, 0));
  remove(object);
}

// The websocket is held to the same TLS policy as every request (the server's certificate
// verified against the Provider's CA only) and to RFC 6455's handshake (the server's
// Sec-WebSocket-Accept must answer the key sent).
TEST_F(ProxmoxConsoleTest, TheWebsocketChecksTheCertificateAndTheHandshake) {
  const std::string object = runningGuest("checked", "a1b2c3d4-0000-4000-8000-00000000c009");
  const Endpoint endpoint = Endpoint::parse(fake_->url());
  const auto deadline = [] { return Clock::now() + std::chrono::seconds(10); };
  const std::string vm = "/nodes/pve1/qemu/" + std::to_string(vmid_);
  auto clientTrusting = [&](const std::string& ca) {
    TlsOptions tls;
    tls.ca_bundle_pem = ca;
    PveCredentials credentials;
    credentials.token = std::string(FakePve::kUser) + "=" + FakePve::kSecret;
    return std::make_unique<PveClient>(makeHttpsTransport(endpoint, tls), endpoint,
                                       std::move(credentials));
  };
  auto trusted = clientTrusting(fake_->caPem());
  auto proxy = trusted->post(vm + "/termproxy", {{"serial", "serial0"}}, deadline());
  const Form query{{"port", std::to_string(asInt(json::member(&proxy, "port")))},
                   {"vncticket", asString(json::member(&proxy, "ticket"))}};

  const FakePve stranger;  // another test CA
  try {
    (void)clientTrusting(stranger.caPem())->openWebSocket(vm + "/vncwebsocket", query, deadline());
    ADD_FAILURE() << "the websocket trusted a certificate of another CA";
  } catch (const TransportError& e) {
    EXPECT_EQ(e.kind(), TransportError::Kind::kTls) << e.what();
  }

  fake_->fake("console?next=bad-accept");
  try {
    (void)trusted->openWebSocket(vm + "/vncwebsocket", query, deadline());
    ADD_FAILURE() << "a wrong Sec-WebSocket-Accept was taken";
  } catch (const TransportError& e) {
    EXPECT_NE(std::string(e.what()).find("Sec-WebSocket-Accept"), std::string::npos) << e.what();
  }
  remove(object);
}

}  // namespace
}  // namespace banlieue::proxmox::testing
