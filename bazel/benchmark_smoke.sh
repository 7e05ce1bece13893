#!/bin/sh
# Runs every benchmark of a binary once, at a tiny size (GYRE_BENCH_SMOKE shrinks the
# problem sizes the benchmarks read through gyre::bench::SizeArg), so that benchmarks
# cannot rot. Measurements come from `./dev bench`, never from this test.
GYRE_BENCH_SMOKE=1 exec "$1" --benchmark_min_time=0 --benchmark_out_format=json --benchmark_out=/dev/null
