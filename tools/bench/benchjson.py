"""Reads Google Benchmark JSON files for merge.py, gate.py and report.py."""
import json


class BadBenchmarkFile(Exception):
    """A file that cannot be read, or is not Google Benchmark JSON; str() says which."""


def load(path):
    """The parsed file: an object with a "benchmarks" array, else BadBenchmarkFile."""
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        raise BadBenchmarkFile(f"cannot read {path}: {e}") from e
    if not isinstance(data, dict) or not isinstance(data.get("benchmarks"), list):
        raise BadBenchmarkFile(f"{path} is not Google Benchmark JSON (no 'benchmarks' array)")
    return data
