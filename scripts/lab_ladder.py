#!/usr/bin/python3
"""`make lab`: a preset's defense ladder run for real with `retrystorm lab`,
one run per row and layer, in parallel (each run is light: two event loops
and at most a proxy), printed as the Markdown table of docs/lab.md; with
--write FILE the table also replaces the one between FILE's markers
<!-- lab:PRESET --> and <!-- /lab -->.

usage: scripts/lab_ladder.py BIN PRESET --through direct,haproxy,grpc [--scale K] [--jobs N]
                             [--write docs/lab.md]
"""
import argparse
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import tempfile


def ladder_rows(binary, preset):
    out = subprocess.run([binary, "ladder", "--preset", preset, "--format", "json"],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)["rows"]


def run_row(binary, scenario, through, scale, workdir, index):
    path = os.path.join(workdir, f"row{index}-{through}.json")
    with open(path, "w") as f:
        json.dump(scenario, f)
    done = subprocess.run([binary, "lab", "--scenario", path, "--through", through,
                           "--scale", str(scale), "--format", "json"],
                          capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        last = done.stderr.strip().splitlines()[-1:]
        return None, last + [f"(exit {done.returncode})"]
    return json.loads(done.stdout), None


def cell(result, criterion):
    m, p = result["measured"]["metrics"], result["predicted"]["metrics"]
    key = "goodput_recovery_s" if criterion == "goodput" else "failure_recovery_s"
    rec = lambda x: "-" if x.get(key) is None else f"{x[key]:.1f} s"
    verdict = lambda x: "recovers" if x["recovered"] else "stuck"
    a = result["agreement"]
    ok = "yes" if a["verdict"] and a["failed_share"] and a["recovery"] else "NO"
    # The run's worst timer lateness: a stall of the machine shows here.
    timing = result["lab"]["timing_error"]
    late = " / ".join(f"{timing[k]['max_s']*1000:.0f}" for k in ("generator", "backend"))
    return (f"{verdict(m)} / {verdict(p)} | {m['failed_fraction']*100:.1f}% / "
            f"{p['failed_fraction']*100:.1f}% | {m['wasted_fraction']*100:.1f}% / "
            f"{p['wasted_fraction']*100:.1f}% | {rec(m)} / {rec(p)} | {ok} | {late} ms | "
            f"{stalls(result, criterion)}")


def stalls(result, criterion):
    """Bins a stall disturbed after the incident (left out of the measured
    goodput recovery), and that recovery with them counted where it differs."""
    s = result["lab"]["stalls"]
    after = s["disturbed_bins_after_incident"]
    text = str(after)
    counted = s["goodput_recovery_s_counting_stalls"]
    discounted = result["measured"]["metrics"].get("goodput_recovery_s")
    if criterion == "goodput" and counted != discounted:
        text += " (counting them: " + ("-" if counted is None else f"{counted:.1f} s") + ")"
    return text


def table(args, rows, throughs, jobs):
    lines = [f"### {args.preset}, `--scale {args.scale:g}`", "",
             "| row | through | verdict (measured / predicted) | failed | wasted | recovery |"
             " within tolerances | timer max (generator / backend) | stalled bins after the incident |",
             "|---|---|---|---|---|---|---|---|---|"]
    for i, row in enumerate(rows):
        criterion = row["scenario"].get("recovery", {}).get("criterion", "failures")
        for t in throughs:
            result, error = jobs[(i, t)].result()
            text = (cell(result, criterion) if result else
                    f"not run: {' '.join(error).split(chr(13))[-1]} ||||||")
            lines.append(f"| {row['name']} | {t} | {text} |")
    return "\n".join(lines) + "\n"


def write_between_markers(path, preset, text):
    with open(path) as f:
        doc = f.read()
    pattern = re.compile(r"(<!-- lab:" + re.escape(preset) + r" -->\n)(.*?)(<!-- /lab -->)",
                         re.DOTALL)
    if not pattern.search(doc):
        sys.exit(f"{path}: no <!-- lab:{preset} --> ... <!-- /lab --> markers")
    doc = pattern.sub(lambda m: m.group(1) + text + m.group(3), doc, count=1)
    with open(path, "w") as f:
        f.write(doc)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("preset")
    ap.add_argument("--through", default="direct,haproxy")
    ap.add_argument("--scale", type=float, default=0.1)
    ap.add_argument("--jobs", type=int, default=10)
    ap.add_argument("--write", help="replace the table between this file's markers")
    args = ap.parse_args()
    rows = ladder_rows(args.binary, args.preset)
    throughs = args.through.split(",")
    with tempfile.TemporaryDirectory(prefix="retrystorm-lab-ladder-") as workdir, \
            concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        jobs = {(i, t): pool.submit(run_row, args.binary, row["scenario"], t, args.scale,
                                    workdir, i)
                for i, row in enumerate(rows) for t in throughs}
        text = table(args, rows, throughs, jobs)
    print(text)
    if args.write:
        write_between_markers(args.write, args.preset, text)


if __name__ == "__main__":
    sys.exit(main())
