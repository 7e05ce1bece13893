#!/bin/sh
# Runs every benchmark of a binary for a minimal time, so that benchmarks cannot rot.
exec "$1" --benchmark_min_time=0 --benchmark_out_format=json --benchmark_out=/dev/null
