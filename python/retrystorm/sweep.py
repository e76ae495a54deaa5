"""Grid sweeps on this machine: rs.sweep(scenario, vary={...}) -> DataFrame.

The grid is the product of the axes, last axis fastest, as `retrystorm sweep`
walks it; a row per point, indexed by the point's number in the grid, with
one column per varied key and then the figures of the sweep's CSV. With
runs > 1 a row holds the means over the replications (a flag: the share of
replications where it held). Points run in C++ on every core, in batches so
that progress shows and Ctrl-C stops between batches (docs/python.md,
docs/distributed.md)."""

import math
import os
import sys

import numpy as np
import pandas as pd

from . import _core
from ._args import flag, number, number_list, optional_number, whole


def listed_axis(path, values):
    """A list of values (or a 1-d array) -> the axis (path, 0, 0, 1, values):
    the grid takes them in the order given, as `--vary PATH=V1,V2,...`."""
    if isinstance(values, (str, bytes)):
        raise ValueError(f"vary {path}: {values!r} must be numbers, not text")
    # Counted before listed: a range(3 * 10**6) would fill memory before the
    # core's check of the grid's size saw it. The core's limit and words.
    count, limit = _count(values), _core._sweep_max_points
    if count is not None and count > limit:
        raise _core.InputError(
            f"vary {path}: the grid has more than {limit} points ({count} listed values); "
            f"the limit is {limit}"
        )
    try:
        listed = number_list(f"vary {path}", values)
    except TypeError:
        raise ValueError(f"vary {path}: {values!r} must be numbers") from None
    if not listed:
        raise ValueError(f"vary {path}: give at least one value")
    return (str(path), 0.0, 0.0, 1.0, listed)


def _count(values):
    """How many values there are, without listing them; None when unknown."""
    try:
        return len(values)
    except OverflowError:  # past a C ssize_t: only a range gets here
        if isinstance(values, range):
            return (values[-1] - values.start) // values.step + 1
        return None
    except TypeError:
        return None


def axes_of(vary):
    """vary: {path: (from, to, step)} or {path: [v1, v2, ...]} (a list or
    array of values, in any order) -> the axes as _core takes them, in the
    given order. A tuple is a range, a list is the values themselves."""
    if isinstance(vary, (str, bytes)):
        raise TypeError(
            f"vary: {vary!r}: give a dict of key -> (from, to, step) or a list of values, "
            "like {'client.retries': (0, 4, 1)}"
        )
    if not vary:
        raise ValueError("vary: give at least one key to vary")
    items = vary.items() if isinstance(vary, dict) else vary
    axes = []
    for item in items:
        if not (isinstance(item, (tuple, list)) and len(item) == 2):
            raise TypeError(f"vary: {item!r} is not a (key, values) pair")
        path, spec = item
        if isinstance(spec, (dict, set, frozenset)):  # no order of its own, or keys only
            raise ValueError(
                f"vary {path}: {spec!r} must be (from, to, step) numbers, or a list of values"
            )
        if not isinstance(spec, tuple) and hasattr(spec, "__len__"):
            axes.append(listed_axis(path, spec))
            continue
        try:
            start, stop, step = (number(f"vary {path}", v) for v in spec)
        except (TypeError, ValueError):  # not three, or not numbers (text, bools)
            raise ValueError(
                f"vary {path}: {spec!r} must be (from, to, step) numbers, or a list of values"
            ) from None
        axes.append((str(path), start, stop, step, []))
    return axes


def seed_of(seed):
    """None (every point from the scenario's seed), else a float for _core."""
    return optional_number("seed", seed)


def grid_of(scenario, axes, runs, seed, allow_large=False):
    """The whole grid checked (cost, keys, every point validated) before any
    work: {"points", "paths", "figures", "seconds"} (each point's estimated
    CPU seconds, for cost_ranges; None for a grid too large to price)."""
    return _core._sweep_grid(scenario, axes, whole("runs", runs), seed_of(seed),
                             flag("allow_large", allow_large))


def ranges_of(points, task_points):
    """[first, count) ranges of at most task_points points covering the grid."""
    task_points = max(1, int(task_points))
    return [(f, min(task_points, points - f)) for f in range(0, points, task_points)]


def cost_ranges(scenario, axes, runs, seed, parts, seconds=None):
    """The grid cut into about `parts` contiguous ranges of equal estimated
    cost (as `retrystorm sweep --shard K/N` cuts it), empty ones left out: a
    costly stretch of the grid gets more, shorter ranges. seconds: the
    points' prices grid_of gave (None: priced again)."""
    ranges = _core._sweep_ranges(
        scenario, axes, int(runs), seed_of(seed), max(1, int(parts)), seconds
    )
    return [(first, count) for first, count in ranges if count > 0]


def frame_of(batches, grid):
    """One DataFrame from batches of columns (any order), rows in point order.

    Rows are keyed by their point number: a batch delivered twice (a retried
    task) or a gap is an error, never a duplicated or missing row."""
    batches = sorted(batches, key=lambda b: int(b["point"][0]) if len(b["point"]) else -1)
    names = ["point", *grid["paths"], *grid["figures"]]
    columns = {}
    for name in names:
        parts = [np.asarray(b[name]) for b in batches]
        columns[name] = np.concatenate(parts) if parts else np.empty(0)
    point = columns.pop("point").astype(np.int64)
    if not np.array_equal(point, np.arange(grid["points"], dtype=np.int64)):
        raise RuntimeError(
            f"sweep: the batches hold {len(point)} rows for {grid['points']} points "
            "(a point missing or delivered twice)"
        )
    return pd.DataFrame(columns, index=pd.RangeIndex(grid["points"], name="point"))


def in_notebook():
    """True inside a Jupyter kernel (progress as a widget, not a text bar)."""
    shell = sys.modules.get("IPython")
    if shell is None:
        return False
    ip = shell.get_ipython() if hasattr(shell, "get_ipython") else None
    return ip is not None and type(ip).__name__ == "ZMQInteractiveShell"


def have_widgets():
    """Whether notebook widgets can be drawn: ipywidgets 7 or later, which
    tqdm's notebook bar and Dask's progress widget need (Debian 12 ships 6,
    whose bar lacks the `style` tqdm sets: the text bar is drawn instead)."""
    try:
        import ipywidgets
    except ImportError:
        return False
    major = str(getattr(ipywidgets, "__version__", "0")).split(".")[0]
    return major.isdigit() and int(major) >= 7


def show_progress(progress):
    """progress=None: a bar in a terminal or a notebook, none in a pipe or a test."""
    if progress is None:
        return in_notebook() or sys.stderr.isatty()
    return flag("progress", progress)


def progress_bar(total, enabled, unit="point", desc="sweep"):
    """A tqdm bar (tqdm.auto in a notebook), or a stand-in that does nothing."""
    if enabled:
        try:
            if in_notebook() and have_widgets():
                from tqdm.auto import tqdm
            else:
                from tqdm import tqdm
            return tqdm(total=total, unit=unit, desc=desc)
        except ImportError:
            pass
    return _NoBar()


class _NoBar:
    def update(self, n):
        pass

    def close(self):
        pass


def local_task_points(points, threads):
    """Batches on this machine: about fifty (progress and Ctrl-C between
    them), each enough points to keep every core busy."""
    return max(4 * threads, math.ceil(points / 50), 1)


def sweep(
    scenario,
    vary,
    runs=1,
    seed=None,
    *,
    threads=0,
    progress=None,
    allow_large=False,
    task_points=None,
):
    """Runs every point of the grid on this machine; returns a DataFrame.

    vary: {path: (from, to, step)} or {path: [values]}; runs:
    replications per point; seed: None
    (every point starts from the scenario's seed, as `retrystorm sweep`) or a
    base seed S (point i, replication r runs at S + i * runs + r, as
    `--seed S`). threads: 0 = every core. The same arguments give the same
    DataFrame as rs.distributed.sweep on any cluster."""
    axes = axes_of(vary)
    runs, threads = whole("runs", runs), whole("threads", threads)
    enabled = show_progress(progress)  # checked before the grid's work
    grid = grid_of(scenario, axes, runs, seed, allow_large)
    cores = threads or os.cpu_count() or 1
    if task_points is not None:
        task_points = whole("task_points", task_points, 1)
    if task_points:
        ranges = ranges_of(grid["points"], task_points)
    else:  # batches of about equal cost, each enough points for every core
        size = local_task_points(grid["points"], cores)
        ranges = cost_ranges(
            scenario, axes, runs, seed, math.ceil(grid["points"] / size), grid["seconds"]
        )
    bar = progress_bar(grid["points"], enabled)
    batches = []
    try:
        for first, count in ranges:
            batches.append(
                _core._sweep_points(
                    scenario, axes, first, count, runs, seed_of(seed), threads,
                    False, True,
                )
            )
            bar.update(count)
    finally:
        bar.close()
    return frame_of(batches, grid)
