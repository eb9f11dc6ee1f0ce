// Reconciles the infrastructure objects of one kind the plugin serves (LibvirtMachine,
// VSphereMachine, a third party's FileMachine…) that name this process's Provider: finalizer
// first, then one bounded plugin step per pass. A backend task that outlives the call is
// stored as status.operationToken before anything else happens, so a provider that crashes
// mid-operation resumes polling the same task instead of starting the VM a second time.
#pragma once

#include "host/kube/client.h"
#include "host/roles/provider/runtime_context.h"
#include "host/roles/provider/user_data_resolution.h"
#include "host/runtime/controller.h"
#include "host/runtime/informer.h"
#include "host/runtime/write_expectations.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace banlieue::roles::provider {

struct MachineReconcilerOptions {
  // Level-triggered drift check (a VM powered off behind banlieue's back) when nothing changed.
  std::chrono::seconds resync{600};
  // While the Provider has no connected instance: a safety net, as the connection itself
  // re-queues every machine (PluginSession::onConnected).
  std::chrono::seconds not_connected_retry{30};
};

class MachineReconciler final : public runtime::Reconciler {
 public:
  MachineReconciler(RuntimeContext& context, kube::ResourceType type, std::string kind,
                    runtime::Informer& machines, runtime::Informer& providers,
                    MachineReconcilerOptions options = {});
  runtime::Result reconcile(const runtime::Request& request) override;
  // How an object waiting for a create slot is brought back (its controller's enqueue).
  void setWake(std::function<void(const std::string& key)> wake) { wake_ = std::move(wake); }
  // The next pass of `key` calls the plugin whatever its inputs: another slot changed the
  // backend machine (a snapshot revert leaves it as the snapshot had it), or the change feed
  // says it changed. A pass already calling the plugin then records nothing it saw.
  void forgetInSync(const std::string& key);
  // With a change feed that covers a settled machine (ChangeFeed::covers), its resync pass makes
  // no plugin call: the feed would have said if it changed. A plugin's own requeue hint is
  // still honoured.
  void setChangeFeed(std::function<bool(std::chrono::steady_clock::time_point seen)> covers) {
    feed_covers_ = std::move(covers);
  }

 private:
  // {"object", "references": {"provider"}, "operation"?}; with `user_data`, the object's copy
  // carries it as spec.userData.
  std::string callRequest(const rapidjson::Value& object,
                          const std::optional<UserData>& user_data = std::nullopt) const;
  runtime::Result finalize(const rapidjson::Value& object);
  // Takes the object's create slot when it has not been provisioned (docs/adr/0049); a result
  // when it must wait (Ready=False, WaitingForCreateSlot, once).
  std::optional<runtime::Result> waitForCreateSlot(const rapidjson::Value& object,
                                                   const std::string& key);
  void releaseCreateSlot(const std::string& key);
  std::string slotKey(const std::string& key) const { return kind_ + "/" + key; }
  std::string describe(const rapidjson::Value& object) const;  // "Kind ns/name"
  // Set while the object is held back after the process died during its plugin call.
  std::optional<runtime::Result> crashHold(const rapidjson::Value& object, const std::string& uid,
                                           bool deleting);
  // `applied`, when given, tells whether the status is now the one given (written, or
  // already so).
  runtime::Result writeStatus(const rapidjson::Value& object, rapidjson::Document& status,
                              runtime::Result next, bool* applied = nullptr);
  // Our last write of `object` is not in the cache yet when false: acting on the older copy
  // would write the same status again.
  bool cacheHasOurWrites(const std::string& key);
  // Ready=False with the failure's reason; the plugin's last reported fields are kept.
  // `reported`, when given, tells whether that status write went through.
  runtime::Result failed(const rapidjson::Value& object, const Status& failure, bool deleting,
                         bool* reported = nullptr);
  // Paused=True on an object Cluster API paused; nothing else happens to it.
  runtime::Result paused(const rapidjson::Value& object);
  // What a reconcile call is given besides the status: the spec (with `provider_id` as its
  // providerID), the uid (an object made again under its name is another), labels,
  // annotations, the Provider's generation and the userData; and the plugin instance it goes
  // to (`connection`, the session's generation).
  uint64_t inputsFingerprint(const rapidjson::Value& object, const std::string& provider_id,
                             const std::optional<UserData>& user_data, int connection) const;
  // After a reply that said "settled" (docs/provider-contract.md, "Settled replies"), while
  // the object's inputs are those of that call and its next pass (the resync, or the plugin's
  // own hint) is not due, another call would change nothing: the passes our own writes cause
  // (finalizer, providerID) make no backend call (issue #23: no backend call at rest). Any
  // other reply, a failure, a deletion, a pause, a new plugin instance or a restart forgets
  // it, and so does forgetInSync.
  std::optional<runtime::Result> inSync(const std::string& key, uint64_t fingerprint);
  // Before a plugin call: what it sees may be recorded as in sync only if no wake
  // (forgetInSync) comes between this and recordInSync. Returns the key's wake count.
  uint64_t beginCall(const std::string& key);
  // `seen` is when the call that found it settled began; `at_resync`, whether `next` is the
  // resync rather than the plugin's own hint.
  void recordInSync(const std::string& key, uint64_t fingerprint, const runtime::Result& next,
                    std::chrono::steady_clock::time_point seen, bool at_resync, uint64_t wakes);
  void eraseInSync(const std::string& key);  // the object is going: nothing to remember

  RuntimeContext& context_;
  kube::ResourceType type_;
  std::string kind_;
  runtime::Informer& machines_;
  runtime::Informer& providers_;
  MachineReconcilerOptions options_;
  runtime::WriteExpectations expectations_;
  std::function<void(const std::string& key)> wake_;
  // The creates running at the backend, counted once from the synced cache before any new
  // one starts (after a restart: every unprovisioned object with an operation token).
  std::once_flag running_creates_counted_;
  struct InSync {
    bool valid = false;  // false: the next pass calls (a wake, a call in flight)
    uint64_t fingerprint = 0;
    std::chrono::steady_clock::time_point due;   // the pass the settled reply asked for
    std::chrono::steady_clock::time_point seen;  // when that call began
    bool at_resync = false;                      // due is the resync, not the plugin's hint
    uint64_t wakes = 0;                          // forgetInSync calls, ever
  };
  std::mutex in_sync_mutex_;
  std::map<std::string, InSync> in_sync_;  // by object key
  std::function<bool(std::chrono::steady_clock::time_point)> feed_covers_;
};

}  // namespace banlieue::roles::provider
