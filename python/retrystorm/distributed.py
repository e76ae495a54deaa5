"""Grid sweeps, Monte Carlo and risk on Dask: rs.distributed.sweep(scenario,
vary={...}, client=...), rs.distributed.run(scenario, runs=N, client=...) and
rs.distributed.risk(scenario, loads, runs=N, client=...).

The grid is cut into tasks of many points each (one task runs a batch in
C++, GIL released), submitted to a dask.distributed Client, and gathered
into the DataFrame rs.sweep gives: each point's seeds come from the base
seed and the point's number, never from the worker, so the result is the
same whatever the task size, the workers or the order they finish in.
A run's replications are cut the same way: replication i has seed
seed + i wherever it runs, and the summaries are taken in replication order.
Without a client it runs on this machine. docs/distributed.md has the
cluster set-ups and how the task size is chosen."""

import math

from . import _core
from ._args import flag, optional_whole, whole
from .api import Result
from .api import risk as local_risk
from .api import risk_request
from .api import run as local_run
from .api import with_risk_table
from .sweep import (
    axes_of,
    cost_ranges,
    frame_of,
    grid_of,
    have_widgets,
    in_notebook,
    progress_bar,
    ranges_of,
    seed_of,
    show_progress,
)
from .sweep import sweep as local_sweep

# The grid is cut into pieces of about equal estimated cost, PIECES_PER_THREAD
# per worker thread, and the pieces are run as tasks of decreasing size
# (guided_tasks): large tasks first, so that Dask's own cost (a few
# milliseconds per task) stays small beside a batch's, and single pieces last,
# so that the workers end within about a piece of each other, even when a
# stretch of the grid costs more than estimated, a worker is slower (another
# job shares its machine) or a task is retried.
PIECES_PER_THREAD = 32
# A piece never holds fewer points (its run outweighs its scheduling); a task
# never more (a retry repeats little; a result stays a few MB).
MIN_TASK_POINTS = 16
MAX_TASK_POINTS = 20_000


def piece_points_for(points, threads):
    """Points per piece: about PIECES_PER_THREAD pieces per worker thread,
    within [MIN_TASK_POINTS, MAX_TASK_POINTS]."""
    per_piece = math.ceil(points / (PIECES_PER_THREAD * max(1, threads)))
    return max(1, min(points, max(MIN_TASK_POINTS, min(MAX_TASK_POINTS, per_piece))))


def guided_tasks(pieces, threads):
    """Consecutive pieces [(first, count), ...] merged into tasks: each task
    takes a (2 x threads)-th of the pieces still left (at least one, at most
    MAX_TASK_POINTS points), so tasks shrink to single pieces at the end.
    Dask hands queued tasks out in the order they were submitted."""
    tasks, i = [], 0
    while i < len(pieces):
        take = max(1, math.ceil((len(pieces) - i) / (2 * max(1, threads))))
        first, count = pieces[i]
        for _, more in pieces[i + 1:i + take]:
            if count + more > MAX_TASK_POINTS:
                break
            count += more
            i += 1
        tasks.append((first, count))
        i += 1
    return tasks


def cluster_threads(client):
    """Worker threads the cluster has now (1 while no worker has joined)."""
    return max(1, sum(client.nthreads().values()))


def _worker_version():
    """On a worker: the version of retrystorm it imports (None: it has none)."""
    try:
        import retrystorm
    except ImportError:
        return None
    return retrystorm.__version__


def check_workers(client):
    """Raises RuntimeError unless every worker imports this retrystorm version:
    a worker with another build would give other rows without saying so."""
    own = _core.__version__
    # A worker without retrystorm cannot even load _worker_version (it is
    # shipped by reference to this module): its error comes back as a value.
    answers = client.run(_worker_version, on_error="return")
    versions = {worker: v if isinstance(v, str) else None for worker, v in answers.items()}
    wrong = {worker: v for worker, v in versions.items() if v != own}
    if wrong:
        listed = ", ".join(
            f"{worker} has {'no retrystorm' if v is None else 'retrystorm ' + v}"
            for worker, v in sorted(wrong.items())
        )
        raise RuntimeError(
            f"rs.distributed: this machine runs retrystorm {own}, but {listed}; install the "
            "same wheel on every worker (docs/distributed.md, \"Workers\")"
        )
    return own


def run_batch(scenario, axes, first, count, runs, seed):
    """One task: points [first, first + count) on one thread of a worker (the
    worker's other threads run other tasks; the GIL is released)."""
    return _core._sweep_points(scenario, axes, first, count, runs, seed, 1, False, True)


def _task_keys(scenario, axes, runs, seed, ranges):
    """Deterministic task names: the same batch of the same sweep is the same
    task, so a resubmission shares the result instead of adding rows."""
    from dask.base import tokenize

    token = tokenize(scenario.to_dict(), axes, runs, seed)
    return [f"retrystorm-sweep-{token}-{first}-{count}" for first, count in ranges]


def _gather(client, futures, total, progress, size_of=lambda batch: len(batch["point"]),
            unit="point", desc="sweep"):
    """Results as they finish (size_of(result) of the total each); a terminal
    bar (tqdm), or Dask's notebook widget where ipywidgets is installed
    (without it, the text bar)."""
    from dask.distributed import as_completed

    enabled = show_progress(progress)
    if enabled and in_notebook() and have_widgets():
        from dask.distributed import progress as dask_progress

        dask_progress(futures)  # the widget updates itself; the loop below waits
        enabled = False
    bar = progress_bar(total, enabled, unit=unit, desc=desc)
    results = []
    try:
        for future in as_completed(futures):
            result = future.result()  # a task that failed after its retries raises here
            results.append(result)
            bar.update(size_of(result))
    finally:
        bar.close()
    return results


def sweep(
    scenario,
    vary,
    runs=1,
    seed=None,
    client=None,
    task_points=None,
    *,
    retries=2,
    progress=None,
    allow_large=None,
):
    """The grid sweep of rs.sweep, on a Dask cluster; returns a DataFrame.

    client: a dask.distributed.Client (None: this machine, every core).
    task_points: points per task (None: tasks of decreasing estimated cost,
    see guided_tasks and docs/distributed.md). retries: how often Dask
    reruns a task whose worker died. Ctrl-C cancels the submitted tasks.
    The result equals rs.sweep's (and `retrystorm sweep`'s, sharded or not)
    for the same arguments.
    allow_large: None lifts the one-machine cost limit with a client (the
    cluster is the budget) and keeps it without one."""
    allow_large = client is not None if allow_large is None else flag("allow_large", allow_large)
    if client is None:
        return local_sweep(
            scenario, vary, runs, seed, progress=progress, allow_large=allow_large,
            task_points=task_points,
        )
    axes = axes_of(vary)
    runs = whole("runs", runs)
    seed = seed_of(seed)
    grid = grid_of(scenario, axes, runs, seed, allow_large)  # whole grid, before any task
    check_workers(client)
    points = grid["points"]
    if task_points is not None:
        task_points = whole("task_points", task_points, 1)
    if task_points:
        ranges = ranges_of(points, task_points)
    else:  # pieces of about equal estimated cost, run largest tasks first
        threads = cluster_threads(client)
        size = piece_points_for(points, threads)
        pieces = cost_ranges(
            scenario, axes, runs, seed, math.ceil(points / size), grid["seconds"]
        )
        ranges = guided_tasks(pieces, threads)
    keys = _task_keys(scenario, axes, runs, seed, ranges)
    futures = [
        client.submit(
            run_batch, scenario, axes, first, count, runs, seed,
            key=key, retries=retries, pure=False,
        )
        for (first, count), key in zip(ranges, keys)
    ]
    try:
        batches = _gather(client, futures, points, progress)
    except BaseException:  # Ctrl-C, or a task that failed for good
        client.cancel(futures)
        raise
    return frame_of(batches, grid)


def run_part(scenario, runs, seed, first, count, allow_large=True):
    """One task of rs.distributed.run: replications [first, first + count),
    their figures and goodput series (plain values that pickle exactly)."""
    return _core._montecarlo_part(scenario, runs, seed, first, count, allow_large)


def _run_keys(scenario, runs, seed, ranges):
    from dask.base import tokenize

    token = tokenize(scenario.to_dict(), runs, seed)
    return [f"retrystorm-run-{token}-{first}-{count}" for first, count in ranges]


def run(
    scenario,
    runs=None,
    seed=None,
    client=None,
    task_runs=None,
    *,
    trace=True,
    retries=2,
    progress=None,
    allow_large=None,
):
    """rs.run's Monte Carlo split across a Dask cluster; returns a Result.

    The workers run the replications (task_runs each; None: about four tasks
    per worker thread), this machine the report of replication 0 (verdict,
    advice, tipping point) and the summaries. The answer is rs.run's, byte for
    byte (to_json), for the same runs and seed. client None runs on this
    machine (rs.run). The session model's Monte Carlo is not split:
    ValueError. allow_large: None lifts the one-machine cost limit on the
    workers with a client (the cluster is the budget)."""
    runs = whole("runs", scenario.get("runs") if runs is None else runs)
    seed = seed_of(seed)
    task_runs = optional_whole("task_runs", task_runs, 1)
    trace = flag("trace", trace)
    if allow_large is not None:
        allow_large = flag("allow_large", allow_large)
    if client is None or not _core._montecarlo_wanted(scenario, runs):
        # One run (a fluid run is one, whatever runs says): nothing to split.
        # rs.run itself, with its own default: the limit of this machine.
        return local_run(scenario, runs, seed, trace=trace, allow_large=bool(allow_large))
    if allow_large is None:
        allow_large = True  # the cluster is the budget
    if scenario.engine == "sessions":
        raise ValueError(
            "rs.distributed.run: engine sessions runs its Monte Carlo on one machine; use rs.run"
        )
    # The scenario, runs and seed are checked here, and every replication
    # priced, before any task.
    _core._montecarlo_price(scenario, runs, seed, allow_large)
    check_workers(client)
    size = task_runs or max(1, math.ceil(runs / (4 * cluster_threads(client))))
    ranges = ranges_of(runs, size)
    futures = [
        client.submit(run_part, scenario, runs, seed, first, count, allow_large,
                      key=key, retries=retries, pure=False)
        for (first, count), key in zip(ranges, _run_keys(scenario, runs, seed, ranges))
    ]
    try:
        parts = _gather(client, futures, runs, progress, lambda part: len(part["values"]),
                        unit="run", desc="run")
    except BaseException:  # Ctrl-C, or a task that failed for good
        client.cancel(futures)
        raise
    return Result(_core._run_of_parts(scenario, runs, seed, parts, trace, allow_large))


def risk_part(scenario, request, first, count):
    """One task of rs.distributed.risk: replications [first, first + count)
    of every load (and knob value), as what each run saw (plain values that
    pickle exactly)."""
    loads, runs, horizon_s, exact, vary, split = request
    return first, _core._risk_part(scenario, loads, runs, horizon_s, exact, vary, split, first,
                                   count, True)


def risk(
    scenario,
    loads=(1.0,),
    *,
    runs=0,
    horizon_s=0.0,
    exact=True,
    vary=None,
    splitting=False,
    split_effort=40,
    split_runs=8,
    split_levels=8,
    client=None,
    task_runs=None,
    retries=2,
    progress=None,
    allow_large=None,
):
    """rs.risk's replications split across a Dask cluster; the same answer,
    value for value, for the same arguments (replication r runs at the
    scenario's seed + r wherever it runs; the estimates are taken here, in
    replication order, with the exact chain). With splitting=True each task
    also runs its share of the independent splitting replicas.
    client None runs on this machine."""
    allow_large = client is not None if allow_large is None else flag("allow_large", allow_large)
    task_runs = optional_whole("task_runs", task_runs, 1)
    if client is None:
        return local_risk(scenario, loads, runs=runs, horizon_s=horizon_s, exact=exact,
                          vary=vary, splitting=splitting, split_effort=split_effort,
                          split_runs=split_runs, split_levels=split_levels,
                          allow_large=allow_large)
    request = risk_request(loads, runs, horizon_s, exact, vary, splitting, split_effort,
                           split_runs, split_levels)
    # Checked and priced here, before any task: the runs, resolved.
    total = _core._risk_part(scenario, *request, 0, 0, allow_large)
    check_workers(client)
    size = task_runs or max(1, math.ceil(total / (4 * cluster_threads(client))))
    ranges = ranges_of(total, size)
    from dask.base import tokenize

    token = tokenize(scenario.to_dict(), request)
    futures = [
        client.submit(risk_part, scenario, request, first, count,
                      key=f"retrystorm-risk-{token}-{first}-{count}", retries=retries, pure=False)
        for first, count in ranges
    ]
    try:
        parts = _gather(client, futures, total, progress,
                        lambda part: sum(count for f, count in ranges if f == part[0]),
                        unit="run", desc="risk")
    except BaseException:  # Ctrl-C, or a task that failed for good
        client.cancel(futures)
        raise
    parts.sort(key=lambda part: part[0])
    answer = _core._risk_of_parts(scenario, *request, [evidence for _, evidence in parts])
    return with_risk_table(answer, vary)
