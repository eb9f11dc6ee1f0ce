/* Compiled as strict C99 (-std=c99 -Wall -Wextra -pedantic -Werror) as part of the build.
 * Pins the offset and size of every released field of banlieue_provider_v1.h on LP64
 * platforms: appending a field is allowed (update the table's total size here), moving or
 * resizing one breaks the build. Run as a test, it prints the layout it checked. */
#include <banlieue/provider_v1.h>
#include <stdio.h>

#define PIN(cond, name) typedef char pin_##name[(cond) ? 1 : -1]
#define AT(type, field, off) PIN(offsetof(type, field) == (off), type##_##field)

#if UINTPTR_MAX == 0xFFFFFFFFFFFFFFFFu
PIN(sizeof(banlieue_str) == 16, str_size);
PIN(sizeof(banlieue_sink) == 16, sink_size);
PIN(sizeof(banlieue_layout_probe_v1) == 56, probe_size);
PIN(BANLIEUE_V1_LAYOUT_FINGERPRINT == 0xB1088038u, fingerprint);

AT(banlieue_table_header, magic, 0);
AT(banlieue_table_header, struct_size, 4);
AT(banlieue_table_header, abi_major, 8);
AT(banlieue_table_header, abi_minor, 10);
AT(banlieue_table_header, layout_fingerprint, 12);
PIN(sizeof(banlieue_table_header) == 16, header_size);

AT(banlieue_call, struct_size, 0);
AT(banlieue_call, attempt, 4);
AT(banlieue_call, call_id, 8);
AT(banlieue_call, deadline_unix_ms, 16);
AT(banlieue_call, object_uid, 24);
AT(banlieue_call, host_call_ctx, 40);
PIN(sizeof(banlieue_call) >= 48, call_size);

AT(banlieue_reply, struct_size, 0);
AT(banlieue_reply, reserved0, 4);
AT(banlieue_reply, body, 8);
AT(banlieue_reply, message, 24);
AT(banlieue_reply, reason, 40);
AT(banlieue_reply, requeue_after_ms, 56);
PIN(sizeof(banlieue_reply) >= 64, reply_size);

/* 1.0 */
AT(banlieue_host_v1, header, 0);
AT(banlieue_host_v1, host_ctx, 16);
AT(banlieue_host_v1, log, 24);
AT(banlieue_host_v1, log_enabled, 32);
AT(banlieue_host_v1, is_cancelled, 40);
AT(banlieue_host_v1, emit_event, 48);
AT(banlieue_host_v1, remaining_ms, 56);         /* SINCE 1.1 */
PIN(sizeof(banlieue_host_v1) == 64, host_size); /* grows only when a slot is appended */

/* 1.0 */
AT(banlieue_provider_v1, header, 0);
AT(banlieue_provider_v1, name, 16);
AT(banlieue_provider_v1, provider_version, 24);
AT(banlieue_provider_v1, describe, 32);
AT(banlieue_provider_v1, instance_create, 40);
AT(banlieue_provider_v1, instance_destroy, 48);
AT(banlieue_provider_v1, validate, 56);
AT(banlieue_provider_v1, introspect, 64);
AT(banlieue_provider_v1, reconcile, 72);
AT(banlieue_provider_v1, finalize, 80);
AT(banlieue_provider_v1, import_image, 88);
AT(banlieue_provider_v1, delete_image, 96);              /* SINCE 1.1 */
AT(banlieue_provider_v1, snapshot, 104);                 /* SINCE 1.2 */
AT(banlieue_provider_v1, console_open, 112);             /* SINCE 1.3 */
AT(banlieue_provider_v1, console_read, 120);             /* SINCE 1.3 */
AT(banlieue_provider_v1, console_write, 128);            /* SINCE 1.3 */
AT(banlieue_provider_v1, console_close, 136);            /* SINCE 1.3 */
AT(banlieue_provider_v1, watch_changes, 144);            /* SINCE 1.4 */
PIN(sizeof(banlieue_provider_v1) == 152, provider_size); /* grows only when a slot is appended */
#endif

PIN(BANLIEUE_IN_PROGRESS == 100 && BANLIEUE_UNAUTHENTICATED == 16 && BANLIEUE_OK == 0, codes);
PIN(BANLIEUE_LOG_TRACE == 0 && BANLIEUE_LOG_CRITICAL == 5, levels);

int main(void) {
  printf(
      "banlieue ABI %d.%d: host table %lu bytes, provider table %lu bytes, fingerprint 0x%08lX\n",
      BANLIEUE_ABI_MAJOR, BANLIEUE_ABI_MINOR, (unsigned long)sizeof(banlieue_host_v1),
      (unsigned long)sizeof(banlieue_provider_v1), (unsigned long)BANLIEUE_V1_LAYOUT_FINGERPRINT);
  return 0;
}
