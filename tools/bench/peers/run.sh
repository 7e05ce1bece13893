#!/usr/bin/env bash
# Runs the in-process workloads W1-W6 on Netty 4.1 and on Boost.Asio and writes one JSON
# file in Google Benchmark's schema, entries peer/netty/W1 ... peer/asio/W6.
#
#   tools/bench/peers/run.sh [--divisor=N] [--out FILE] [--build DIR] [--workloads=W1,W5]
#
#   --divisor=N   divide every workload's size by N (--divisor=1000: a smoke run of a few
#                 seconds whose figures mean nothing)
#   --out FILE    default bench-results/peers/peers_<UTC date>_<commit>.json (a folder of
#                 its own: bench-results/*.json is ./dev bench's history)
#   --build DIR   where build.sh puts the programs (default bench-results/peers-build);
#                 they are built first when missing or older than their sources
#
# Exit status: 0 when both peers ran every workload and W5 shows every cancel succeeded
# and no cancelled timer ran; 1 otherwise (the file is still written); 2 on bad usage.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"

bad_usage() { echo "run.sh: $*" >&2; exit 2; }
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }

divisor=1
out=""
build="$root/bench-results/peers-build"
workloads="W1,W2,W3,W4,W5,W6"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --divisor=*) divisor="${1#*=}" ;;
    --divisor) divisor="${2:?--divisor needs a value}"; shift ;;
    --out=*) out="${1#*=}" ;;
    --out) out="${2:?--out needs a file}"; shift ;;
    --build=*) build="${1#*=}" ;;
    --build) build="${2:?--build needs a directory}"; shift ;;
    --workloads=*) workloads="${1#*=}" ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; bad_usage "unknown argument $1" ;;
  esac
  shift
done
[[ "$divisor" =~ ^[1-9][0-9]*$ ]] || bad_usage "--divisor must be a positive integer"
[[ "$workloads" =~ ^W[1-6](,W[1-6])*$ ]] || bad_usage "--workloads must list some of W1..W6"

commit="$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo nocommit)"
if [[ -z "$out" ]]; then
  out="$root/bench-results/peers/peers_$(date -u +%Y%m%dT%H%M%SZ)_${commit}.json"
fi

progs=(netty_inproc asio_inproc netty_echo_server asio_echo_server)
stale=0
for p in "${progs[@]}"; do [[ -x "$build/$p" ]] || stale=1; done
[[ -f "$build/.built" ]] || stale=1
if [[ $stale == 0 && -n "$(find "$here" \( -name '*.java' -o -name '*.cc' -o -name '*.h' -o -name build.sh \) \
      -newer "$build/.built" -print -quit)" ]]; then
  stale=1
fi
if [[ $stale == 1 ]]; then
  "$here/build.sh" "$build"
fi

python="/usr/bin/python3"
[[ -x "$python" ]] || python="python3"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
status=0
for peer in netty asio; do
  echo "run.sh: $peer (divisor $divisor)" >&2
  if ! "$build/${peer}_inproc" --divisor="$divisor" --workloads="$workloads" \
      >"$tmp/$peer.jsonl"; then
    echo "run.sh: the $peer harness failed" >&2
    status=1
  fi
done
"$python" "$here/assemble.py" --out "$out" --divisor "$divisor" --commit "$commit" \
  --workloads "$workloads" "$tmp/netty.jsonl" "$tmp/asio.jsonl" || status=1
[[ $status == 0 ]] && echo "run.sh: results in $out" >&2
exit "$status"
