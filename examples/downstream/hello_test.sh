#!/bin/sh
set -e
out="$("$1")"
[ "$out" = "the answer is 42" ] || { echo "unexpected output: $out" >&2; exit 1; }
echo "downstream ok: $out"
