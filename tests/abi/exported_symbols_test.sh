#!/usr/bin/env bash
# Every plugin .so under the given roots must export exactly one function symbol,
# banlieue_provider_v1_init (the missing_symbol test variant exports none, and the
# extra_export variant one more, on purpose: `plugin check` must catch it).
set -euo pipefail
status=0
checked=0
for root in "$@"; do
  [ -d "$root" ] || continue
  while IFS= read -r -d '' lib; do
    checked=$((checked + 1))
    exported=$(nm -D --defined-only "$lib" | awk '$2 == "T" || $2 == "W" || $2 == "i" { sub(/@.*/, "", $3); print $3 }')
    expected="banlieue_provider_v1_init"
    case "$lib" in
      */missing_symbol/*) expected="" ;;
      */extra_export/*) expected=$'banlieue_provider_v1_init\nbanlieue_test_extra_export' ;;
    esac
    if [ "$exported" != "$expected" ]; then
      echo "FAIL $lib exports [${exported//$'\n'/ }], expected [$expected]"
      status=1
    else
      echo "ok   $lib exports [${exported}]"
    fi
  done < <(find "$root" -name '*.so' -print0)
done
[ "$checked" -gt 0 ] || { echo "FAIL no plugin found under $*"; exit 1; }
echo "$checked plugin(s) checked"
exit $status
