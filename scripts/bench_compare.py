#!/usr/bin/python3
"""`make bench-compare REF=<commit>`: this tree's benchmarks beside a reference
commit's, measured on this machine in the same minutes.

The reference commit is built (Release, benchmarks only) from a temporary git
worktree; its benchmark binary is kept under BUILD/bench-ref/ for the next
comparison and the worktree is removed. Then both binaries run in turn, A B
then B A, for --rounds rounds, so that a machine getting busier or quieter
weighs on both alike. Per benchmark it prints each build's real time (the
fastest repetition of a round, median over rounds), the ratio reference /
this tree (above 1: this tree is faster; the median of the rounds' ratios)
and its spread (the lowest and highest round), then Google Benchmark's own
comparison (compare.py of Debian's libbenchmark-tools, with its
Mann-Whitney U test) over the same runs.

--command ARGS (repeatable) also times whole command lines, `retrystorm ARGS`
of each build (the reference's CLI is built and kept beside its benchmarks),
interleaved the same way: wall time (a round's fastest repetition) and peak
memory (the largest resident set of a repetition), each as a ratio.

usage: scripts/bench_compare.py --ref REF [--build build] [--rounds 4]
                                [--filter REGEX] [--min-time 0.2]
                                [--command 'run --preset partial-brownout']...
"""
import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

COMPARE_PY = "/usr/share/benchmark/compare.py"  # Debian's libbenchmark-tools


def git(*args, cwd=None):
    return subprocess.run(["git", *args], check=True, capture_output=True, text=True,
                          cwd=cwd).stdout.strip()


def reference_binaries(ref, build, jobs, with_cli=False):
    """The reference commit's retrystorm_bench (and its retrystorm CLI when
    asked), built once and kept: (sha, bench, cli or None)."""
    sha = git("rev-parse", "--verify", ref + "^{commit}")
    kept = os.path.join(build, "bench-ref", sha[:12])
    wanted = {"retrystorm_bench": kept + ".bench"}
    if with_cli:
        wanted["retrystorm"] = kept + ".cli"
    missing = {target: path for target, path in wanted.items() if not os.path.exists(path)}
    if missing:
        build_reference(sha, missing, jobs)
    return sha, wanted["retrystorm_bench"], wanted.get("retrystorm")


def build_reference(sha, targets, jobs):
    """Builds `targets` (name -> where to keep the binary) of commit sha in a
    temporary worktree, removed afterwards."""
    os.makedirs(os.path.dirname(next(iter(targets.values()))), exist_ok=True)
    work = tempfile.mkdtemp(prefix="rs-bench-ref-")
    src = os.path.join(work, "src")
    try:
        git("worktree", "add", "--detach", src, sha)
        out = os.path.join(work, "build")
        subprocess.run(["cmake", "-S", src, "-B", out, "-DCMAKE_BUILD_TYPE=Release",
                        "-DRETRYSTORM_WEB=OFF", "-DRETRYSTORM_TESTS=OFF",
                        "-DRETRYSTORM_PYTHON=OFF", "-DRETRYSTORM_BENCH=ON"],
                       check=True, stdout=subprocess.DEVNULL)
        subprocess.run(["cmake", "--build", out, "-j", str(jobs), "--target", *targets],
                       check=True, stdout=subprocess.DEVNULL)
        for target, kept in targets.items():
            built = os.path.join(out, "bench", target) if target.endswith("_bench") else \
                os.path.join(out, target)
            shutil.copy2(built, kept + ".tmp")
            os.replace(kept + ".tmp", kept)  # a half-copied binary is never kept
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", src], capture_output=True)
        shutil.rmtree(work, ignore_errors=True)


def time_command(cli, args, repetitions):
    """The fastest wall time (s) of `repetitions` runs of `cli args` and the
    largest peak resident set (bytes) among them."""
    best, peak = float("inf"), 0
    for _ in range(repetitions):
        started = time.perf_counter()
        child = subprocess.Popen([cli, *args], stdout=subprocess.DEVNULL)
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        best = min(best, time.perf_counter() - started)
        peak = max(peak, usage.ru_maxrss * 1024)
        if child.returncode != 0:
            sys.exit(f"bench-compare: {cli} {shlex.join(args)} exited {child.returncode}")
    return best, peak


def run_once(binary, args, out_path):
    subprocess.run([binary, "--benchmark_format=json", "--benchmark_out=" + out_path,
                    "--benchmark_out_format=json", *args],
                   check=True, stdout=subprocess.DEVNULL)
    if not os.path.exists(out_path) or os.path.getsize(out_path) == 0:
        sys.exit(f"bench-compare: no benchmark of {binary} matches the filter {args!r}")
    with open(out_path) as f:
        return json.load(f)


def real_times(report):
    """name -> real time in ns of each iteration entry of one run."""
    scale = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}
    out = {}
    for b in report["benchmarks"]:
        if b.get("run_type", "iteration") != "iteration":
            continue
        out.setdefault(b["name"], []).append(b["real_time"] * scale[b.get("time_unit", "ns")])
    return out


def merged(reports):
    """One report holding every run's iterations, as compare.py reads them."""
    out = {"context": reports[0]["context"], "benchmarks": []}
    for r in reports:
        out["benchmarks"].extend(b for b in r["benchmarks"]
                                 if b.get("run_type", "iteration") == "iteration")
    return out


def duration(ns):
    for unit, size in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if ns >= size:
            return f"{ns / size:.3g} {unit}"
    return f"{ns:.3g} ns"


def summary(ref_runs, new_runs):
    """Rows of name, reference time, this tree's time, ratio, spread.

    Noise on a shared machine only adds time, and a busy spell can cover
    half of one build's samples: each round's time is its fastest
    repetition, a round's ratio compares the two builds' of that round, and
    the row gives the median over rounds (times and ratio) and the lowest
    and highest round's ratio."""
    rows = []
    names = [n for n in real_times(new_runs[0]) if n in real_times(ref_runs[0])]
    for name in names:
        pairs = [(min(real_times(a)[name]), min(real_times(b)[name]))
                 for a, b in zip(ref_runs, new_runs)
                 if name in real_times(a) and name in real_times(b)]
        ratios = [ref / new for ref, new in pairs]
        rows.append((name, statistics.median(p[0] for p in pairs),
                     statistics.median(p[1] for p in pairs), statistics.median(ratios),
                     min(ratios), max(ratios)))
    return rows


def print_command_row(name, ref, new):
    """A command's wall time and peak memory, each as reference / this tree
    (median over rounds, with the lowest and highest round's ratio)."""
    ratios = [r[0] / n[0] for r, n in zip(ref, new)]
    memory = [r[1] / n[1] for r, n in zip(ref, new)]
    print(f"\nretrystorm {name}")
    print(f"  wall  {statistics.median(r[0] for r in ref):.3f} s -> "
          f"{statistics.median(n[0] for n in new):.3f} s  ratio {statistics.median(ratios):.2f}  "
          f"spread {min(ratios):.2f}-{max(ratios):.2f}")
    # Peak memory can have modes (runs side by side that happen to overlap):
    # the median and the highest of each build, and the median of the ratios.
    mib = lambda runs, pick: pick(r[1] for r in runs) / 2**20
    print(f"  peak memory  median {mib(ref, statistics.median):.1f} MiB -> "
          f"{mib(new, statistics.median):.1f} MiB, highest {mib(ref, max):.1f} -> "
          f"{mib(new, max):.1f} MiB  ratio {statistics.median(memory):.2f}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ref", required=True, help="the reference commit (hash, tag, HEAD~3)")
    p.add_argument("--build", default="build", help="this tree's build directory")
    p.add_argument("--rounds", type=int, default=4, help="A B / B A rounds (default 4)")
    p.add_argument("--repetitions", type=int, default=3, help="repetitions per run (default 3)")
    p.add_argument("--filter", default=".", help="--benchmark_filter for both builds")
    p.add_argument("--min-time", default="0.2", help="--benchmark_min_time (seconds)")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    p.add_argument("--command", action="append", default=[],
                   help="also time `retrystorm COMMAND` of both builds (repeatable)")
    a = p.parse_args()
    if a.rounds < 1 or a.repetitions < 1:
        sys.exit("bench-compare: --rounds and --repetitions must be at least 1")
    new_bin = os.path.join(a.build, "bench", "retrystorm_bench")
    if not os.path.exists(new_bin):
        sys.exit(f"bench-compare: {new_bin} is missing; build this tree first (make build)")
    new_cli = os.path.join(a.build, "retrystorm")
    sha, ref_bin, ref_cli = reference_binaries(a.ref, a.build, a.jobs, bool(a.command))
    args = ["--benchmark_filter=" + a.filter, "--benchmark_min_time=" + a.min_time,
            "--benchmark_repetitions=" + str(a.repetitions)]
    ref_runs, new_runs = [], []
    commands = [shlex.split(c) for c in a.command]
    timed = {label: [[] for _ in commands] for label in ("ref", "new")}
    with tempfile.TemporaryDirectory(prefix="rs-bench-") as tmp:
        for r in range(a.rounds):
            order = [("ref", ref_bin, ref_cli, ref_runs), ("new", new_bin, new_cli, new_runs)]
            for label, binary, cli, runs in order if r % 2 == 0 else reversed(order):
                print(f"round {r + 1}/{a.rounds}: {label}", file=sys.stderr)
                runs.append(run_once(binary, args, os.path.join(tmp, f"{label}{r}.json")))
                for k, command in enumerate(commands):
                    timed[label][k].append(time_command(cli, command, a.repetitions))
        head = git("rev-parse", "--short=12", "HEAD")
        print(f"reference {sha[:12]} ({a.ref}) against this tree (HEAD {head}), "
              f"{a.rounds} interleaved rounds x {a.repetitions} repetitions")
        print("ratio = reference time / this tree's time: above 1, this tree is faster\n")
        rows = summary(ref_runs, new_runs)
        width = max([len(r[0]) for r in rows] + [9])
        print(f"{'benchmark':<{width}}  {'reference':>10}  {'this tree':>10}  ratio  spread")
        for name, ref, new, ratio, low, high in rows:
            print(f"{name:<{width}}  {duration(ref):>10}  {duration(new):>10}  {ratio:5.2f}  "
                  f"{low:.2f}-{high:.2f}")
        for k, command in enumerate(commands):
            print_command_row(shlex.join(command), timed["ref"][k], timed["new"][k])
        if os.path.exists(COMPARE_PY):
            for label, runs in (("ref", ref_runs), ("new", new_runs)):
                with open(os.path.join(tmp, label + ".json"), "w") as f:
                    json.dump(merged(runs), f)
            print("\nGoogle Benchmark's compare.py (time: new vs reference, U test):")
            sys.stdout.flush()
            subprocess.run([sys.executable, COMPARE_PY, "-a", "--no-color", "benchmarks",
                            os.path.join(tmp, "ref.json"), os.path.join(tmp, "new.json")])
        else:
            print(f"\n({COMPARE_PY} not found: apt-get install libbenchmark-tools for the U test)")


if __name__ == "__main__":
    main()
