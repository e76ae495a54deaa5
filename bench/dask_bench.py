#!/usr/bin/python3
"""A 10,000-point agent-engine sweep on Dask with 1 and 2 worker processes
(one thread each) on this machine, timed in alternating rounds (each round
a sweep on a fresh cluster of each size, the sizes taking turns to go first):
the median wall times, the speed-up (target: at least 1.8x with 2 workers)
and a check that both give the same DataFrame; then the cost rs.distributed adds
per task (tasks of one point of a run of 1 ms, beside the same points run in
this process) and rs.distributed.run against rs.run on one scenario's Monte
Carlo. Run by `make bench`; PYTHONPATH must hold <build>/python.

    PYTHONPATH=build/python /usr/bin/python3 bench/dask_bench.py [--workers 1,2]
"""

import argparse
import statistics
import sys
import time

import pandas as pd

import retrystorm as rs
from dask.distributed import Client, LocalCluster

# An agent-engine run of 180 s at 16 to 24 requests a second against 25 a
# second of capacity (about 0.5 ms on one core), over 5 x 40 x 10 x 5 = 10,000
# points: the grid crosses from recovering to stuck.
VARY = {
    "client.retries": (0, 4, 1),
    "incident.duration_s": (1, 40, 1),
    "client.timeout_s": (1, 10, 1),
    "demand.rate_per_s": (16, 24, 2),
}
SEED = 1


def scenario():
    s = rs.Scenario().set("engine", "agent").set("horizon_s", 180)
    return s.set("server.capacity_per_s", 25).set("incident.start_s", 20)


def timed_sweep(workers):
    """Seconds of one sweep on a fresh cluster of `workers` processes (its
    workers warmed up first), how busy they were, and its rows."""
    with LocalCluster(
        n_workers=workers,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        host="127.0.0.1",
    ) as cluster, Client(cluster) as client:
        s = scenario()
        # Warm-up: every worker imports the module before the clock starts.
        rs.distributed.sweep(s, {"client.retries": (0, 3, 1)}, seed=SEED, client=client,
                             task_points=1, progress=False)
        cpu_before = sum(client.run(time.process_time).values())
        started = time.perf_counter()
        frame = rs.distributed.sweep(s, VARY, seed=SEED, client=client, progress=False)
        wall = time.perf_counter() - started
        cpu = sum(client.run(time.process_time).values()) - cpu_before
        # Below 100 %: the workers waited (Dask, or other jobs on this machine's cores).
        print(f"  {workers} worker(s): {wall:.2f} s, workers busy {cpu / (wall * workers):.0%}",
              flush=True)
        return wall, frame


def timed_rounds(counts, rounds):
    """Each round times one sweep per worker count, alternating which goes
    first, so that both see the machine of the same minute: {count: [s, ...]}
    and the rows of each count's last sweep."""
    walls, frames = {n: [] for n in counts}, {}
    for r in range(rounds):
        for n in counts if r % 2 == 0 else counts[::-1]:
            wall, frames[n] = timed_sweep(n)
            walls[n].append(wall)
    return walls, frames


def task_overhead(workers=2, tasks=400):
    """Milliseconds rs.distributed adds per task: `tasks` one-point tasks on
    `workers` single-thread workers, minus the same points' own run time here
    (one thread), over the tasks each worker ran."""
    s = scenario().set("horizon_s", 60)
    vary = {"incident.duration_s": (1, tasks, 1)}
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                      dashboard_address=None, host="127.0.0.1") as cluster, \
            Client(cluster) as client:
        rs.distributed.sweep(s, {"client.retries": (0, 3, 1)}, client=client, task_points=1,
                             progress=False)  # warm-up: every worker imports the module
        started = time.perf_counter()
        rs.distributed.sweep(s, vary, client=client, task_points=1, progress=False)
        wall = time.perf_counter() - started
    started = time.perf_counter()
    rs.sweep(s, vary, threads=1, progress=False)
    own = time.perf_counter() - started
    per_task = (wall * workers - own) / tasks
    print(f"per-task cost of rs.distributed: {per_task * 1e3:.1f} ms "
          f"({tasks} one-point tasks on {workers} workers in {wall:.2f} s; "
          f"the points alone {own:.2f} s on one thread)", flush=True)


def distributed_run(workers=2, runs=400):
    """rs.distributed.run on `workers` single-thread workers beside rs.run on
    one thread (a cluster of one-thread workers against one local thread is
    the speed-up the workers give) for an agent-engine Monte Carlo."""
    s = scenario()
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                      dashboard_address=None, host="127.0.0.1") as cluster, \
            Client(cluster) as client:
        rs.distributed.run(s, runs=4, seed=SEED, client=client, progress=False)  # warm-up
        started = time.perf_counter()
        on_cluster = rs.distributed.run(s, runs=runs, seed=SEED, client=client, progress=False)
        wall = time.perf_counter() - started
    started = time.perf_counter()
    local = rs.run(s, runs=runs, seed=SEED)
    here = time.perf_counter() - started
    assert on_cluster.to_json() == local.to_json()
    print(f"rs.distributed.run, {runs} runs on {workers} workers: {wall:.2f} s; rs.run here "
          f"(every core): {here:.2f} s; the same answer", flush=True)


def local_seconds(threads):
    """The same sweep in this process on C++ threads, no Dask: what the
    machine's cores give right now (other jobs share them)."""
    started = time.perf_counter()
    rs.sweep(scenario(), VARY, seed=SEED, threads=threads, progress=False, allow_large=True)
    return time.perf_counter() - started


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", default="1,2", help="worker counts to time (default 1,2)")
    parser.add_argument("--target", type=float, default=1.8, help="speed-up aimed at")
    parser.add_argument("--repeats", type=int, default=5,
                        help="rounds, each timing one sweep per worker count on a fresh cluster, "
                             "the counts alternated; their medians compared (default 5)")
    parser.add_argument("--no-ceiling", dest="ceiling", action="store_false",
                        help="skip the local 1- and 2-thread runs")
    args = parser.parse_args()
    counts = [int(n) for n in args.workers.split(",")]
    walls, frames = timed_rounds(counts, args.repeats)
    seconds = {n: statistics.median(walls[n]) for n in counts}
    for n in counts:
        points = len(frames[n])
        print(f"dask sweep, {points} agent points, {n} worker(s): median {seconds[n]:.2f} s "
              f"({seconds[n] / points * 1e3:.2f} ms a point; "
              f"{frames[n]['recovered'].mean():.0%} recover)", flush=True)
    first = frames[counts[0]]
    for n in counts[1:]:
        pd.testing.assert_frame_equal(frames[n], first)  # the same rows whatever the workers
    if args.ceiling and 1 in seconds and 2 in seconds:
        ceiling = local_seconds(1) / local_seconds(2)
        print(f"the same sweep on 1 and 2 C++ threads without Dask: {ceiling:.2f}x "
              "(the machine's ceiling now)")
    if 1 in seconds:
        for n in counts:
            if n == 1:
                continue
            speedup = seconds[1] / seconds[n]
            rounds = sorted(one / many for one, many in zip(walls[1], walls[n]))
            verdict = "meets" if speedup >= args.target else "misses"
            print(f"speed-up with {n} workers: {speedup:.2f}x, round by round "
                  f"{', '.join(f'{x:.2f}' for x in rounds)} ({verdict} the {args.target}x target)")
    task_overhead()
    distributed_run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
