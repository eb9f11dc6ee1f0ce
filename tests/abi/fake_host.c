/*
 * A host as it was built at an older ABI minor, serving a plugin built today. Compiled as
 * strict C99 against one frozen header (tests/abi/fixtures/abi-1.<minor>) and nothing else of
 * banlieue, so its host table is exactly that minor's size and it knows no slot added since:
 * fake_host_1_0 from the 1.0 header, fake_host_1_1 and fake_host_1_2 from theirs. It loads the
 * plugin named on the command line, runs describe, instance_create, a two-step reconcile, finalize
 * and instance_destroy, and checks that the plugin works and saw exactly the host slots of its
 * minor (the test plugin reports what it saw when spec.reportHost is set).
 *
 *   fake_host_1_0 PATH/TO/libtestprov.so
 *
 * Exit 0 and one summary line when every check held; exit 1 naming the first that did not.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime in strict C99 mode */

#include <banlieue/provider_v1.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if BANLIEUE_ABI_MINOR > 3
#error "a fake host is built against a frozen header (tests/abi/fixtures), not today's"
#endif

/* A growable buffer behind a banlieue_sink. */
typedef struct buffer {
  char data[65536];
  size_t len;
} buffer;

static int32_t buffer_write(void* ctx, const char* data, size_t len) {
  buffer* b = (buffer*)ctx;
  if (len >= sizeof(b->data) - b->len) return 1;
  memcpy(b->data + b->len, data, len);
  b->len += len;
  b->data[b->len] = '\0';
  return 0;
}

static int failures;

static void check(int ok, const char* what, const char* detail) {
  if (!ok) {
    fprintf(stderr, "FAIL: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
    ++failures;
  }
}

static int64_t now_unix_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- the host slots of this minor ------------------------------------------------------ */

static void host_log(void* ctx, banlieue_log_level level, const char* file, int32_t line,
                     const char* msg, size_t len) {
  (void)ctx;
  (void)file;
  (void)line;
  fprintf(stderr, "plugin log [%d]: %.*s\n", (int)level, (int)len, msg);
}

static int32_t host_log_enabled(void* ctx, banlieue_log_level level) {
  (void)ctx;
  return level >= BANLIEUE_LOG_INFO;
}

static int32_t host_is_cancelled(void* ctx, const banlieue_call* call) {
  (void)ctx;
  return call != NULL && call->deadline_unix_ms > 0 && now_unix_ms() >= call->deadline_unix_ms;
}

#if BANLIEUE_ABI_MINOR >= 1
/* SINCE 1.1. This host's calls carry only a wall-clock deadline, so that is what is left. */
static int64_t host_remaining_ms(void* ctx, const banlieue_call* call) {
  int64_t left;
  (void)ctx;
  if (call == NULL || call->deadline_unix_ms <= 0) return -1;
  left = call->deadline_unix_ms - now_unix_ms();
  return left > 0 ? left : 0;
}
#define HOST_SLOTS_SEEN "present"
#else
#define HOST_SLOTS_SEEN "absent"
#endif

static int events;

static void host_emit_event(void* ctx, const banlieue_call* call, banlieue_event_type type,
                            banlieue_str reason, banlieue_str message) {
  (void)ctx;
  (void)call;
  (void)type;
  fprintf(stderr, "plugin event: %.*s: %.*s\n", (int)reason.len, reason.data, (int)message.len,
          message.data);
  ++events;
}

/* ---- calls ---------------------------------------------------------------------------- */

typedef struct outcome {
  banlieue_status code;
  buffer body;
  buffer message;
  buffer reason;
} outcome;

static banlieue_call make_call(const char* uid, uint64_t id) {
  banlieue_call call;
  memset(&call, 0, sizeof call);
  call.struct_size = sizeof call;
  call.call_id = id;
  call.deadline_unix_ms = now_unix_ms() + 30000;
  call.object_uid.data = uid;
  call.object_uid.len = strlen(uid);
  return call;
}

static banlieue_reply make_reply(outcome* out) {
  banlieue_reply reply;
  memset(out, 0, sizeof *out);
  memset(&reply, 0, sizeof reply);
  reply.struct_size = sizeof reply;
  reply.body.ctx = &out->body;
  reply.body.write = buffer_write;
  reply.message.ctx = &out->message;
  reply.message.write = buffer_write;
  reply.reason.ctx = &out->reason;
  reply.reason.write = buffer_write;
  reply.requeue_after_ms = -1;
  return reply;
}

static banlieue_str str(const char* s) {
  banlieue_str r;
  r.data = s;
  r.len = strlen(s);
  return r;
}

static const char kConfig[] =
    "{\"provider\":{\"apiVersion\":\"banlieue.io/v1alpha1\",\"kind\":\"Provider\",\"metadata\":"
    "{\"name\":\"p\",\"namespace\":\"default\"},\"spec\":{\"connection\":{\"endpoint\":"
    "\"test://local\"}}},\"credentials\":{\"password\":\"right\"}}";

static const char kRequestStart[] =
    "{\"object\":{\"apiVersion\":\"infrastructure.test.banlieue.io/v1beta2\",\"kind\":"
    "\"TestMachine\",\"metadata\":{\"name\":\"vm1\",\"namespace\":\"default\",\"uid\":\"uid-1\"},"
    "\"spec\":{\"reportHost\":true}}";

int main(int argc, char** argv) {
  banlieue_host_v1* host;
  banlieue_provider_v1 table;
  const banlieue_provider_v1* plugin_table;
  banlieue_provider_v1_init_fn init;
  banlieue_instance* instance = NULL;
  buffer init_error;
  banlieue_sink error_sink;
  banlieue_call call;
  banlieue_reply reply;
  outcome out;
  char request[1024];
  void* library;
  void* symbol;
  size_t copied;
  const char* seconds;

  if (argc != 2) {
    fprintf(stderr, "usage: %s PLUGIN.so\n", argv[0]);
    return 2;
  }
  library = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (library == NULL) {
    fprintf(stderr, "FAIL: dlopen: %s\n", dlerror());
    return 1;
  }
  symbol = dlsym(library, BANLIEUE_PROVIDER_V1_INIT_SYMBOL);
  if (symbol == NULL) {
    fprintf(stderr, "FAIL: no %s\n", BANLIEUE_PROVIDER_V1_INIT_SYMBOL);
    return 1;
  }
  memcpy(&init, &symbol, sizeof init); /* ISO C has no function-pointer cast from void* */

  /* Exactly this minor's table, on the heap: a plugin that read past its end (a slot it did not
   * test with BANLIEUE_HOST_HAS) would read outside the allocation, which ASan reports. */
  host = (banlieue_host_v1*)malloc(sizeof(banlieue_host_v1));
  if (host == NULL) return 1;
  memset(host, 0, sizeof *host);
  host->header.magic = BANLIEUE_HOST_MAGIC;
  host->header.struct_size = (uint32_t)sizeof(banlieue_host_v1);
  host->header.abi_major = BANLIEUE_ABI_MAJOR;
  host->header.abi_minor = BANLIEUE_ABI_MINOR;
  host->header.layout_fingerprint = BANLIEUE_V1_LAYOUT_FINGERPRINT;
  host->host_ctx = NULL;
  host->log = host_log;
  host->log_enabled = host_log_enabled;
  host->is_cancelled = host_is_cancelled;
  host->emit_event = host_emit_event;
#if BANLIEUE_ABI_MINOR >= 1
  host->remaining_ms = host_remaining_ms;
#endif

  memset(&init_error, 0, sizeof init_error);
  error_sink.ctx = &init_error;
  error_sink.write = buffer_write;
  plugin_table = init(host, BANLIEUE_ABI_MINOR, &error_sink);
  if (plugin_table == NULL) {
    fprintf(stderr, "FAIL: the plugin refused a 1.%d host: %s\n", BANLIEUE_ABI_MINOR,
            init_error.data);
    return 1;
  }
  /* As this minor's loader does: copy what both sides know, and no more. */
  memset(&table, 0, sizeof table);
  copied = plugin_table->header.struct_size < sizeof table ? plugin_table->header.struct_size
                                                           : sizeof table;
  memcpy(&table, plugin_table, copied);
  check(plugin_table->header.abi_minor > BANLIEUE_ABI_MINOR,
        "the plugin under test is newer than this host", NULL);
  check(plugin_table->header.struct_size > sizeof table, "its table is longer than this host's",
        NULL);

  call = make_call("", 1);
  reply = make_reply(&out);
  out.code = table.describe(&call, &reply);
  check(out.code == BANLIEUE_OK, "describe", out.message.data);
  check(strstr(out.body.data, "\"kind\":\"TestMachine\"") != NULL, "describe serves TestMachine",
        out.body.data);

  call = make_call("provider-uid", 2);
  reply = make_reply(&out);
  out.code = table.instance_create(&call, str(kConfig), &instance, &reply);
  check(out.code == BANLIEUE_OK && instance != NULL, "instance_create", out.message.data);
  if (instance == NULL) return 1;

  /* A two-step task: IN_PROGRESS with a token, then OK with the token passed back. */
  call = make_call("uid-1", 3);
  reply = make_reply(&out);
  snprintf(request, sizeof request, "%s}", kRequestStart);
  out.code = table.reconcile(instance, &call, str("TestMachine"), str(request), &reply);
  check(out.code == BANLIEUE_IN_PROGRESS, "reconcile starts a task", out.message.data);
  check(strstr(out.body.data, "\"token\":\"task-uid-1\"") != NULL, "reconcile names its task",
        out.body.data);

  call = make_call("uid-1", 4);
  reply = make_reply(&out);
  snprintf(request, sizeof request, "%s,\"operation\":{\"token\":\"task-uid-1\"}}", kRequestStart);
  out.code = table.reconcile(instance, &call, str("TestMachine"), str(request), &reply);
  check(out.code == BANLIEUE_OK, "reconcile finishes the task", out.message.data);
  check(strstr(out.body.data, "\"providerID\":\"test://uid-1\"") != NULL, "providerID reported",
        out.body.data);
  check(strstr(out.body.data, "\"remainingMs\":\"" HOST_SLOTS_SEEN "\"") != NULL,
        "the plugin sees remaining_ms (SINCE 1.1) as " HOST_SLOTS_SEEN " in this host table",
        out.body.data);
  /* Either way the time left is the call's 30 s: from remaining_ms, or without it from the
   * wall-clock deadline. */
  seconds = strstr(out.body.data, "\"secondsLeft\":");
  check(seconds != NULL && atoi(seconds + strlen("\"secondsLeft\":")) >= 25 &&
            atoi(seconds + strlen("\"secondsLeft\":")) <= 30,
        "the plugin's time left is the call's", out.body.data);
  check(events == 1, "the plugin's event reached the host", NULL);

  call = make_call("uid-1", 5);
  reply = make_reply(&out);
  out.code = table.finalize(instance, &call, str("TestMachine"), str(request), &reply);
  check(out.code == BANLIEUE_OK, "finalize", out.message.data);

  call = make_call("provider-uid", 6);
  table.instance_destroy(instance, &call);

  if (failures != 0) return 1;
  printf(
      "fake 1.%d host: a %u-byte ABI 1.%u plugin table served by a %u-byte 1.%d host table: "
      "describe, instance_create, reconcile, finalize OK; remaining_ms " HOST_SLOTS_SEEN "\n",
      BANLIEUE_ABI_MINOR, (unsigned)plugin_table->header.struct_size,
      (unsigned)plugin_table->header.abi_minor, (unsigned)sizeof(banlieue_host_v1),
      BANLIEUE_ABI_MINOR);
  free(host); /* the plugin may keep the pointer until exit, but makes no call after this */
  return 0;
}
