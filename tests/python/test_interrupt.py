"""Ctrl-C stops long work within about 100 ms: run, ladder, tipping, a
sweep, lint's simulation, risk and its splitting each raise KeyboardInterrupt soon after SIGINT, though the C++ core
runs with the GIL released (src/python/module.cpp, InterruptScope). Each
runs in a child process that is killed if it outlives the test's bound.
"short runs" are thousands of calls of a few milliseconds: a Ctrl-C that
lands after a call's last poll must still raise, not be dropped."""

import os
import signal
import subprocess
import sys
import time

import pytest

CHILD = r"""
import sys, time
import retrystorm as rs
s = rs.Scenario.preset("partial-brownout").set("engine", "agent")
fluid = rs.Scenario.preset("partial-brownout").set("engine", "fluid")
chain = rs.Scenario.preset("three-tier-chain")  # lint --simulate: about 2 s a call
# risk's runs are short (a few thousand events each, below an engine's own
# poll): only the check between runs can see Ctrl-C.
random = rs.Scenario.preset("order-status")
for key, value in {"engine": "agent", "demand.rate_per_s": 9.5, "demand.process": "poisson",
                   "server.capacity_per_s": 10, "server.service": "exponential",
                   "server.queue_limit": 30, "client.timeout_s": 3, "client.retries": 4,
                   "incident.duration_s": 0, "horizon_s": 120}.items():
    random = random.set(key, value)
work = {
    "run": lambda: rs.run(s, runs=300, trace=False, allow_large=True),
    "ladder": lambda: [rs.ladder(s, allow_large=True) for _ in range(100)],
    "tipping": lambda: [rs.tipping(s, allow_large=True) for _ in range(100)],
    "short runs": lambda: [rs.run(fluid) for _ in range(4000)],
    "sweep": lambda: rs.sweep(s, {"client.retries": (0, 3, 1), "seed": (1, 60, 1)},
                              allow_large=True, progress=False),
    "lint": lambda: [rs.lint(chain, simulate=True) for _ in range(20)],
    "risk": lambda: rs.risk(random, loads=[0.5], runs=100000, exact=False, allow_large=True),
    "splitting": lambda: rs.risk(random, loads=[0.5], runs=2, exact=False, splitting=True,
                                 split_effort=4000, split_runs=200, allow_large=True),
}[sys.argv[1]]
print("ready", flush=True)
try:
    work()
    print("finished", flush=True)
except KeyboardInterrupt:
    print("interrupted", time.monotonic(), flush=True)
"""

# What the test allows on a busy machine; the target is about 0.1 s.
BOUND_S = 1.0


@pytest.mark.parametrize(
    "work", ["run", "ladder", "tipping", "short runs", "sweep", "lint", "risk", "splitting"]
)
def test_ctrl_c_stops_the_work_soon(work):
    env = dict(os.environ)
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, work], stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert child.stdout.readline().strip() == "ready"
        time.sleep(0.6)  # well inside the C++ work
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        line = child.stdout.readline().split()
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert line and line[0] == "interrupted", line
    latency = float(line[1]) - sent
    print(f"{work}: KeyboardInterrupt {latency * 1000:.0f} ms after SIGINT")
    assert latency < BOUND_S
