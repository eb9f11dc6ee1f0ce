// Exports a Provider subclass as a banlieue_provider_v1 plugin:
//
//   class MyProvider : public banlieue::sdk::Provider { ... };
//   BANLIEUE_PROVIDER_PLUGIN(MyProvider)
//
// The macro defines the one exported entry symbol. Every slot goes through a noexcept
// trampoline: banlieue::sdk::Error becomes its code, any other exception INTERNAL, and
// nothing unwinds into the host. Include this header in exactly one translation unit.
#pragma once

#include <banlieue/sdk/provider.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <memory>
#include <optional>
#include <string>

// The opaque instance handle, defined only inside the plugin.
struct banlieue_instance {
  std::unique_ptr<banlieue::sdk::Instance> impl;
};

// The opaque console handle (SINCE 1.3), defined only inside the plugin.
struct banlieue_console {
  std::unique_ptr<banlieue::sdk::Console> impl;
};

namespace banlieue::sdk::detail {

// Stops at the host's first refusal (a size cap); nothing else to do about it here.
inline void write(const banlieue_sink& sink, std::string_view text) noexcept {
  if (sink.write != nullptr && !text.empty()) (void)sink.write(sink.ctx, text.data(), text.size());
}

// Writes the reply: the body for every code (REPLY BODY RULES in the ABI header,
// docs/provider-contract.md), then the reason and message when the call did not succeed.
inline banlieue_status finish(banlieue_reply* reply, Code code, std::string_view reason,
                              std::string_view message, Reply* built) noexcept {
  if (reply != nullptr) {
    if (built != nullptr) {
      try {
        if (built->body().MemberCount() > 0) write(reply->body, json::serialize(built->body()));
      } catch (...) {
        // Serialisation can only fail on allocation; the code below still reaches the host.
      }
      if (built->requeueAfterHint().count() >= 0 &&
          BANLIEUE_STRUCT_HAS(reply, banlieue_reply, requeue_after_ms)) {
        reply->requeue_after_ms = built->requeueAfterHint().count();
      }
    }
    if (code != Code::kOk) {
      write(reply->reason, reason.empty() ? std::string_view("Failed") : reason);
      write(reply->message, message);
    }
  }
  return static_cast<banlieue_status>(code);
}

// Runs fn(reply) and converts whatever it does into a banlieue_status. Never throws, and the
// reply built so far (an operation token set before a failure) always reaches the host.
template <class Fn>
banlieue_status guarded(const char* slot, banlieue_reply* reply, Fn&& fn) noexcept {
  std::optional<Reply> built;
  try {
    built.emplace();
    Status status = fn(*built);
    return finish(reply, status.code(), status.reason(), status.message(), &*built);
  } catch (const Error& e) {
    return finish(reply, e.code(), e.reason(), e.what(), built ? &*built : nullptr);
  } catch (const std::exception& e) {
    try {
      std::string message = std::string(slot) + " threw: " + e.what();
      return finish(reply, Code::kInternal, "PluginException", message, built ? &*built : nullptr);
    } catch (...) {
      return finish(reply, Code::kInternal, "PluginException", "a slot threw", nullptr);
    }
  } catch (...) {
    return finish(reply, Code::kInternal, "PluginException",
                  "a slot threw a non-standard exception", built ? &*built : nullptr);
  }
}

inline std::string_view view(banlieue_str s) noexcept {
  return s.data == nullptr ? std::string_view() : std::string_view(s.data, s.len);
}

inline Status missingInstance() {
  return {Code::kFailedPrecondition, "NoInstance", "called without an instance"};
}

template <class P>
struct Exported {
  // Created once and never destroyed: the host may call into the plugin until the process
  // exits, after static destructors have started to run.
  static P& provider() {
    static P* instance = new P();
    return *instance;
  }

  static banlieue_status describe(const banlieue_call* /*call*/, banlieue_reply* reply) noexcept {
    return guarded("describe", reply, [&](Reply& out) {
      out.body() = json::parse(
          provider().capabilities().toJson(provider().name(), provider().version()), "describe");
      return Status::ok();
    });
  }

  static banlieue_status instanceCreate(const banlieue_call* call, banlieue_str config,
                                        banlieue_instance** out, banlieue_reply* reply) noexcept {
    if (out != nullptr) *out = nullptr;
    return guarded("instance_create", reply, [&](Reply&) {
      if (out == nullptr) {
        return Status(Code::kInvalidArgument, "NoOutput", "instance_create without an output");
      }
      auto impl = provider().createInstance(Call(call), InstanceConfig::parse(view(config)));
      if (!impl) return Status(Code::kInternal, "NoInstance", "createInstance returned null");
      // An allocation failure throws into guarded(), which reports INTERNAL.
      *out = new banlieue_instance{std::move(impl)};  // NOLINT(bugprone-unhandled-exception-at-new)
      return Status::ok();
    });
  }

  static void instanceDestroy(banlieue_instance* instance, const banlieue_call* call) noexcept {
    if (instance == nullptr) return;
    try {
      instance->impl->shutdown(Call(call));
    } catch (...) {
      // Nothing can be reported from destroy; the instance is released regardless.
    }
    delete instance;  // a throwing destructor terminates here, as it would anywhere
  }

  static banlieue_status validate(const banlieue_call* call, banlieue_str kind,
                                  banlieue_str request, banlieue_reply* reply) noexcept {
    return guarded("validate", reply, [&](Reply& out) {
      return provider().validate(Call(call), ValidateRequest::parse(view(kind), view(request)),
                                 out);
    });
  }

  static banlieue_status introspect(banlieue_instance* instance, const banlieue_call* call,
                                    banlieue_str request, banlieue_reply* reply) noexcept {
    return guarded("introspect", reply, [&](Reply& out) {
      if (!instance) return missingInstance();
      return instance->impl->introspect(Call(call), IntrospectRequest::parse(view(request)), out);
    });
  }

  static banlieue_status reconcile(banlieue_instance* instance, const banlieue_call* call,
                                   banlieue_str kind, banlieue_str request,
                                   banlieue_reply* reply) noexcept {
    return guarded("reconcile", reply, [&](Reply& out) {
      if (!instance) return missingInstance();
      return instance->impl->reconcile(Call(call),
                                       ReconcileRequest::parse(view(kind), view(request)), out);
    });
  }

  static banlieue_status finalize(banlieue_instance* instance, const banlieue_call* call,
                                  banlieue_str kind, banlieue_str request,
                                  banlieue_reply* reply) noexcept {
    return guarded("finalize", reply, [&](Reply& out) {
      if (!instance) return missingInstance();
      return instance->impl->finalize(Call(call),
                                      ReconcileRequest::parse(view(kind), view(request)), out);
    });
  }

  static banlieue_status importImage(banlieue_instance* instance, const banlieue_call* call,
                                     banlieue_str request, banlieue_reply* reply) noexcept {
    return guarded("import_image", reply, [&](Reply& out) {
      if (!instance) return missingInstance();
      return instance->impl->importImage(Call(call), ImportImageRequest::parse(view(request)), out);
    });
  }

  static banlieue_status deleteImage(banlieue_instance* instance, const banlieue_call* call,
                                     banlieue_str request, banlieue_reply* reply) noexcept {
    return guarded("delete_image", reply, [&](Reply& out) {
      if (!instance) return missingInstance();
      return instance->impl->deleteImage(Call(call), DeleteImageRequest::parse(view(request)), out);
    });
  }

  static banlieue_status snapshot(banlieue_instance* instance, const banlieue_call* call,
                                  banlieue_str request, banlieue_reply* reply) noexcept {
    return guarded("snapshot", reply, [&](Reply& out) {
      if (!instance) return missingInstance();
      return instance->impl->snapshot(Call(call), SnapshotRequest::parse(view(request)), out);
    });
  }

  static banlieue_status consoleOpen(banlieue_instance* instance, const banlieue_call* call,
                                     banlieue_str request, banlieue_console** out,
                                     banlieue_reply* reply) noexcept {
    if (out != nullptr) *out = nullptr;
    return guarded("console_open", reply, [&](Reply& built) {
      if (!instance) return missingInstance();
      if (out == nullptr) {
        return Status(Code::kInvalidArgument, "NoOutput", "console_open without an output");
      }
      std::unique_ptr<Console> console;
      ConsoleRequest parsed = ConsoleRequest::parse(view(request));
      const bool ticket = parsed.console == "webmks";
      Status status = instance->impl->openConsole(Call(call), parsed, console, built);
      if (!status.isOk()) return status;
      // A ticket console has no stream: its URL is the answer (provider_v1.h, console_open).
      if (ticket && !console) {
        const auto* url = json::member(&built.status(), "url");
        if (url == nullptr || !url->IsString() || url->GetStringLength() == 0) {
          return Status(Code::kInternal, "NoConsoleUrl",
                        "openConsole answered a webmks console without status.url");
        }
        return Status::ok();
      }
      if (!console) return Status(Code::kInternal, "NoConsole", "openConsole returned no console");
      // An allocation failure throws into guarded(), which reports INTERNAL.
      *out =
          new banlieue_console{std::move(console)};  // NOLINT(bugprone-unhandled-exception-at-new)
      return Status::ok();
    });
  }

  // The stream slots have no reply: a failure's reason and message go to the plugin's log.
  template <class Fn>
  static banlieue_status streamed(const char* slot, Fn&& fn) noexcept {
    try {
      Status status = fn();
      if (!status.isOk() && status.code() != Code::kOutOfRange) {
        host().log(LogLevel::kWarn, std::string(slot) + ": " + std::string(status.reason()) + ": " +
                                        std::string(status.message()));
      }
      return static_cast<banlieue_status>(status.code());
    } catch (const Error& e) {
      host().log(LogLevel::kWarn, std::string(slot) + ": " + e.what());
      return static_cast<banlieue_status>(e.code());
    } catch (const std::exception& e) {
      host().log(LogLevel::kError, std::string(slot) + " threw: " + e.what());
      return BANLIEUE_INTERNAL;
    } catch (...) {
      return BANLIEUE_INTERNAL;
    }
  }

  static banlieue_status consoleRead(banlieue_console* console, char* buf, size_t len,
                                     int32_t timeout_ms, size_t* n) noexcept {
    if (n != nullptr) *n = 0;
    if (console == nullptr || n == nullptr || (buf == nullptr && len > 0)) {
      return BANLIEUE_INVALID_ARGUMENT;
    }
    return streamed("console_read", [&] {
      size_t got = 0;
      Status status = console->impl->read(
          buf, len, std::chrono::milliseconds(std::max<int32_t>(0, timeout_ms)), got);
      *n = std::min(got, len);
      return status;
    });
  }

  static banlieue_status consoleWrite(banlieue_console* console, const char* data, size_t len,
                                      size_t* n) noexcept {
    if (n != nullptr) *n = 0;
    if (console == nullptr || n == nullptr || (data == nullptr && len > 0)) {
      return BANLIEUE_INVALID_ARGUMENT;
    }
    return streamed("console_write", [&] {
      size_t taken = 0;
      Status status = console->impl->write(std::string_view(data, len), taken);
      *n = std::min(taken, len);
      return status;
    });
  }

  static void consoleClose(banlieue_console* console) noexcept {
    delete console;  // a throwing destructor terminates here, as it would anywhere
  }

  static banlieue_status watchChanges(banlieue_instance* instance, const banlieue_call* call,
                                      banlieue_str request, banlieue_reply* reply) noexcept {
    return guarded("watch_changes", reply, [&](Reply& out) {
      if (!instance) return missingInstance();
      return instance->impl->watchChanges(Call(call), WatchRequest::parse(view(request)), out);
    });
  }

  static const banlieue_provider_v1* init(const banlieue_host_v1* host_table,
                                          uint32_t /*host_minor*/,
                                          const banlieue_sink* error) noexcept {
    auto fail = [&](std::string_view message) -> const banlieue_provider_v1* {
      if (error != nullptr) write(*error, message);
      return nullptr;
    };
    try {
      if (host_table == nullptr || host_table->header.magic != BANLIEUE_HOST_MAGIC) {
        return fail("host table is missing or has the wrong magic");
      }
      if (host_table->header.abi_major != BANLIEUE_ABI_MAJOR) {
        return fail("host speaks ABI major " + std::to_string(host_table->header.abi_major) +
                    ", plugin speaks " + std::to_string(BANLIEUE_ABI_MAJOR));
      }
      if (host_table->header.layout_fingerprint != BANLIEUE_V1_LAYOUT_FINGERPRINT) {
        return fail(
            "host layout fingerprint differs from the plugin's (built for another platform?)");
      }
      host() = Host(host_table);
      // Never destroyed (see provider()): the host reads name and version until exit.
      static const std::string* name = new std::string(provider().name());
      static const std::string* version = new std::string(provider().version());
      static const banlieue_provider_v1 table = {
          {BANLIEUE_PROVIDER_MAGIC, sizeof(banlieue_provider_v1), BANLIEUE_ABI_MAJOR,
           BANLIEUE_ABI_MINOR, BANLIEUE_V1_LAYOUT_FINGERPRINT},
          name->c_str(),
          version->c_str(),
          &describe,
          &instanceCreate,
          &instanceDestroy,
          &validate,
          &introspect,
          &reconcile,
          &finalize,
          &importImage,
          &deleteImage,
          &snapshot,
          &consoleOpen,
          &consoleRead,
          &consoleWrite,
          &consoleClose,
          &watchChanges,
      };
      return &table;
    } catch (const std::exception& e) {
      return fail(std::string("plugin initialisation threw: ") + e.what());
    } catch (...) {
      return fail("plugin initialisation threw a non-standard exception");
    }
  }
};

}  // namespace banlieue::sdk::detail

// The entry symbol's name. Tests that link a plugin statically define it to something else
// before including this header, so one source gives both the .so and a linkable object.
#ifndef BANLIEUE_PROVIDER_ENTRY_NAME
#define BANLIEUE_PROVIDER_ENTRY_NAME banlieue_provider_v1_init
#endif

#define BANLIEUE_PROVIDER_PLUGIN(ProviderClass)                                                 \
  extern "C" BANLIEUE_PROVIDER_EXPORT const banlieue_provider_v1* BANLIEUE_PROVIDER_ENTRY_NAME( \
      const banlieue_host_v1* host, uint32_t host_minor, const banlieue_sink* error) {          \
    return ::banlieue::sdk::detail::Exported<ProviderClass>::init(host, host_minor, error);     \
  }
