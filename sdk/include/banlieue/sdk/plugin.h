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

#include <exception>
#include <memory>
#include <string>

// The opaque instance handle, defined only inside the plugin.
struct banlieue_instance {
  std::unique_ptr<banlieue::sdk::Instance> impl;
};

namespace banlieue::sdk::detail {

inline void write(const banlieue_sink& sink, std::string_view text) {
  if (sink.write != nullptr && !text.empty()) sink.write(sink.ctx, text.data(), text.size());
}

inline banlieue_status finish(banlieue_reply* reply, const Status& status, Reply* built) {
  if (reply != nullptr) {
    if (built != nullptr) {
      write(reply->body, json::serialize(built->body()));
      if (built->requeueAfterHint().count() >= 0)
        reply->requeue_after_ms = built->requeueAfterHint().count();
    }
    if (!status.isOk()) {
      write(reply->reason, status.reason().empty() ? std::string("Failed") : status.reason());
      write(reply->message, status.message());
    }
  }
  return static_cast<banlieue_status>(status.code());
}

// Runs fn(reply) and converts whatever it does into a banlieue_status. Never throws.
template <class Fn>
banlieue_status guarded(const char* slot, banlieue_reply* reply, Fn&& fn) noexcept {
  try {
    Reply built;
    Status status = fn(built);
    return finish(reply, status, &built);
  } catch (const Error& e) {
    return finish(reply, e.toStatus(), nullptr);
  } catch (const std::exception& e) {
    return finish(
        reply,
        Status(Code::kInternal, "PluginException", std::string(slot) + " threw: " + e.what()),
        nullptr);
  } catch (...) {
    return finish(reply,
                  Status(Code::kInternal, "PluginException",
                         std::string(slot) + " threw a non-standard exception"),
                  nullptr);
  }
}

inline std::string_view view(banlieue_str s) {
  return {s.data == nullptr ? "" : s.data, s.len};
}

inline Status missingInstance() {
  return {Code::kFailedPrecondition, "NoInstance", "called without an instance"};
}

template <class P>
struct Exported {
  static P& provider() {
    static P instance;
    return instance;
  }

  static banlieue_status describe(const banlieue_call* call, banlieue_reply* reply) noexcept {
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
      *out = new banlieue_instance{std::move(impl)};
      return Status::ok();
    });
  }

  static void instanceDestroy(banlieue_instance* instance) noexcept {
    try {
      delete instance;
    } catch (...) {
      // A destructor that throws has already terminated under noexcept rules; nothing to do.
    }
  }

  static banlieue_status validate(const banlieue_call* call, banlieue_str kind, banlieue_str object,
                                  banlieue_reply* reply) noexcept {
    return guarded("validate", reply, [&](Reply& out) {
      auto doc = json::parse(view(object), "object");
      return provider().validate(Call(call), view(kind), doc, out);
    });
  }

  static banlieue_status introspect(banlieue_instance* instance, const banlieue_call* call,
                                    banlieue_reply* reply) noexcept {
    return guarded("introspect", reply, [&](Reply& out) {
      return instance ? instance->impl->introspect(Call(call), out) : missingInstance();
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

  static const banlieue_provider_v1* init(const banlieue_host_v1* host_table, uint32_t host_minor,
                                          const banlieue_sink* error) noexcept {
    auto fail = [&](const std::string& message) -> const banlieue_provider_v1* {
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
      static std::string name(provider().name());
      static std::string version(provider().version());
      static const banlieue_provider_v1 table = {
          {BANLIEUE_PROVIDER_MAGIC, sizeof(banlieue_provider_v1), BANLIEUE_ABI_MAJOR,
           BANLIEUE_ABI_MINOR, BANLIEUE_V1_LAYOUT_FINGERPRINT},
          name.c_str(),
          version.c_str(),
          &describe,
          &instanceCreate,
          &instanceDestroy,
          &validate,
          &introspect,
          &reconcile,
          &finalize,
          &importImage,
      };
      (void)host_minor;  // 1.0 uses no host slot beyond the 1.0 set
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

#define BANLIEUE_PROVIDER_PLUGIN(ProviderClass)                                             \
  extern "C" __attribute__((visibility("default"))) const banlieue_provider_v1*             \
  BANLIEUE_PROVIDER_ENTRY_NAME(const banlieue_host_v1* host, uint32_t host_minor,           \
                               const banlieue_sink* error) {                                \
    return ::banlieue::sdk::detail::Exported<ProviderClass>::init(host, host_minor, error); \
  }
