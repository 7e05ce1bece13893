#!/bin/sh
# Runs the Python tests of the bench tools with the system python3.
exec python3 "$(dirname "$0")/bench_tools_test.py" -v
