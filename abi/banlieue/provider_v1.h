/*
 * banlieue_provider_v1 — the only contract between the banlieue host and a backend plugin.
 *
 * Pure C99. A plugin is a shared object that exports exactly one symbol,
 * banlieue_provider_v1_init, and hands the host a static table of function pointers.
 * Everything else (resource content) crosses as UTF-8 JSON; the envelope around it
 * (status codes, deadlines, sizes, log levels) is typed C. The reasoning is in
 * docs/adr/0001-provider-abi-v1.md; the normative contract a provider honours (every slot,
 * the fields the host reads and writes, the CRD, what the host does with each code) is
 * docs/provider-contract.md.
 *
 * EVOLUTION RULES (read before changing anything in this file)
 *  1. Append only. New fields and slots go at the END of a table, never in the middle;
 *     nothing is reordered, retyped or removed. A retired slot keeps its place and is
 *     documented as such. tests/abi/abi_layout_check.c pins offsetof/sizeof of every
 *     released field; a change that moves one fails the build.
 *  2. Every addition bumps BANLIEUE_ABI_MINOR and carries "SINCE: 1.<minor>".
 *  3. A table's header.struct_size is the size the writer was compiled with. The reader
 *     copies min(struct_size, its own sizeof) bytes into a zeroed local, so slots a
 *     shorter (older) table does not have read as NULL. The host reports a NULL slot as
 *     BANLIEUE_UNIMPLEMENTED; a plugin tests a host slot with BANLIEUE_HOST_HAS().
 *  4. An incompatible change is a new major: a new header (provider_v2.h), a new entry
 *     symbol (banlieue_provider_v2_init) and new table types. A host may probe for v2
 *     and fall back to v1.
 *  5. Status codes and log levels only grow; their values never change.
 *
 * OWNERSHIP vocabulary used in slot comments
 *  - "borrowed": valid only for the duration of the call; copy what you keep.
 *  - "host-owned"/"plugin-owned": who frees it. Ownership never crosses the boundary:
 *    inputs are borrowed banlieue_str, outputs go through a host-owned banlieue_sink that
 *    copies at once, and plugin objects (instances) are released by the plugin itself.
 *
 * THREADS vocabulary: "serialized" = the host never runs two serialized slots of one plugin
 * at the same time (init, instance_create, instance_destroy), but may use any thread for
 * them; "any-thread" = may run concurrently with other calls on the same instance, but never
 * two calls for the same object_uid at once (the host's work queue guarantees it).
 *
 * REPLY BODY RULES (every slot that takes a banlieue_reply)
 *  - The plugin writes the body for EVERY code it returns, not only OK: a plugin that fails
 *    after starting a backend task still reports the task. Which parts of it the host applies
 *    for which code is in docs/provider-contract.md ("The reply"); banlieue's host applies
 *    the body of OK and IN_PROGRESS replies.
 *  - "status": fields of the object's status the plugin owns; applied when present.
 *  - "operation": {"token": ...} with IN_PROGRESS stores a token the next call gets back in
 *    its request; OK clears the stored token; "operation": null says there is no task.
 *  - "settled": true with OK (reconcile only) says the machine is at rest: until its inputs
 *    change a call would change nothing, so the host may leave out the passes that change none
 *    of them. Optional JSON, not a slot or field of this header: absent (what a plugin built
 *    before it sends) means not at rest, and a host built before it ignores it
 *    (docs/provider-contract.md, "Settled replies").
 *  - A token the plugin does not recognise (minted before a restart) is treated as absent:
 *    the plugin re-derives the state from the backend and answers as for a first call. So is
 *    a missing token: the host may not have stored it (after a failure, or a terminal code).
 */
#ifndef BANLIEUE_PROVIDER_V1_H
#define BANLIEUE_PROVIDER_V1_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------
 * Versions and identification
 * ------------------------------------------------------------------------------------- */

#define BANLIEUE_ABI_MAJOR 1
#define BANLIEUE_ABI_MINOR 4

/* "BNLP" and "BNLH": catch a garbage pointer or a table of the wrong kind. */
#define BANLIEUE_PROVIDER_MAGIC 0x424E4C50u
#define BANLIEUE_HOST_MAGIC 0x424E4C48u

/* The one exported symbol, by name, for loaders that look it up as a string. */
#define BANLIEUE_PROVIDER_V1_INIT_SYMBOL "banlieue_provider_v1_init"

/* Marks the entry point for export (plugins build with hidden visibility). */
#if defined(_WIN32)
#define BANLIEUE_PROVIDER_EXPORT __declspec(dllexport)
#elif defined(__GNUC__) || defined(__clang__)
#define BANLIEUE_PROVIDER_EXPORT __attribute__((visibility("default")))
#else
#define BANLIEUE_PROVIDER_EXPORT
#endif

/* A fixed probe whose size depends on pointer width, size_t, int64 alignment and struct
 * packing. Host and plugin each compute the fingerprint from their own compiler's view;
 * a mismatch means the plugin was built for another platform or with odd packing flags.
 * Never change this struct. */
typedef struct banlieue_layout_probe_v1 {
  char c;
  int64_t i64;
  void* ptr;
  size_t size;
  int32_t i32;
  double dbl;
  void (*fn)(void);
} banlieue_layout_probe_v1;

#define BANLIEUE_V1_LAYOUT_FINGERPRINT                                                          \
  ((uint32_t)0xB1000000u | ((uint32_t)sizeof(void*) << 16) | ((uint32_t)sizeof(size_t) << 12) | \
   ((uint32_t)sizeof(banlieue_layout_probe_v1)))

/* Common header of both tables. */
typedef struct banlieue_table_header {
  uint32_t magic;              /* BANLIEUE_PROVIDER_MAGIC or BANLIEUE_HOST_MAGIC */
  uint32_t struct_size;        /* sizeof the whole table as its writer compiled it */
  uint16_t abi_major;          /* BANLIEUE_ABI_MAJOR the writer compiled against */
  uint16_t abi_minor;          /* BANLIEUE_ABI_MINOR the writer compiled against */
  uint32_t layout_fingerprint; /* BANLIEUE_V1_LAYOUT_FINGERPRINT as the writer saw it */
} banlieue_table_header;

/* ---------------------------------------------------------------------------------------
 * Status codes
 * ------------------------------------------------------------------------------------- */

/* Canonical codes (the values of google.rpc.Code) plus IN_PROGRESS, which is not an error:
 * the call started or advanced a long backend task and wants to be called again. The
 * host maps each code to requeue / backoff / terminal behaviour in one table
 * (host/plugin/status_policy.cc; docs/provider-contract.md, "Status codes"). */
typedef int32_t banlieue_status;
#define BANLIEUE_OK 0
#define BANLIEUE_CANCELLED 1
#define BANLIEUE_UNKNOWN 2
#define BANLIEUE_INVALID_ARGUMENT 3
#define BANLIEUE_DEADLINE_EXCEEDED 4
#define BANLIEUE_NOT_FOUND 5
#define BANLIEUE_ALREADY_EXISTS 6
#define BANLIEUE_PERMISSION_DENIED 7
#define BANLIEUE_RESOURCE_EXHAUSTED 8
#define BANLIEUE_FAILED_PRECONDITION 9
#define BANLIEUE_ABORTED 10
#define BANLIEUE_OUT_OF_RANGE 11
#define BANLIEUE_UNIMPLEMENTED 12
#define BANLIEUE_INTERNAL 13
#define BANLIEUE_UNAVAILABLE 14
#define BANLIEUE_DATA_LOSS 15
#define BANLIEUE_UNAUTHENTICATED 16
#define BANLIEUE_IN_PROGRESS 100

/* Log levels, in spdlog's order so the host can cast them. */
typedef int32_t banlieue_log_level;
#define BANLIEUE_LOG_TRACE 0
#define BANLIEUE_LOG_DEBUG 1
#define BANLIEUE_LOG_INFO 2
#define BANLIEUE_LOG_WARN 3
#define BANLIEUE_LOG_ERROR 4
#define BANLIEUE_LOG_CRITICAL 5

/* Kubernetes event types. */
typedef int32_t banlieue_event_type;
#define BANLIEUE_EVENT_NORMAL 0
#define BANLIEUE_EVENT_WARNING 1

/* ---------------------------------------------------------------------------------------
 * Strings, sinks, calls and replies
 * ------------------------------------------------------------------------------------- */

/* A UTF-8 string that is NOT NUL-terminated unless stated otherwise.
 * OWNERSHIP: borrowed; valid only until the call that received it returns. */
typedef struct banlieue_str {
  const char* data;
  size_t len;
} banlieue_str;

/* Where a plugin writes output. write() copies the bytes at once and may be called
 * several times; the pieces are concatenated. It returns 0 when the bytes were taken and
 * non-zero when the host refuses more (a size cap was reached: bodies 8 MiB, messages
 * 32 KiB, reasons 128 bytes); the plugin should then stop writing to that sink.
 * OWNERSHIP: host-owned; the sink and ctx are valid only during the call that received it.
 * THREADS: only from the thread that is running the call. */
typedef struct banlieue_sink {
  void* ctx;
  int32_t (*write)(void* ctx, const char* data, size_t len);
} banlieue_sink;

/* The envelope the host builds for every call after init.
 * OWNERSHIP: borrowed (host-owned; valid during the call). */
typedef struct banlieue_call {
  uint32_t struct_size;     /* sizeof(banlieue_call) as the host compiled it */
  uint32_t attempt;         /* 0 on the first try of this object at this generation */
  uint64_t call_id;         /* unique per process; use it in logs to correlate */
  int64_t deadline_unix_ms; /* wall-clock deadline (ms since the Unix epoch); plugins pass
                               the remaining time to their backend client's timeouts.
                               0 means none (the host always sets one; tests may not) */
  banlieue_str object_uid;  /* metadata.uid of the object; the Provider's uid for
                               introspect and instance slots; empty for describe */
  void* host_call_ctx;      /* opaque; pass back to host slots that take a call */
} banlieue_call;

/* Where a plugin reports the outcome of a call.
 * OWNERSHIP: host-owned; valid during the call. The plugin writes through the sinks and
 * may set requeue_after_ms; it never keeps a pointer to this struct.
 *  body:    the operation's JSON result (schemas under sdk/schemas/)
 *  message: human-readable detail for a non-OK status; shown in a Condition message.
 *           Required for every code but OK and IN_PROGRESS
 *  reason:  CamelCase, no spaces (e.g. "CloneFailed"); becomes the Condition reason.
 *           Required for every code but OK
 * On OK write neither: the host ignores the reason, and the message too except for
 * import_image, whose OK message (if any) becomes the image import's message. */
typedef struct banlieue_reply {
  uint32_t struct_size;
  uint32_t reserved0; /* zero */
  banlieue_sink body;
  banlieue_sink message;
  banlieue_sink reason;
  int64_t requeue_after_ms; /* in: -1. out: plugin's hint for when to call again; the host
                               clamps it (docs/provider-contract.md says for which codes) */
} banlieue_reply;

/* True when a struct stamped with struct_size (banlieue_call, banlieue_reply) is long enough
 * to hold `field`. Read or write a field appended after 1.0 only when this holds. */
#define BANLIEUE_STRUCT_HAS(ptr, type, field) \
  ((ptr) != NULL && (ptr)->struct_size >= offsetof(type, field) + sizeof((ptr)->field))

/* An instance is one connection to one backend (one Provider). Opaque to the host: the
 * plugin defines struct banlieue_instance itself (the SDK does for C++ plugins).
 * OWNERSHIP: plugin-owned; released only by instance_destroy. */
typedef struct banlieue_instance banlieue_instance;

/* A console is one open byte stream to one machine's console (console_open, SINCE 1.3).
 * Opaque to the host: the plugin defines struct banlieue_console itself (the SDK does).
 * OWNERSHIP: plugin-owned; released only by console_close, always before instance_destroy of
 * the instance that opened it. */
typedef struct banlieue_console banlieue_console;

/* ---------------------------------------------------------------------------------------
 * Host services (the host fills this; the plugin keeps the pointer)
 * ------------------------------------------------------------------------------------- */

typedef struct banlieue_host_v1 {
  banlieue_table_header header;

  /* Opaque; the first argument of every host slot.
   * SINCE: 1.0 */
  void* host_ctx;

  /* Writes one log line to this plugin's logger ("provider.<name>"). msg need not be
   * NUL-terminated; file may be NULL.
   * OWNERSHIP: all arguments borrowed. THREADS: any-thread, including plugin-created
   * threads. SINCE: 1.0 */
  void (*log)(void* host_ctx, banlieue_log_level level, const char* file, int32_t line,
              const char* msg, size_t len);

  /* Non-zero when a line at this level would be written; check before formatting.
   * THREADS: any-thread. SINCE: 1.0 */
  int32_t (*log_enabled)(void* host_ctx, banlieue_log_level level);

  /* Non-zero once the call should stop: its deadline passed, the process is shutting down,
   * or leadership was lost. Plugins check it between backend steps and return
   * BANLIEUE_CANCELLED (or IN_PROGRESS with an operation token to resume later).
   * OWNERSHIP: call borrowed. THREADS: any thread (e.g. a watchdog that aborts a blocking
   * backend call), but only while the call is in flight: never after it has returned.
   * SINCE: 1.0 */
  int32_t (*is_cancelled)(void* host_ctx, const banlieue_call* call);

  /* Records a Kubernetes Event on the object the call is about (the host aggregates
   * repeats). reason is CamelCase; message is human-readable. Never put secrets in it.
   * OWNERSHIP: all arguments borrowed. THREADS: the thread running the call. SINCE: 1.0 */
  void (*emit_event)(void* host_ctx, const banlieue_call* call, banlieue_event_type type,
                     banlieue_str reason, banlieue_str message);

  /* Milliseconds left before the call must stop, on a monotonic clock (immune to wall-clock
   * jumps, unlike deadline_unix_ms): 0 once the call is cancelled or its deadline passed, -1
   * when it has no deadline. Plugins size their backend client's timeouts from it.
   * Test with BANLIEUE_HOST_HAS(host, remaining_ms); a 1.0 host does not have it (fall back
   * to deadline_unix_ms).
   * OWNERSHIP: call borrowed. THREADS: any thread, only while the call is in flight.
   * SINCE: 1.1 */
  int64_t (*remaining_ms)(void* host_ctx, const banlieue_call* call);
} banlieue_host_v1;

/* True when the host table is long enough to hold `slot` and the slot is set. Plugins
 * must use it before calling any host slot added after 1.0. */
#define BANLIEUE_HOST_HAS(host, slot)                                                       \
  ((host) != NULL &&                                                                        \
   (host)->header.struct_size >= offsetof(banlieue_host_v1, slot) + sizeof((host)->slot) && \
   (host)->slot != NULL)

/* ---------------------------------------------------------------------------------------
 * The provider table (the plugin fills this, statically)
 *
 * Long operations are level-triggered. A call does one bounded step. When a backend task
 * (a vSphere CloneVM_Task, a Proxmox UPID, a background libvirt volume upload) outlives
 * the call, the plugin returns BANLIEUE_IN_PROGRESS and puts {"operation":{"token":...}}
 * in the reply body; the host stores it in the object's .status and passes it back on the
 * next call, which polls it (see REPLY BODY RULES at the top). Every step is idempotent.
 * ------------------------------------------------------------------------------------- */

typedef struct banlieue_provider_v1 {
  banlieue_table_header header;

  /* Backend name ("libvirt"), NUL-terminated, matching provider.json "name".
   * OWNERSHIP: plugin-owned static storage. SINCE: 1.0 */
  const char* name;

  /* The plugin's own version (semver), NUL-terminated.
   * OWNERSHIP: plugin-owned static storage. SINCE: 1.0 */
  const char* provider_version;

  /* Capabilities document (sdk/schemas/describe.response.json): infra kinds served with
   * their operations, and features. No I/O; must succeed without an instance.
   * OWNERSHIP: call and reply borrowed. THREADS: any-thread. SINCE: 1.0 */
  banlieue_status (*describe)(const banlieue_call* call, banlieue_reply* reply);

  /* Opens one backend connection for one Provider. config is
   * sdk/schemas/instance_create.request.json: the Provider object and the decoded data of
   * its credentials Secret; a CA bundle the Provider names arrives resolved, as PEM, in
   * spec.connection.caBundle.data. May do I/O (log in) within the call's deadline. On success
   * *out is set and must later be passed to instance_destroy; on failure *out stays NULL.
   * The reply has no body: the host reads the code, reason and message only.
   * OWNERSHIP: config borrowed (copy credentials you keep, and wipe them on destroy);
   * *out plugin-owned. THREADS: serialized. SINCE: 1.0 */
  banlieue_status (*instance_create)(const banlieue_call* call, banlieue_str config,
                                     banlieue_instance** out, banlieue_reply* reply);

  /* Closes the connection (log out, remove temp files) and frees the instance. Joins any
   * thread the instance started, cancelling backend work so it finishes by the call's
   * deadline. Never fails. No other call on the instance may be running or start afterwards.
   * OWNERSHIP: instance released; call borrowed. THREADS: serialized. SINCE: 1.0 */
  void (*instance_destroy)(banlieue_instance* instance, const banlieue_call* call);

  /* Validates an object of one of the plugin's kinds (or a Provider) without I/O, so an
   * admission webhook may call it. kind is the object's bare kind: one the plugin serves
   * (e.g. "LibvirtMachine"), or "Provider" for a banlieue Provider of this backend. request
   * is sdk/schemas/validate.request.json: {"operation": CREATE|UPDATE|DELETE, "object",
   * "oldObject"} (oldObject on UPDATE, so immutable fields can be enforced).
   * INVALID_ARGUMENT with a message naming the field on failure; reply body is
   * sdk/schemas/validate.response.json (warnings).
   * OWNERSHIP: all borrowed. THREADS: any-thread. SINCE: 1.0 */
  banlieue_status (*validate)(const banlieue_call* call, banlieue_str kind, banlieue_str request,
                              banlieue_reply* reply);

  /* Walks the backend's inventory and reports verified failure domains. request is
   * sdk/schemas/introspect.request.json: the Provider object as it is now (its declared
   * capabilities may have changed since instance_create) and the operation token of a walk
   * still in progress; a large inventory may take several calls (IN_PROGRESS + token). The
   * request is never empty: "provider" is always there.
   * The reply body is sdk/schemas/introspect.response.json.
   * OWNERSHIP: all borrowed. THREADS: any-thread. SINCE: 1.0 */
  banlieue_status (*introspect)(banlieue_instance* instance, const banlieue_call* call,
                                banlieue_str request, banlieue_reply* reply);

  /* Drives one object of a served kind one step towards its spec. request is
   * sdk/schemas/reconcile.request.json (kind, object, resolved references, operation
   * token); the reply body is sdk/schemas/reconcile.response.json (status fields the
   * plugin owns, an operation token when IN_PROGRESS).
   * OWNERSHIP: all borrowed. THREADS: any-thread, never twice for one object_uid.
   * SINCE: 1.0 */
  banlieue_status (*reconcile)(banlieue_instance* instance, const banlieue_call* call,
                               banlieue_str kind, banlieue_str request, banlieue_reply* reply);

  /* Tears down what reconcile made for the object; the host removes its finalizer only
   * after OK. Must cope with reconcile never having succeeded, and with the backend
   * object already being gone (OK, not NOT_FOUND). Same payload shapes as reconcile.
   * OWNERSHIP: all borrowed. THREADS: any-thread, never twice for one object_uid.
   * SINCE: 1.0 */
  banlieue_status (*finalize)(banlieue_instance* instance, const banlieue_call* call,
                              banlieue_str kind, banlieue_str request, banlieue_reply* reply);

  /* Pushes a verified image artifact into one failure domain of the backend
   * (sdk/schemas/import_image.request.json: the VMImage, the artifact's local path,
   * format, size and sha256 already checked by the host, the target failure domain). The
   * reply body is sdk/schemas/reconcile.response.json (status.resolvedRef on OK).
   * Long uploads return IN_PROGRESS with a token like reconcile. The host keeps one token
   * per (image, failure domain) and runs at most one import per pair at a time; the call's
   * object_uid is the VMImage's uid.
   * OWNERSHIP: all borrowed. THREADS: any-thread. SINCE: 1.0 */
  banlieue_status (*import_image)(banlieue_instance* instance, const banlieue_call* call,
                                  banlieue_str request, banlieue_reply* reply);

  /* Removes an image this plugin imported from one failure domain of the backend (the
   * template, volume or disk import_image made), when its VMImage is deleted without
   * spec.retainOnDelete. request is sdk/schemas/delete_image.request.json: the VMImage, the
   * failure domain, the resolvedRef the import reported, and the token of a deletion in
   * progress. OK when the image is gone, including when it never existed or was removed out
   * of band; IN_PROGRESS with a token while a backend task runs; FAILED_PRECONDITION with
   * reason "ImageInUse" while machines still use it (the host retries). The reply body is
   * sdk/schemas/reconcile.response.json ("operation" only). A plugin that serves it says so
   * in describe (operations.deleteImage). The call's object_uid is the VMImage's uid; the
   * host runs at most one import or deletion per (image, failure domain) at a time.
   * OWNERSHIP: all borrowed. THREADS: any-thread. SINCE: 1.1 */
  banlieue_status (*delete_image)(banlieue_instance* instance, const banlieue_call* call,
                                  banlieue_str request, banlieue_reply* reply);

  /* Takes, lists, reverts to or deletes snapshots of one machine this plugin reconciled (a
   * VirtualMachineSnapshot or VirtualMachineRestore). request is
   * sdk/schemas/snapshot.request.json: {"action": "create"|"list"|"revert"|"delete",
   * "kind": the machine's infrastructure kind, "machine": the infrastructure object (its
   * spec.providerID names the backend VM), "snapshot": {"name", "uid", "memory",
   * "description"} (not for list), "snapshotRef": what create reported (revert, delete) and
   * "operation": the token of a task in progress}. The reply body is
   * sdk/schemas/snapshot.response.json: "status" ({"snapshotRef", "createdAt", "sizeBytes"}
   * on create; {"snapshots": [...]} on list) and "operation" as for reconcile.
   *  - create: OK once the snapshot exists. snapshot.name is the backend-side name and makes
   *    create idempotent: a create whose reply was lost finds its snapshot by that name and
   *    answers OK with the same snapshotRef, never making a second one.
   *  - revert: OK once the machine's disks (and memory, when the snapshot holds it) are the
   *    snapshot's; the machine's next reconcile brings its power state back to its spec.
   *    NOT_FOUND with reason "SnapshotNotFound" when the backend no longer has it.
   *  - delete: OK when the snapshot is gone, including when it never existed.
   *  - list: OK with every snapshot the backend holds for the machine, banlieue's or not.
   * FAILED_PRECONDITION with reason "MachineNotProvisioned" when the machine has no backend
   * VM yet; UNIMPLEMENTED with reason "NotSupportedByBackend" for an action the backend
   * cannot do (e.g. memory snapshots). A plugin that serves it says so in describe
   * (operations.snapshot). The call's object_uid is the MACHINE's uid, so snapshot calls on
   * one machine never overlap each other or the machine's reconcile and finalize.
   * OWNERSHIP: all borrowed. THREADS: any-thread, never twice for one object_uid. SINCE: 1.2 */
  banlieue_status (*snapshot)(banlieue_instance* instance, const banlieue_call* call,
                              banlieue_str request, banlieue_reply* reply);

  /* Opens a console of one machine this plugin reconciled. request is
   * sdk/schemas/console.request.json: {"kind": the machine's infrastructure kind, "machine":
   * the infrastructure object (its spec.providerID names the backend VM), "console":
   * "serial" or "webmks"}. For "serial", on OK *out is an open stream of the machine's serial
   * console (what the guest writes to its first serial port, and what it reads from it), to be
   * read and written with console_read and console_write and released with console_close; on
   * any other code *out stays NULL. "webmks" is a ticket console: the backend hands out a
   * short-lived ticket for its own graphical console (vSphere's AcquireTicket), so on OK *out
   * stays NULL and the reply's status.url ("wss://<host>:<port>/ticket/<ticket>", required)
   * with status.expiresInSeconds is the answer; the URL is a credential, which neither side
   * logs. The reply body is sdk/schemas/console.response.json ({"status": {"console",
   * "description", "url", "expiresInSeconds"}}: which console it is, in words for the person
   * at the terminal). A plugin that does not know a kind answers INVALID_ARGUMENT or
   * UNIMPLEMENTED, which the host reports as it is.
   * FAILED_PRECONDITION with reason "MachineNotProvisioned" when the machine has no backend VM
   * yet, "MachineNotRunning" when the backend has no console for it while it is off, and
   * "ConsoleBusy" when the backend allows one console at a time and another holds it;
   * UNIMPLEMENTED with reason "NotSupportedByBackend" for a console kind the backend does not
   * have. A plugin that serves it says so in describe (operations.console). The call's
   * object_uid is the machine's uid; the call is bounded by its deadline like any other, the
   * console it opens is not (it lives until console_close).
   * OWNERSHIP: call, request and reply borrowed; *out plugin-owned.
   * THREADS: any-thread, never twice for one object_uid. SINCE: 1.3 */
  banlieue_status (*console_open)(banlieue_instance* instance, const banlieue_call* call,
                                  banlieue_str request, banlieue_console** out,
                                  banlieue_reply* reply);

  /* Reads what the console produced: up to len bytes into buf, waiting at most timeout_ms
   * (0: do not wait) for the first byte. OK with *n > 0 when bytes came; OK with *n == 0 when
   * none came in time; OUT_OF_RANGE once the stream has ended (the machine powered off, the
   * backend closed it) and from then on. Any other code is an error of the stream, which then
   * should be closed. Never blocks longer than timeout_ms plus the backend's own round trip.
   * OWNERSHIP: buf host-owned, written by the plugin (up to len bytes); n host-owned.
   * THREADS: one console_read at a time per console, which may run while console_write runs on
   * another thread; never during or after console_close. SINCE: 1.3 */
  banlieue_status (*console_read)(banlieue_console* console, char* buf, size_t len,
                                  int32_t timeout_ms, size_t* n);

  /* Sends len bytes of input to the console, as typed at a terminal. OK with *n the bytes
   * taken (at least one when len > 0; the host writes the rest again); OUT_OF_RANGE once the
   * stream has ended. May block until the backend takes the bytes, bounded by the backend's
   * own round trip.
   * OWNERSHIP: data borrowed; n host-owned.
   * THREADS: one console_write at a time per console, which may run while console_read runs
   * on another thread; never during or after console_close. SINCE: 1.3 */
  banlieue_status (*console_write)(banlieue_console* console, const char* data, size_t len,
                                   size_t* n);

  /* Closes the stream and frees the console. Never fails. Called once per console opened,
   * after its last console_read and console_write have returned.
   * OWNERSHIP: console released. THREADS: any-thread. SINCE: 1.3 */
  void (*console_close)(banlieue_console* console);

  /* Follows what changes at the backend for ALL of this instance's machines at once, so that
   * machines at rest cost the backend nothing per machine: one PropertyCollector
   * WaitForUpdatesEx on vSphere, domain lifecycle events on libvirt, one listing of the
   * cluster's guests on Proxmox VE. request is sdk/schemas/watch_changes.request.json:
   * {"cursor": the cursor of the last OK reply, "" on the first call of this instance}. The reply
   * body is sdk/schemas/watch_changes.response.json: {"cursor": opaque, non-empty, "changed":
   * [the spec.providerID of every machine that changed since the request's cursor], "all": true
   * when the plugin cannot tell which changed}.
   *  - The first call (cursor "") starts following and answers OK at once, with a cursor and
   *    nothing changed: a change is one after that answer. The host makes it before it relies
   *    on the feed, and checks the machines it reconciled before it once more.
   *  - Any later call answers as soon as something changed since its cursor, or when its
   *    deadline is near (OK, nothing changed): a long poll, bounded like every call.
   *  - A change is anything a reconcile would report differently or correct: power state,
   *    configuration edited out of band, the VM gone. Reporting the plugin's own changes, or a
   *    change twice, costs one needless reconcile; missing one leaves the machine wrong until
   *    its next inputs change, so when in doubt (a cursor the plugin does not know, events
   *    lost across a reconnect) answer "all": true.
   * The host then reconciles what changed, and while the feed answers it makes no per-machine
   * drift check; when the feed fails it falls back to those checks and retries with the same
   * cursor. A plugin that serves it says so in describe (operations.watchChanges). The call's
   * object_uid is the Provider's uid; the host runs at most one at a time per instance, beside
   * any other call.
   * OWNERSHIP: all borrowed. THREADS: any-thread, one at a time per instance. SINCE: 1.4 */
  banlieue_status (*watch_changes)(banlieue_instance* instance, const banlieue_call* call,
                                   banlieue_str request, banlieue_reply* reply);

  /* New slots are appended here, each with SINCE: 1.<minor>. */
} banlieue_provider_v1;

/* The entry point every plugin exports (and nothing else).
 * host: the host's services, valid until the process exits; the plugin may keep it.
 * host_minor: the highest BANLIEUE_ABI_MINOR the host implements.
 * error: where to write a message when returning NULL; never NULL.
 * Returns a pointer to a static table, or NULL after writing why to error. The table and
 * the strings it points to must stay valid until the process exits (static storage that
 * is never destroyed: the host destroys every instance before exit but does not unload).
 * OWNERSHIP: host host-owned (process lifetime); error borrowed; result plugin-owned static.
 * THREADS: serialized, once per process. SINCE: 1.0 */
typedef const banlieue_provider_v1* (*banlieue_provider_v1_init_fn)(const banlieue_host_v1* host,
                                                                    uint32_t host_minor,
                                                                    const banlieue_sink* error);

/* The prototype every plugin defines, so a wrong signature fails to compile. */
BANLIEUE_PROVIDER_EXPORT const banlieue_provider_v1* banlieue_provider_v1_init(
    const banlieue_host_v1* host, uint32_t host_minor, const banlieue_sink* error);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* BANLIEUE_PROVIDER_V1_H */
