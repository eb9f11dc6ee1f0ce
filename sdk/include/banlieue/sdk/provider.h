// What a plugin author implements: a Provider (one per plugin, no I/O) that creates an
// Instance per banlieue Provider object (one backend connection). Override what the backend
// supports; every default answers UNIMPLEMENTED. Then export with BANLIEUE_PROVIDER_PLUGIN
// (banlieue/sdk/plugin.h). The rules each slot must follow, and what the host does with each
// answer: docs/provider-contract.md.
#pragma once

#include <banlieue/sdk/host.h>
#include <banlieue/sdk/json.h>
#include <banlieue/sdk/payloads.h>
#include <banlieue/sdk/status.h>

#include <chrono>
#include <memory>
#include <string_view>

namespace banlieue::sdk {

// The reply under construction: a JSON body plus an optional requeue hint. The trampoline
// serialises it into the host's sinks when the call returns.
class Reply {
 public:
  Reply() : body_(rapidjson::kObjectType) {}

  rapidjson::Document& body() { return body_; }
  rapidjson::Document::AllocatorType& allocator() { return body_.GetAllocator(); }

  // The "status" object of the reply (the infra CR status fields the plugin owns).
  rapidjson::Value& status() { return objectMember("status"); }

  // Records the backend task to poll on the next call (use with Status::inProgress()). Also
  // set it before failing after a task was started: the reply then still names the task
  // (banlieue's host stores tokens of IN_PROGRESS replies only, so the next call must still
  // find a task it is not given; docs/provider-contract.md, "Idempotency").
  void setOperation(std::string_view token, std::string_view description = {}) {
    rapidjson::Value& op = objectMember("operation");
    if (!op.IsObject()) op.SetObject();
    op.RemoveAllMembers();
    op.AddMember("token", json::stringValue(token, allocator()), allocator());
    if (!description.empty()) {
      op.AddMember("description", json::stringValue(description, allocator()), allocator());
    }
  }

  // Sets a condition of the plugin's own on the object (e.g. "GuestReady"; `status` is "True",
  // "False" or "Unknown", `reason` CamelCase), beside the runtime's Ready, which a plugin does
  // not set. The conditions of a reply replace those of the last reply that sent any; a reply
  // that sets none keeps them (docs/provider-contract.md).
  void setCondition(std::string_view type, std::string_view status, std::string_view reason,
                    std::string_view message = {}) {
    rapidjson::Value& st = this->status();
    auto it = st.FindMember("conditions");
    if (it == st.MemberEnd()) {
      st.AddMember("conditions", rapidjson::Value(rapidjson::kArrayType), allocator());
      it = st.FindMember("conditions");
    }
    rapidjson::Value* entry = nullptr;
    for (auto& c : it->value.GetArray()) {
      auto t = c.FindMember("type");
      if (t != c.MemberEnd() && t->value.IsString() && t->value.GetString() == type) entry = &c;
    }
    if (entry == nullptr) {
      it->value.PushBack(rapidjson::Value(rapidjson::kObjectType), allocator());
      entry = &it->value[it->value.Size() - 1];
    }
    entry->RemoveAllMembers();
    entry->AddMember("type", json::stringValue(type, allocator()), allocator());
    entry->AddMember("status", json::stringValue(status, allocator()), allocator());
    entry->AddMember("reason", json::stringValue(reason, allocator()), allocator());
    if (!message.empty()) {
      entry->AddMember("message", json::stringValue(message, allocator()), allocator());
    }
  }

  // Says there is no task ("operation": null). An OK reply clears the stored token anyway.
  void clearOperation() {
    auto it = body_.FindMember("operation");
    if (it == body_.MemberEnd()) {
      body_.AddMember("operation", rapidjson::Value(rapidjson::kNullType), allocator());
    } else {
      it->value.SetNull();
    }
  }

  // Says the machine is at rest ("settled": true; reconcile, with OK): it is as its inputs ask
  // and no backend task is pending, so until its inputs change a call would change nothing,
  // neither on the backend nor in the status this reply reports. The host then makes no call
  // for passes that change none of the inputs (its own writes, for one) until this reply's
  // requeue hint or the resync is due. Without it, every pass calls. Say it only when sure: a
  // change carried over several calls (a power change, a restart, a resize, a task) is not at
  // rest until the call that finds it done (docs/provider-contract.md, "Settled replies").
  void settle() {
    if (auto it = body_.FindMember("settled"); it != body_.MemberEnd()) {
      it->value.SetBool(true);
    } else {
      body_.AddMember("settled", true, allocator());
    }
  }

  void requeueAfter(std::chrono::milliseconds delay) { requeue_after_ = delay; }
  std::chrono::milliseconds requeueAfterHint() const { return requeue_after_; }

 private:
  rapidjson::Value& objectMember(const char* key) {
    auto it = body_.FindMember(key);
    if (it == body_.MemberEnd()) {
      body_.AddMember(rapidjson::StringRef(key), rapidjson::Value(rapidjson::kObjectType),
                      allocator());
      it = body_.FindMember(key);
    }
    return it->value;
  }

  rapidjson::Document body_;
  std::chrono::milliseconds requeue_after_{-1};
};

inline Status unimplemented(std::string_view what) {
  return {Code::kUnimplemented, "NotSupportedByBackend",
          std::string(what) + " is not supported by this backend"};
}

// An open console of one machine (SINCE 1.3; the header's console slots are the contract).
// Destroyed on console_close. read() and write() may run at the same time on two threads, but
// each never twice at once.
class Console {
 public:
  virtual ~Console() = default;
  // Up to `len` bytes of what the console produced into `buf`, waiting at most `timeout` for
  // the first: `n` is 0 when none came in time. Once the stream has ended, OutOfRange with
  // reason "ConsoleClosed", from then on.
  virtual Status read(char* buf, size_t len, std::chrono::milliseconds timeout, size_t& n) = 0;
  // Sends input; `n` is how much of `data` was taken (at least one byte of a non-empty write).
  // OutOfRange "ConsoleClosed" once the stream has ended.
  virtual Status write(std::string_view data, size_t& n) = 0;
};

// One backend connection, for one banlieue Provider. Destroyed on instance_destroy; join
// any thread you started in the destructor.
class Instance {
 public:
  virtual ~Instance() = default;

  // Set Capabilities::introspect when you override this.
  virtual Status introspect(const Call& /*call*/, const IntrospectRequest& /*request*/,
                            Reply& /*reply*/) {
    return unimplemented("introspect");
  }
  virtual Status reconcile(const Call& /*call*/, const ReconcileRequest& request,
                           Reply& /*reply*/) {
    return unimplemented("reconcile of " + request.kind);
  }
  virtual Status finalize(const Call& /*call*/, const ReconcileRequest& request, Reply& /*reply*/) {
    return unimplemented("finalize of " + request.kind);
  }
  // Set Capabilities::import_image when you override this.
  virtual Status importImage(const Call& /*call*/, const ImportImageRequest& /*request*/,
                             Reply& /*reply*/) {
    return unimplemented("import_image");
  }
  // SINCE 1.1. Set Capabilities::delete_image when you override this. OK once the image is
  // gone from request.failure_domain (also when it never was there); IN_PROGRESS with a
  // token while a backend task runs; FailedPrecondition "ImageInUse" while machines use it.
  virtual Status deleteImage(const Call& /*call*/, const DeleteImageRequest& /*request*/,
                             Reply& /*reply*/) {
    return unimplemented("delete_image");
  }
  // SINCE 1.2. Set Capabilities::snapshot when you override this. request.action says what
  // to do to request.provider_id's snapshots (the header's snapshot slot is the contract):
  // create is idempotent by request.name; revert and delete name request.snapshot_ref; list
  // reports them all in the reply's status.snapshots.
  virtual Status snapshot(const Call& /*call*/, const SnapshotRequest& /*request*/,
                          Reply& /*reply*/) {
    return unimplemented("snapshot");
  }
  // SINCE 1.3. Set Capabilities::console when you override this. On OK, `out` is the open
  // console of request.provider_id (request.console says which: "serial"); the reply's
  // status.description says in words what the person at the terminal is attached to.
  virtual Status openConsole(const Call& /*call*/, const ConsoleRequest& request,
                             std::unique_ptr<Console>& /*out*/, Reply& /*reply*/) {
    return unimplemented("console " + request.console);
  }
  // SINCE 1.4. Set Capabilities::watch_changes when you override this. The change feed of
  // every machine of this instance at once (the header's watch_changes slot is the contract):
  // with an empty request.cursor, start following and answer at once; otherwise answer when
  // something changed since request.cursor or the call's time is nearly up. Write the answer
  // with ChangeLog::answer (banlieue/sdk/change_log.h), which keeps the cursors.
  virtual Status watchChanges(const Call& /*call*/, const WatchRequest& /*request*/,
                              Reply& /*reply*/) {
    return unimplemented("watch_changes");
  }
  // Called by instance_destroy before the destructor, with the destroy call's deadline:
  // cancel backend work and join threads here. The default does nothing.
  virtual void shutdown(const Call& /*call*/) {}
};

// The plugin itself. Constructed once when the host initialises the plugin; must not do I/O.
class Provider {
 public:
  virtual ~Provider() = default;

  virtual std::string_view name() const = 0;
  virtual std::string_view version() const = 0;
  virtual Capabilities capabilities() const = 0;

  // Checks an object of a served kind without I/O. Throw Error or return a Status.
  virtual Status validate(const Call& /*call*/, const ValidateRequest& /*request*/,
                          Reply& /*reply*/) const {
    return Status::ok();
  }

  // Opens the backend connection. Throw Error (UNAVAILABLE, UNAUTHENTICATED, …) on failure.
  virtual std::unique_ptr<Instance> createInstance(const Call& call, InstanceConfig config) = 0;
};

}  // namespace banlieue::sdk
