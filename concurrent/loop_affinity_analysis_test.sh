#!/usr/bin/env bash
# Shows that LoopAffinity is checked at compile time: a snippet that touches a
# loop-confined member only after AssertOnLoop() compiles under clang's
# -Wthread-safety -Werror; the same snippet with an off-loop access does not.
set -euo pipefail

CXX=""
for c in clang++-14 clang++; do
  if command -v "$c" >/dev/null 2>&1; then CXX="$c"; break; fi
done
[[ -n "$CXX" ]] || { echo "FAIL: no clang++ (install clang-14: ./dev setup)"; exit 1; }

root="${TEST_SRCDIR}/${TEST_WORKSPACE}"
inc="$(mktemp -d "${TEST_TMPDIR:-/tmp}/inc.XXXXXX")"
mkdir -p "$inc/gyre/concurrent"
cp "$root/concurrent/loop_affinity.h" "$inc/gyre/concurrent/"
snippet="$root/concurrent/testdata/loop_affinity_snippet.cc"
flags=(-std=c++20 -fsyntax-only -Wthread-safety -Werror=thread-safety-analysis -I"$inc")

if ! "$CXX" "${flags[@]}" "$snippet"; then
  echo "FAIL: the on-loop snippet should compile"
  exit 1
fi
if out="$("$CXX" "${flags[@]}" -DOFF_LOOP "$snippet" 2>&1)"; then
  echo "FAIL: an off-loop access compiled; the analysis does not see LoopAffinity"
  exit 1
fi
if ! grep -q "requires holding mutex 'affinity_'" <<<"$out"; then
  echo "FAIL: the off-loop access failed for another reason:"
  echo "$out"
  exit 1
fi
echo "PASS: off-loop access rejected: $(grep -m1 'requires holding' <<<"$out")"
