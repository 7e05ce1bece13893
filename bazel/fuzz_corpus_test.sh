#!/bin/sh
# Replays a fuzz target's seed corpus: $1 is the target binary, the rest corpus files.
set -e
bin="$1"
shift
[ "$#" -gt 0 ] || { echo "fuzz_corpus_test: empty corpus" >&2; exit 1; }
exec "$bin" "$@"
