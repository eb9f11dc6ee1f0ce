/*
 * The "cfile" backend in plain C99: a VM is a JSON file in a directory. It is the C counterpart
 * of examples/file-provider (same backend, same endpoint options), written against the public
 * ABI header alone (<banlieue/provider_v1.h>, no SDK) with jansson for JSON, to show what a
 * plugin must do by hand that the C++ SDK does for you: fill the static table, write replies
 * through the host's sinks, and give every non-OK answer a CamelCase reason and a message.
 */
#define _XOPEN_SOURCE 700 /* gethostname, mkdir, access in strict C99 mode */

#include <banlieue/provider_v1.h>

#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CFILE_NAME "cfile"
#define CFILE_VERSION "0.1.0"
#define CFILE_GROUP "infrastructure.cfile.example.com"
#define CFILE_KIND "CFileMachine"
#define CFILE_MAX_ZONES 16

#if defined(__GNUC__) || defined(__clang__)
#define CFILE_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define CFILE_PRINTF(fmt, args)
#endif

/* The host's services; valid until the process exits (set once, by init). */
static const banlieue_host_v1* g_host;

/* The header declares banlieue_instance opaque; the plugin defines it. Read-only after
 * instance_create, so any-thread slots share it without a lock. */
struct banlieue_instance {
  char* root;         /* the directory that holds the VMs */
  int create_seconds; /* how long a create takes (endpoint option createSeconds) */
  size_t zone_count;  /* at least 1 */
  char* zones[CFILE_MAX_ZONES];
};

/* ---- small helpers -------------------------------------------------------------------- */

static char* format(const char* fmt, ...) CFILE_PRINTF(1, 2);

/* A malloc'd, formatted string; NULL when out of memory. */
static char* format(const char* fmt, ...) {
  va_list args;
  va_list again;
  int n;
  char* s;
  va_start(args, fmt);
  va_copy(again, args);
  n = vsnprintf(NULL, 0, fmt, args);
  va_end(args);
  s = n < 0 ? NULL : malloc((size_t)n + 1);
  if (s != NULL) vsnprintf(s, (size_t)n + 1, fmt, again);
  va_end(again);
  return s;
}

static int str_equals(banlieue_str s, const char* text) {
  return s.len == strlen(text) && (s.len == 0 || memcmp(s.data, text, s.len) == 0);
}

static void log_line(banlieue_log_level level, const char* file, int line, const char* fmt, ...)
    CFILE_PRINTF(4, 5);

/* One line to the plugin's logger; formats only when the host would write it. */
static void log_line(banlieue_log_level level, const char* file, int line, const char* fmt, ...) {
  char msg[512];
  va_list args;
  int n;
  if (g_host == NULL || !g_host->log_enabled(g_host->host_ctx, level)) return;
  va_start(args, fmt);
  n = vsnprintf(msg, sizeof(msg), fmt, args);
  va_end(args);
  if (n < 0) return;
  g_host->log(g_host->host_ctx, level, file, (int32_t)line, msg,
              (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1);
}
#define CFILE_LOG(level, ...) log_line(level, __FILE__, __LINE__, __VA_ARGS__)

/* strerror() is not thread-safe and slots run on any thread: the XSI strerror_r. */
static const char* error_text(int err, char* buf, size_t size) {
  if (strerror_r(err, buf, size) != 0) snprintf(buf, size, "error %d", err);
  return buf;
}

static void sink_write(const banlieue_sink* sink, const char* text) {
  /* A non-zero return means the host's cap was reached; there is nothing more to write. */
  (void)sink->write(sink->ctx, text, strlen(text));
}

/* Ends a call with a non-OK code: the host requires a CamelCase reason and a message. */
static banlieue_status fail(banlieue_reply* reply, banlieue_status code, const char* reason,
                            const char* message) {
  sink_write(&reply->reason, reason);
  sink_write(&reply->message, message != NULL ? message : "out of memory");
  return code;
}

/* fail() with a message that is malloc'd here and freed after the sink copied it. */
static banlieue_status failf(banlieue_reply* reply, banlieue_status code, const char* reason,
                             char* message) {
  banlieue_status status = fail(reply, code, reason, message);
  free(message);
  return status;
}

/* Writes `body` (consumed) as the reply's JSON body. */
static banlieue_status reply_body(banlieue_reply* reply, json_t* body, banlieue_status code) {
  char* text = body != NULL ? json_dumps(body, JSON_COMPACT) : NULL;
  json_decref(body);
  if (text == NULL) return fail(reply, BANLIEUE_RESOURCE_EXHAUSTED, "OutOfMemory", NULL);
  sink_write(&reply->body, text);
  free(text);
  return code;
}

/* Parses a borrowed request; NULL (after failing the reply) when it is not a JSON object. */
static json_t* parse_request(banlieue_str request, banlieue_reply* reply, banlieue_status* status) {
  json_error_t error;
  json_t* doc = json_loadb(request.data, request.len, 0, &error);
  if (doc == NULL || !json_is_object(doc)) {
    json_decref(doc);
    *status = failf(reply, BANLIEUE_INVALID_ARGUMENT, "MalformedRequest",
                    format("the request is not a JSON object: %s", error.text));
    return NULL;
  }
  return doc;
}

/* Looks up a dotted path ("spec.cpus") through nested objects; NULL when any part is missing. */
static json_t* lookup(json_t* value, const char* path) {
  char key[64];
  while (value != NULL && *path != '\0') {
    size_t len = strcspn(path, ".");
    if (len >= sizeof(key)) return NULL;
    memcpy(key, path, len);
    key[len] = '\0';
    value = json_object_get(value, key); /* NULL when value is not an object */
    path += len + (path[len] == '.' ? 1 : 0);
  }
  return value;
}

static const char* string_or(json_t* value, const char* path, const char* fallback) {
  const char* s = json_string_value(lookup(value, path));
  return s != NULL ? s : fallback;
}

static json_int_t integer_or(json_t* value, const char* path, json_int_t fallback) {
  json_t* n = lookup(value, path);
  return json_is_integer(n) ? json_integer_value(n) : fallback;
}

/* A Kubernetes name or namespace is safe as part of a file name; anything else is refused. */
static int safe_name(const char* s) {
  return s[0] != '\0' && s[0] != '.' &&
         strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-.") == strlen(s);
}

/* mkdir -p */
static int make_directories(const char* path) {
  char* copy = format("%s", path);
  char* p;
  int rc = 0;
  if (copy == NULL) return -1;
  for (p = copy + 1; rc == 0; ++p) {
    if (*p == '/' || *p == '\0') {
      char saved = *p;
      *p = '\0';
      if (mkdir(copy, 0755) != 0 && errno != EEXIST) rc = -1;
      *p = saved;
      if (saved == '\0') break;
    }
  }
  free(copy);
  return rc;
}

/* Writes atomically: a reader never sees half a VM. */
static int write_file(const char* path, const char* content) {
  char* tmp = format("%s.tmp", path);
  FILE* out;
  int ok;
  if (tmp == NULL) return -1;
  out = fopen(tmp, "w");
  ok = out != NULL && fputs(content, out) >= 0;
  if (out != NULL && fclose(out) != 0) ok = 0;
  if (ok && rename(tmp, path) != 0) ok = 0;
  if (!ok) remove(tmp);
  free(tmp);
  return ok ? 0 : -1;
}

/* remove() that counts a file already gone as success (finalize is idempotent). */
static int remove_if_present(const char* path) {
  return remove(path) == 0 || errno == ENOENT ? 0 : -1;
}

/* ---- describe and validate (no instance, no I/O) -------------------------------------- */

static banlieue_status cfile_describe(const banlieue_call* call, banlieue_reply* reply) {
  (void)call;
  /* One key per line, indented like the document it builds. */
  /* clang-format off */
  return reply_body(reply, json_pack("{s:s, s:s, s:s, s:[{s:s, s:s, s:s, s:[s, s, s]}], s:[],"
                                     " s:{s:b, s:b}, s:[s, s, s]}",
      "name", CFILE_NAME,
      "providerVersion", CFILE_VERSION,
      "backend", CFILE_NAME,
      "kinds",
        "group", CFILE_GROUP,
        "version", "v1alpha1",
        "kind", CFILE_KIND,
        "operations", "reconcile", "finalize", "validate",
      "features",
      "operations",
        "introspect", 1,
        "importImage", 1,
      "imageFormats", "raw", "qcow2", "iso"), BANLIEUE_OK);
  /* clang-format on */
}

static banlieue_status unsupported_kind(banlieue_reply* reply, banlieue_str kind) {
  return failf(
      reply, BANLIEUE_INVALID_ARGUMENT, "UnsupportedKind",
      format("the cfile provider serves " CFILE_KIND ", not %.*s", (int)kind.len, kind.data));
}

static banlieue_status cfile_validate(const banlieue_call* call, banlieue_str kind,
                                      banlieue_str request, banlieue_reply* reply) {
  banlieue_status status = BANLIEUE_OK;
  json_t* doc;
  json_t* cpus;
  json_t* memory;
  (void)call;
  if (!str_equals(kind, CFILE_KIND)) return unsupported_kind(reply, kind);
  doc = parse_request(request, reply, &status);
  if (doc == NULL) return status;
  cpus = lookup(doc, "object.spec.cpus");
  memory = lookup(doc, "object.spec.memoryMiB");
  if (cpus != NULL && (!json_is_integer(cpus) || json_integer_value(cpus) < 1)) {
    status = fail(reply, BANLIEUE_INVALID_ARGUMENT, "InvalidSpec", "spec.cpus must be at least 1");
  } else if (memory != NULL && (!json_is_integer(memory) || json_integer_value(memory) < 64)) {
    status =
        fail(reply, BANLIEUE_INVALID_ARGUMENT, "InvalidSpec", "spec.memoryMiB must be at least 64");
  }
  json_decref(doc);
  return status;
}

/* ---- instances ------------------------------------------------------------------------ */

static void free_instance(banlieue_instance* instance) {
  size_t i;
  if (instance == NULL) return;
  for (i = 0; i < instance->zone_count; ++i) free(instance->zones[i]);
  free(instance->root);
  free(instance);
}

/* Parses "zones=a,b": one failure domain per lower-case name. Returns 0 on success. */
static int parse_zones(banlieue_instance* instance, const char* value) {
  const char* p = value;
  while (instance->zone_count > 0) free(instance->zones[--instance->zone_count]);
  for (;;) {
    size_t len = strcspn(p, ",");
    char* zone;
    if (len == 0 || instance->zone_count == CFILE_MAX_ZONES) return -1;
    zone = format("%.*s", (int)len, p);
    if (zone == NULL) return -1;
    instance->zones[instance->zone_count++] = zone;
    if (strspn(zone, "abcdefghijklmnopqrstuvwxyz0123456789-") != len) return -1;
    if (p[len] == '\0') return 0;
    p += len + 1;
  }
}

/* Applies the endpoint's options, joined with '&' (the part after '?', NUL-terminated and
 * writable). Returns NULL on success, else a malloc'd message. */
static char* parse_options(banlieue_instance* instance, char* query) {
  char* option = query;
  while (option != NULL) {
    char* next = strchr(option, '&');
    char* value;
    if (next != NULL) *next++ = '\0';
    value = strchr(option, '=');
    if (value != NULL) *value++ = '\0';
    if (strcmp(option, "createSeconds") == 0) {
      size_t len = value != NULL ? strlen(value) : 0;
      if (len == 0 || len > 6 || strspn(value, "0123456789") != len) {
        return format("createSeconds must be a number of seconds, got '%s'", value ? value : "");
      }
      instance->create_seconds = atoi(value);
    } else if (strcmp(option, "zones") == 0) {
      if (value == NULL || parse_zones(instance, value) != 0) {
        return format(
            "zones must be a comma-separated list of at most %d lower-case names, got '%s'",
            CFILE_MAX_ZONES, value ? value : "");
      }
    } else {
      return format(
          "the endpoint options are createSeconds=<seconds> and zones=<a,b,...>, got '%s'", option);
    }
    option = next;
  }
  return NULL;
}

/* The Provider's endpoint is file:///absolute/directory (made when missing), optionally
 * followed by ?createSeconds=N and/or zones=a,b, joined with '&'. */
static banlieue_status cfile_instance_create(const banlieue_call* call, banlieue_str config,
                                             banlieue_instance** out, banlieue_reply* reply) {
  static const char kPrefix[] = "file://";
  banlieue_status status = BANLIEUE_OK;
  json_t* doc;
  const char* endpoint;
  banlieue_instance* instance;
  char* query;
  char* problem;
  (void)call;
  *out = NULL;
  doc = parse_request(config, reply, &status);
  if (doc == NULL) return status;
  endpoint = string_or(doc, "provider.spec.connection.endpoint", "");
  if (strncmp(endpoint, kPrefix, sizeof(kPrefix) - 1) != 0 ||
      endpoint[sizeof(kPrefix) - 1] != '/') {
    status =
        failf(reply, BANLIEUE_INVALID_ARGUMENT, "InvalidEndpoint",
              format("spec.connection.endpoint must be file:///<directory>, got '%s'", endpoint));
    json_decref(doc);
    return status;
  }
  instance = calloc(1, sizeof(*instance));
  if (instance != NULL) instance->root = format("%s", endpoint + sizeof(kPrefix) - 1);
  json_decref(doc); /* endpoint pointed into doc */
  if (instance == NULL || instance->root == NULL) {
    free_instance(instance);
    return fail(reply, BANLIEUE_RESOURCE_EXHAUSTED, "OutOfMemory", NULL);
  }
  query = strchr(instance->root, '?');
  if (query != NULL) *query++ = '\0';
  problem = query != NULL ? parse_options(instance, query) : NULL;
  if (problem == NULL && instance->zone_count == 0) {
    instance->zones[0] = format("local");
    instance->zone_count = instance->zones[0] != NULL ? 1 : 0;
    if (instance->zone_count == 0) problem = format("out of memory");
  }
  if (problem != NULL) {
    free_instance(instance);
    return failf(reply, BANLIEUE_INVALID_ARGUMENT, "InvalidEndpoint", problem);
  }
  /* A provider pod's writable places are volumes that start empty (its /tmp is an emptyDir),
   * so the backend makes its directory; what cannot be made is reported here. */
  if (make_directories(instance->root) != 0 || access(instance->root, W_OK) != 0) {
    status = failf(reply, BANLIEUE_UNAVAILABLE, "BackendUnreachable",
                   format("%s is not a writable directory", instance->root));
    free_instance(instance);
    return status;
  }
  *out = instance;
  return BANLIEUE_OK;
}

static void cfile_instance_destroy(banlieue_instance* instance, const banlieue_call* call) {
  (void)call;
  free_instance(instance);
}

/* ---- introspect ----------------------------------------------------------------------- */

/* The names of the Provider's spec.capabilities.<list> entries. */
static json_t* declared_classes(json_t* provider, const char* path) {
  json_t* names = json_array();
  json_t* entry;
  size_t i;
  json_array_foreach(lookup(provider, path), i, entry) {
    const char* name = string_or(entry, "name", "");
    if (name[0] != '\0') json_array_append_new(names, json_string(name));
  }
  return names;
}

/* One failure domain per zone. A directory stores any disk and attaches no network, so every
 * storage and network class the Provider declares is available in each zone. */
static banlieue_status cfile_introspect(banlieue_instance* instance, const banlieue_call* call,
                                        banlieue_str request, banlieue_reply* reply) {
  banlieue_status status = BANLIEUE_OK;
  char host[256] = "localhost";
  json_t* doc;
  json_t* domains;
  size_t i;
  (void)call;
  /* The header does not promise a non-empty request: read an empty one as {}. */
  doc = request.len == 0 ? json_object() : parse_request(request, reply, &status);
  if (doc == NULL) return status;
  if (gethostname(host, sizeof(host) - 1) != 0) strcpy(host, "localhost");
  host[sizeof(host) - 1] = '\0';
  domains = json_array();
  for (i = 0; i < instance->zone_count; ++i) {
    json_array_append_new(
        domains,
        json_pack("{s:s, s:{s:s, s:s}, s:{s:o, s:o}}", "name", instance->zones[i], "labels", "host",
                  host, "zone", instance->zones[i], "attributes", "availableStorageClasses",
                  declared_classes(doc, "provider.spec.capabilities.storageClasses"),
                  "availableNetworkClasses",
                  declared_classes(doc, "provider.spec.capabilities.networkClasses")));
  }
  json_decref(doc);
  return reply_body(reply, json_pack("{s:o}", "failureDomains", domains), BANLIEUE_OK);
}

/* ---- reconcile and finalize ----------------------------------------------------------- */

/* What reconcile and finalize need from a request: the VM's file and the spec. */
typedef struct cfile_object {
  json_t* doc; /* the parsed request; the strings below point into it */
  const char* name;
  const char* uid;
  const char* ns;
  json_t* spec;
  char* file; /* <root>/<namespace>_<name>.json, malloc'd */
} cfile_object;

static void free_object(cfile_object* object) {
  json_decref(object->doc);
  free(object->file);
}

/* Parses a reconcile/finalize request; returns OK or the code it failed the reply with. */
static banlieue_status read_object(const banlieue_instance* instance, banlieue_str kind,
                                   banlieue_str request, banlieue_reply* reply,
                                   cfile_object* object) {
  banlieue_status status = BANLIEUE_OK;
  memset(object, 0, sizeof(*object));
  if (!str_equals(kind, CFILE_KIND)) return unsupported_kind(reply, kind);
  object->doc = parse_request(request, reply, &status);
  if (object->doc == NULL) return status;
  object->name = string_or(object->doc, "object.metadata.name", "");
  object->uid = string_or(object->doc, "object.metadata.uid", "");
  object->ns = string_or(object->doc, "object.metadata.namespace", "default");
  object->spec = lookup(object->doc, "object.spec");
  if (!safe_name(object->name) || !safe_name(object->ns)) {
    free_object(object);
    return fail(reply, BANLIEUE_INVALID_ARGUMENT, "InvalidName",
                "metadata.name and metadata.namespace must be Kubernetes names");
  }
  object->file = format("%s/%s_%s.json", instance->root, object->ns, object->name);
  if (object->file == NULL) {
    free_object(object);
    return fail(reply, BANLIEUE_RESOURCE_EXHAUSTED, "OutOfMemory", NULL);
  }
  return BANLIEUE_OK;
}

/* The zone the controller placed the machine in, when it is one of ours. */
static const char* zone_of(const banlieue_instance* instance, const cfile_object* object) {
  const char* wanted = string_or(object->spec, "failureDomain", "");
  size_t i;
  for (i = 0; i < instance->zone_count; ++i) {
    if (strcmp(instance->zones[i], wanted) == 0) return instance->zones[i];
  }
  return instance->zones[0];
}

static void journal(const banlieue_instance* instance, const char* event,
                    const cfile_object* object) {
  char* path = format("%s/journal", instance->root);
  FILE* out = path != NULL ? fopen(path, "a") : NULL;
  if (out != NULL) {
    fprintf(out, "%s %s/%s %s\n", event, object->ns, object->name, object->uid);
    fclose(out);
  }
  free(path);
}

/* A long create when the endpoint asks for one: the first call starts it and answers
 * IN_PROGRESS with a token, later calls poll it, the way a hypervisor task is polled. The
 * state lives in a marker file, not in the token, so a token from before a restart (or none)
 * is handled like a first call. Returns OK when the create is over. */
static banlieue_status long_create(const banlieue_instance* instance, const cfile_object* object,
                                   banlieue_reply* reply) {
  char* marker = format("%s.creating", object->file);
  FILE* in;
  long started = 0;
  banlieue_status status = BANLIEUE_OK;
  if (marker == NULL) return fail(reply, BANLIEUE_RESOURCE_EXHAUSTED, "OutOfMemory", NULL);
  if (access(marker, F_OK) != 0) {
    char now[32];
    snprintf(now, sizeof(now), "%ld", (long)time(NULL));
    if (write_file(marker, now) != 0) {
      status = failf(reply, BANLIEUE_UNAVAILABLE, "WriteFailed", format("cannot write %s", marker));
      free(marker);
      return status;
    }
    journal(instance, "create-started", object);
  }
  in = fopen(marker, "r");
  if (in == NULL || fscanf(in, "%ld", &started) != 1) started = 0;
  if (in != NULL) fclose(in);
  if ((long)time(NULL) - started < instance->create_seconds) {
    json_t* body = json_pack("{s:{s:s+, s:s+}}", "operation", "token", "create/", object->uid,
                             "description", "creating ", object->name);
    reply->requeue_after_ms = 500;
    sink_write(&reply->reason, "Creating"); /* IN_PROGRESS needs a CamelCase reason too */
    status = reply_body(reply, body, BANLIEUE_IN_PROGRESS);
  } else {
    remove(marker);
    journal(instance, "create-finished", object);
  }
  free(marker);
  return status;
}

static banlieue_status cfile_reconcile(banlieue_instance* instance, const banlieue_call* call,
                                       banlieue_str kind, banlieue_str request,
                                       banlieue_reply* reply) {
  cfile_object object;
  banlieue_status status;
  const char* desired;
  int powered_off;
  json_t* vm;
  char* text;
  char* provider_id;
  if (g_host->is_cancelled(g_host->host_ctx, call)) {
    return fail(reply, BANLIEUE_CANCELLED, "Cancelled", "cancelled");
  }
  status = read_object(instance, kind, request, reply, &object);
  if (status != BANLIEUE_OK) return status;
  if (instance->create_seconds > 0 && access(object.file, F_OK) != 0) {
    status = long_create(instance, &object, reply);
    if (status != BANLIEUE_OK) {
      free_object(&object);
      return status;
    }
  }
  desired = string_or(object.spec, "desiredPowerState", "PoweredOn");
  powered_off = strcmp(desired, "PoweredOff") == 0;
  vm = json_pack("{s:s, s:s, s:I, s:I, s:s, s:s, s:s}", "name", object.name, "uid", object.uid,
                 "cpus", integer_or(object.spec, "cpus", 1), "memoryMiB",
                 integer_or(object.spec, "memoryMiB", 512), "failureDomain",
                 zone_of(instance, &object), "userData", string_or(object.spec, "userData", ""),
                 "state", powered_off ? "stopped" : "running");
  text = vm != NULL ? json_dumps(vm, JSON_COMPACT) : NULL;
  json_decref(vm);
  if (text == NULL || write_file(object.file, text) != 0) {
    status =
        failf(reply, BANLIEUE_UNAVAILABLE, "WriteFailed", format("cannot write %s", object.file));
    free(text);
    free_object(&object);
    return status;
  }
  free(text);
  provider_id = format("cfile://%s", object.file);
  /* clang-format off */
  status = reply_body(reply, json_pack("{s:{s:s, s:{s:b}, s:s, s:s, s:[{s:s, s:s}]}, s:n}",
      "status",
        "providerID", provider_id != NULL ? provider_id : "",
        "initialization", "provisioned", 1,
        "failureDomain", zone_of(instance, &object),
        "observedPowerState", powered_off ? "PoweredOff" : "PoweredOn",
        "addresses", "type", "InternalIP", "address", "127.0.0.1",
      "operation"), BANLIEUE_OK); /* null: clears a token an earlier IN_PROGRESS stored */
  /* clang-format on */
  CFILE_LOG(BANLIEUE_LOG_INFO, "wrote %s", object.file);
  free(provider_id);
  free_object(&object);
  return status;
}

/* Removes the VM and any create in progress; a VM that never existed or is already gone is
 * fine: finalize is idempotent. */
static banlieue_status cfile_finalize(banlieue_instance* instance, const banlieue_call* call,
                                      banlieue_str kind, banlieue_str request,
                                      banlieue_reply* reply) {
  cfile_object object;
  banlieue_status status = read_object(instance, kind, request, reply, &object);
  char* marker;
  char why[128];
  (void)call;
  if (status != BANLIEUE_OK) return status;
  marker = format("%s.creating", object.file);
  if (marker == NULL || remove_if_present(marker) != 0 || remove_if_present(object.file) != 0) {
    status =
        failf(reply, BANLIEUE_UNAVAILABLE, "DeleteFailed",
              format("cannot remove %s: %s", object.file, error_text(errno, why, sizeof(why))));
  }
  free(marker);
  free_object(&object);
  return status;
}

/* ---- import_image --------------------------------------------------------------------- */

/* Copies `from` to `to`, checking for cancellation between blocks. Returns 0, or -1 with errno
 * set (ECANCELED when the call was cancelled). */
static int copy_file(const banlieue_call* call, const char* from, const char* to) {
  char block[64 * 1024];
  char* tmp = format("%s.tmp", to);
  FILE* in = fopen(from, "rb");
  FILE* out = tmp != NULL ? fopen(tmp, "wb") : NULL;
  int rc = in != NULL && out != NULL ? 0 : -1;
  size_t n;
  while (rc == 0 && (n = fread(block, 1, sizeof(block), in)) > 0) {
    if (fwrite(block, 1, n, out) != n) rc = -1;
    if (g_host->is_cancelled(g_host->host_ctx, call)) {
      errno = ECANCELED;
      rc = -1;
    }
  }
  if (rc == 0 && ferror(in)) rc = -1;
  if (in != NULL) fclose(in);
  if (out != NULL && fclose(out) != 0) rc = -1;
  if (rc == 0 && rename(tmp, to) != 0) rc = -1;
  if (rc != 0 && tmp != NULL) {
    int saved = errno;
    remove(tmp);
    errno = saved;
  }
  free(tmp);
  return rc;
}

static banlieue_status cfile_import_image(banlieue_instance* instance, const banlieue_call* call,
                                          banlieue_str request, banlieue_reply* reply) {
  banlieue_status status = BANLIEUE_OK;
  json_t* doc = parse_request(request, reply, &status);
  const char* image;
  const char* format_name;
  const char* artifact;
  char* images;
  char* target;
  char why[128];
  if (doc == NULL) return status;
  image = string_or(doc, "image.metadata.name", "");
  format_name = string_or(doc, "artifact.format", "");
  artifact = string_or(doc, "artifact.path", "");
  if (!safe_name(image) || !safe_name(format_name) || artifact[0] == '\0') {
    json_decref(doc);
    return fail(reply, BANLIEUE_INVALID_ARGUMENT, "MissingField",
                "import_image needs image.metadata.name, artifact.path and artifact.format");
  }
  images = format("%s/images", instance->root);
  target = format("%s/%s.%s", images != NULL ? images : "", image, format_name);
  if (images == NULL || target == NULL || make_directories(images) != 0) {
    status = fail(reply, BANLIEUE_UNAVAILABLE, "ImportFailed", "cannot make the images directory");
  } else if (copy_file(call, artifact, target) != 0) {
    status = errno == ECANCELED
                 ? fail(reply, BANLIEUE_CANCELLED, "Cancelled", "cancelled during the copy")
                 : failf(reply, BANLIEUE_UNAVAILABLE, "ImportFailed",
                         format("cannot copy the artifact to %s: %s", target,
                                error_text(errno, why, sizeof(why))));
  } else {
    status = reply_body(reply,
                        json_pack("{s:{s:s, s:s}}", "status", "failureDomain",
                                  string_or(doc, "failureDomain", ""), "path", target),
                        BANLIEUE_OK);
  }
  free(images);
  free(target);
  json_decref(doc);
  return status;
}

/* ---- the table and the entry point ---------------------------------------------------- */

/* Static storage that is never destroyed, as the host requires. */
static const banlieue_provider_v1 kProvider = {
    .header = {.magic = BANLIEUE_PROVIDER_MAGIC,
               .struct_size = sizeof(banlieue_provider_v1),
               .abi_major = BANLIEUE_ABI_MAJOR,
               .abi_minor = BANLIEUE_ABI_MINOR,
               .layout_fingerprint = BANLIEUE_V1_LAYOUT_FINGERPRINT},
    .name = CFILE_NAME,
    .provider_version = CFILE_VERSION,
    .describe = cfile_describe,
    .instance_create = cfile_instance_create,
    .instance_destroy = cfile_instance_destroy,
    .validate = cfile_validate,
    .introspect = cfile_introspect,
    .reconcile = cfile_reconcile,
    .finalize = cfile_finalize,
    .import_image = cfile_import_image,
};

BANLIEUE_PROVIDER_EXPORT const banlieue_provider_v1* banlieue_provider_v1_init(
    const banlieue_host_v1* host, uint32_t host_minor, const banlieue_sink* error) {
  static const char kBadHost[] = "cfile: the host table is not a banlieue_host_v1 of ABI 1";
  (void)host_minor; /* this plugin uses no host slot added after 1.0 */
  if (host == NULL || host->header.magic != BANLIEUE_HOST_MAGIC ||
      host->header.abi_major != BANLIEUE_ABI_MAJOR) {
    if (error != NULL) (void)error->write(error->ctx, kBadHost, sizeof(kBadHost) - 1);
    return NULL;
  }
  g_host = host;
  json_object_seed(0); /* jansson's hash seed, once, before any thread uses it */
  return &kProvider;
}
