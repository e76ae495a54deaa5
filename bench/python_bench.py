#!/usr/bin/python3
"""Per-run overhead of the Python package (docs/python.md, "Overhead").

For primary-failover (fluid engine, with advice, tipping point and trace, as
`retrystorm run` reports it) this times:
  C++       app::run in a loop inside the module (_core._time_runs);
  rs.run    the Python call, returning a Result (no conversion yet);
  + series  rs.run plus the DataFrame of the series (one copy);
  + to_json rs.run plus the JSON text of `run --format json`;
  CLI       `retrystorm run --preset primary-failover --format json`, a process each.
The target: rs.run within 10 % of the C++ cost.

usage: PYTHONPATH=<build>/python bench/python_bench.py <build>/retrystorm [seconds]
"""

import subprocess
import sys
import time

import retrystorm as rs
from retrystorm import _core

PRESET = "primary-failover"


def per_call(fn, seconds):
    """Mean seconds of fn() over about `seconds` (at least 5 calls), after one warm-up."""
    fn()
    calls, start = 0, time.perf_counter()
    while calls < 5 or time.perf_counter() - start < seconds:
        fn()
        calls += 1
    return (time.perf_counter() - start) / calls


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else None
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 2.0
    s = rs.Scenario.preset(PRESET)
    cpp = per_call(lambda: _core._time_runs(s, 1), seconds)
    py = per_call(lambda: rs.run(s), seconds)
    series = per_call(lambda: rs.run(s).series, seconds)
    to_json = per_call(lambda: rs.run(s).to_json(), seconds)
    rows = [("C++ app::run", cpp), ("rs.run", py), ("rs.run + .series", series),
            ("rs.run + .to_json()", to_json)]
    if binary:
        cmd = [binary, "run", "--preset", PRESET, "--format", "json"]
        rows.append(("CLI run --format json", per_call(
            lambda: subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True), seconds)))
    print(f"python_bench: {PRESET}, per run (mean)")
    for name, t in rows:
        print(f"  {name:<24} {t * 1e3:9.3f} ms   {100 * (t / cpp - 1):+7.1f} % vs C++")
    overhead = py / cpp - 1
    verdict = "within" if overhead <= 0.10 else "OVER"
    # A benchmark reports; on a busy machine one sample may miss, so no exit status.
    print(f"  rs.run overhead over C++: {100 * overhead:+.1f} % ({verdict} the 10 % target)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
