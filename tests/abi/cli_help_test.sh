#!/usr/bin/env bash
# `banlieue --help` names every role and command (in whatever order they register).
set -uo pipefail
help=$("$1" --help) || { echo "banlieue --help failed"; exit 1; }
fail=0
for command in controller operator provider imagebuilder image-import image-checksum crdgen bootstrap plugin; do
  if grep -qE "^  $command " <<<"$help"; then echo "ok   $command"; else echo "FAIL $command missing"; fail=1; fi
done
exit $fail
