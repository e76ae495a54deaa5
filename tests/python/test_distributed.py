"""rs.distributed.sweep on a LocalCluster of two worker processes: the same
DataFrame (and to_json bytes) as the local run and as the command line's
sharded sweep merged, whatever the task size; a worker killed mid-sweep is
retried by Dask without a wrong or duplicated row; Ctrl-C cancels the tasks
(docs/distributed.md)."""

import io
import os
import signal
import threading
import time

import numpy as np
import pandas as pd
import pytest

import retrystorm as rs

distributed = pytest.importorskip("distributed")

# 4 x 5 points of the agent engine, two seeded replications each: seconds.
VARY = {"client.retries": (0, 3, 1), "incident.duration_s": (10, 30, 5)}
RUNS, SEED = 2, 11


@pytest.fixture(scope="module")
def client():
    """Two worker processes of one thread; closed even when a test fails."""
    cluster = distributed.LocalCluster(
        n_workers=2,
        processes=True,
        threads_per_worker=1,
        dashboard_address=None,
        host="127.0.0.1",
    )
    dask_client = distributed.Client(cluster)
    try:
        yield dask_client
    finally:
        dask_client.close(timeout=20)
        cluster.close(timeout=20)


@pytest.fixture(scope="module")
def agent():
    return rs.Scenario().set("engine", "agent")


@pytest.fixture(scope="module")
def local(agent):
    return rs.sweep(agent, VARY, runs=RUNS, seed=SEED)


def cli_frame(text):
    """A sweep's CSV as the DataFrame rs.sweep gives (the CSV's doubles read back exactly)."""
    frame = pd.read_csv(io.StringIO(text), float_precision="round_trip")
    frame.index = pd.RangeIndex(len(frame), name="point")
    return frame


def test_cluster_equals_local_and_sharded_command_line(client, agent, local, cli, tmp_path):
    on_cluster = rs.distributed.sweep(agent, VARY, runs=RUNS, seed=SEED, client=client)
    pd.testing.assert_frame_equal(on_cluster, local)
    assert on_cluster.to_json() == local.to_json()

    vary = [f"--vary={p}={a:g}:{b:g}:{s:g}" for p, (a, b, s) in VARY.items()]
    common = ["--set", "engine=agent", "--runs", str(RUNS), "--seed", str(SEED), *vary]
    shards = []
    for k in (3, 1, 2):
        path = tmp_path / f"shard-{k}.json"
        cli("sweep", *common, "--shard", f"{k}/3", "--out", str(path))
        shards.append(str(path))
    merged = cli("merge", *shards).stdout
    assert merged == cli("sweep", *common).stdout
    pd.testing.assert_frame_equal(on_cluster, cli_frame(merged), check_dtype=False)


@pytest.mark.parametrize("task_points", [1, 7, 20, None])
def test_task_sizes_give_the_same_rows(client, agent, local, task_points):
    got = rs.distributed.sweep(
        agent, VARY, runs=RUNS, seed=SEED, client=client, task_points=task_points
    )
    pd.testing.assert_frame_equal(got, local)
    assert got.to_json() == local.to_json()


def test_single_runs_without_seed_are_the_plain_sweep(client, cli):
    s = rs.Scenario.preset("primary-failover")
    vary = {"client.retries": (0, 4, 1), "incident.duration_s": (10, 60, 10)}
    got = rs.distributed.sweep(s, vary, client=client, task_points=5)
    pd.testing.assert_frame_equal(got, rs.sweep(s, vary))
    assert got["recovered"].dtype == bool
    text = cli(
        "sweep", "--preset", "primary-failover",
        "--vary", "client.retries=0:4:1", "--vary", "incident.duration_s=10:60:10",
    ).stdout
    pd.testing.assert_frame_equal(got, cli_frame(text), check_dtype=False)


def test_a_killed_worker_is_retried_without_duplicated_rows(client, agent):
    # About two seconds of small tasks keep both workers busy; one worker
    # process exits mid-sweep, its nanny starts a new one and Dask reruns the
    # task it held.
    vary = {"client.retries": (0, 3, 1), "incident.duration_s": (10, 30, 1)}
    result = {}

    def run():
        result["frame"] = rs.distributed.sweep(
            agent, vary, runs=RUNS, seed=SEED, client=client, task_points=2, retries=3
        )

    before = set(client.scheduler_info()["workers"])
    victim = client.run(os.getpid, workers=[sorted(before)[0]])[sorted(before)[0]]
    worker = threading.Thread(target=run)
    worker.start()
    time.sleep(0.3)
    assert worker.is_alive(), "the sweep ended before the worker could be killed"
    os.kill(victim, signal.SIGKILL)  # a worker process of this test's cluster, by its pid
    worker.join(timeout=60)
    assert not worker.is_alive()
    pd.testing.assert_frame_equal(result["frame"], rs.sweep(agent, vary, runs=RUNS, seed=SEED))
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and len(client.scheduler_info()["workers"]) < 2:
        time.sleep(0.1)
    after = set(client.scheduler_info()["workers"])
    assert len(after) == 2 and after != before  # a new worker process took the dead one's place


def test_interrupt_cancels_the_tasks(client, agent, monkeypatch):
    cancelled = []
    real_cancel = client.cancel

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    def spy(futures, *args, **kwargs):
        cancelled.extend(futures)
        return real_cancel(futures, *args, **kwargs)

    monkeypatch.setattr(rs.distributed, "_gather", interrupted)
    monkeypatch.setattr(client, "cancel", spy)
    with pytest.raises(KeyboardInterrupt):
        rs.distributed.sweep(agent, VARY, runs=RUNS, seed=SEED + 1, client=client, task_points=2)
    assert len(cancelled) == 10
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not all(f.cancelled() for f in cancelled):
        time.sleep(0.05)
    assert all(f.cancelled() for f in cancelled)


def test_rows_are_keyed_by_point():
    from retrystorm.sweep import frame_of

    grid = {"points": 3, "paths": ["a"], "figures": ["f"]}
    batch = {"point": np.array([0, 1]), "a": np.array([0.0, 1.0]), "f": np.array([1.0, 2.0])}
    last = {"point": np.array([2]), "a": np.array([2.0]), "f": np.array([3.0])}
    assert list(frame_of([last, batch], grid)["f"]) == [1.0, 2.0, 3.0]
    with pytest.raises(RuntimeError, match="delivered twice"):
        frame_of([batch, batch, last], grid)
    with pytest.raises(RuntimeError, match="missing"):
        frame_of([batch], grid)


def test_piece_size_rule():
    from retrystorm.distributed import piece_points_for

    assert piece_points_for(10_000, 2) == 157  # 32 pieces per thread
    assert piece_points_for(100, 8) == 16  # never below 16 points
    assert piece_points_for(10, 8) == 10
    assert piece_points_for(100_000_000, 4) == 20_000


def test_tasks_shrink_to_single_pieces_and_cover_the_grid_once():
    from retrystorm.distributed import MAX_TASK_POINTS, guided_tasks

    for points, piece, threads in [(10_000, 157, 2), (10_000, 313, 1), (999, 16, 8), (10, 16, 8),
                                   (1_000_000, 15_000, 2)]:
        pieces = [(f, min(piece, points - f)) for f in range(0, points, piece)]
        tasks = guided_tasks(pieces, threads)
        # Contiguous, in order, every point once; each task whole pieces.
        assert [f for f, _ in tasks] == sorted(f for f, _ in tasks)
        assert sum(c for _, c in tasks) == points and tasks[0][0] == 0
        assert all(a + n == b for (a, n), (b, _) in zip(tasks, tasks[1:]))
        starts = {f for f, _ in pieces}
        assert all(f in starts for f, _ in tasks)
        assert all(c <= max(MAX_TASK_POINTS, piece) for _, c in tasks)
        # Largest first (bar the size cap); the last 2 x threads are single pieces.
        sizes = [c for _, c in tasks]
        assert all(a >= b or a + piece > MAX_TASK_POINTS for a, b in zip(sizes, sizes[1:-1]))
        assert tasks[-min(len(tasks), 2 * threads):] == pieces[-min(len(tasks), 2 * threads):]
    ten = [(f, 157) for f in range(0, 64 * 157, 157)]
    assert len(guided_tasks(ten, 2)) == 13  # 64 pieces, 13 tasks on 2 threads


def test_bad_grids_fail_before_any_task(client, agent):
    with pytest.raises(ValueError, match="client.retriez"):
        rs.distributed.sweep(agent, {"client.retriez": (0, 1, 1)}, client=client)
    with pytest.raises(ValueError, match="seed"):
        rs.distributed.sweep(agent, VARY, seed=0.5, client=client)


def test_a_notebook_without_ipywidgets_gets_the_text_bar(client, agent, monkeypatch):
    """In a Jupyter kernel without ipywidgets neither Dask's progress widget
    nor tqdm's notebook bar can draw (ModuleNotFoundError: ipywidgets): the
    sweep falls back to the text bar and gives the same rows."""
    import sys

    import dask.distributed

    rs_sweep = sys.modules["retrystorm.sweep"]  # the module (rs.sweep is the function)

    def no_widget(*args, **kwargs):
        raise ModuleNotFoundError("No module named 'ipywidgets'")

    monkeypatch.setattr(rs.distributed, "in_notebook", lambda: True)
    monkeypatch.setattr(rs_sweep, "in_notebook", lambda: True)
    monkeypatch.setattr(rs.distributed, "have_widgets", lambda: False)
    monkeypatch.setattr(rs_sweep, "have_widgets", lambda: False)
    monkeypatch.setattr(dask.distributed, "progress", no_widget)
    bar = rs_sweep.progress_bar(3, True)
    assert type(bar).__module__ in ("tqdm.std", "retrystorm.sweep")  # not tqdm.notebook
    bar.close()
    vary = {"client.retries": (0, 1, 1)}
    frame = rs.distributed.sweep(agent, vary, runs=1, seed=SEED, client=client, progress=True)
    assert frame.equals(rs.sweep(agent, vary, runs=1, seed=SEED))


def test_workers_of_another_version_are_refused(client, agent):
    """A worker that imports another retrystorm (or none) would give other
    rows silently: the sweep names it and runs nothing."""
    assert rs.distributed.check_workers(client) == rs.__version__
    worker = sorted(client.scheduler_info()["workers"])[0]

    def pretend(version):
        import retrystorm

        retrystorm.__version__ = version

    client.run(pretend, "0.0.0-other", workers=[worker])
    try:
        with pytest.raises(RuntimeError, match=f"{worker} has retrystorm 0.0.0-other"):
            rs.distributed.sweep(agent, VARY, runs=RUNS, seed=SEED, client=client)
    finally:
        client.run(pretend, rs.__version__, workers=[worker])
    assert rs.distributed.check_workers(client) == rs.__version__


def test_widgets_need_ipywidgets_7(monkeypatch):
    """tqdm's notebook bar and Dask's widget need ipywidgets 7 or later;
    Debian 12's 6 (installed by scripts/setup.sh) gets the text bar."""
    import sys
    import types

    from retrystorm.sweep import have_widgets

    for version, expected in (("6.0.0", False), ("7.7.1", True), ("8.1.0", True)):
        monkeypatch.setitem(sys.modules, "ipywidgets", types.SimpleNamespace(__version__=version))
        assert have_widgets() is expected
    monkeypatch.setitem(sys.modules, "ipywidgets", None)  # import fails
    assert have_widgets() is False


# rs.distributed.run: one scenario's Monte Carlo split across the workers.


@pytest.mark.parametrize(
    "preset,runs,task_runs",
    [
        ("order-status", 9, None),  # agent engine; about four tasks per thread
        ("order-status", 9, 4),  # uneven tasks: 4 + 4 + 1
        ("three-tier-chain", 5, 1),  # a graph, one replication a task
    ],
)
def test_distributed_run_is_the_local_run(client, preset, runs, task_runs):
    s = rs.Scenario.preset(preset).set("engine", "agent").set("horizon_s", 120)
    local = rs.run(s, runs=runs, seed=SEED)
    got = rs.distributed.run(s, runs=runs, seed=SEED, client=client, task_runs=task_runs)
    assert got.to_json() == local.to_json()
    pd.testing.assert_frame_equal(got.summary, local.summary)
    pd.testing.assert_frame_equal(got.band, local.band)


def test_distributed_run_without_client_or_replications_runs_here(client):
    s = rs.Scenario.preset("order-status").set("engine", "agent")
    assert rs.distributed.run(s, runs=3, seed=4).to_json() == rs.run(s, runs=3, seed=4).to_json()
    one = rs.distributed.run(s, runs=1, seed=4, client=client)
    assert one.montecarlo is None and one.to_json() == rs.run(s, runs=1, seed=4).to_json()


def test_distributed_run_refuses_before_any_task(client, monkeypatch):
    submitted = []
    monkeypatch.setattr(client, "submit", lambda *a, **k: submitted.append(a))
    agent = rs.Scenario().set("engine", "agent")
    with pytest.raises(ValueError, match="runs"):
        rs.distributed.run(agent, runs=20_000, client=client)
    with pytest.raises(ValueError, match="seed"):
        rs.distributed.run(agent, runs=4, seed=0.5, client=client)
    with pytest.raises(ValueError, match="sessions"):
        rs.distributed.run(rs.Scenario.preset("scheduler-normal-day"), runs=4, client=client)
    assert submitted == []


def test_distributed_run_takes_the_scenarios_runs_and_its_limits(client, monkeypatch):
    """runs=None is the scenario's runs (a float key, read as a whole number);
    allow_large=False keeps this machine's limit for the whole Monte Carlo,
    before any task; runs 1, or no client, is rs.run with its own default."""
    s = rs.Scenario.preset("order-status").set("engine", "agent").set("horizon_s", 120)
    four = s.copy().set("runs", 4)
    got = rs.distributed.run(four, seed=SEED, client=client)
    assert got.to_json() == rs.run(s, runs=4, seed=SEED).to_json()
    submitted = []
    monkeypatch.setattr(client, "submit", lambda *a, **k: submitted.append(a))
    longer = s.copy().set("horizon_s", 180)  # 10,000 runs of it: past this machine's limit
    with pytest.raises(ValueError, match="limit"):
        rs.distributed.run(longer, runs=10_000, seed=1, client=client, allow_large=False)
    assert submitted == []
    sessions = rs.Scenario.preset("scheduler-normal-day")
    assert rs.distributed.run(sessions).to_json() == rs.run(sessions).to_json()


def test_a_worker_without_retrystorm_is_named():
    """client.run's answers for a worker that cannot load the probe are its
    error (on_error="return"): that worker has no retrystorm."""

    class Client:
        def run(self, probe, on_error="raise"):
            assert on_error == "return"
            return {"tcp://a": rs.__version__, "tcp://b": ModuleNotFoundError("retrystorm")}

    with pytest.raises(RuntimeError, match="tcp://b has no retrystorm"):
        rs.distributed.check_workers(Client())


def test_parts_must_be_every_replication_once():
    from retrystorm import _core

    s = rs.Scenario.preset("brief-outage").set("engine", "agent")
    parts = [_core._montecarlo_part(s, 4, 1.0, 0, 2), _core._montecarlo_part(s, 4, 1.0, 2, 2)]
    whole = _core._run_of_parts(s, 4, 1.0, parts[::-1]).to_json()  # any order
    assert whole == rs.run(s, runs=4, seed=1).to_json()
    with pytest.raises(ValueError, match="replication 2 is missing"):
        _core._run_of_parts(s, 4, 1.0, parts[:1])
    with pytest.raises(ValueError, match="given twice"):
        _core._run_of_parts(s, 4, 1.0, parts + parts[:1])
    with pytest.raises(ValueError, match="past runs"):
        _core._montecarlo_part(s, 4, 1.0, 3, 2)
    short = dict(parts[1], values=[row[:-1] for row in parts[1]["values"]])
    with pytest.raises(ValueError, match="lacks figures"):
        _core._run_of_parts(s, 4, 1.0, [parts[0], short])


@pytest.mark.parametrize("vary,task_runs", [(None, 4), ("client.retries=0,4", 3)])
def test_distributed_risk_is_the_local_risk(client, random_server, vary, task_runs):
    s = random_server(server__queue_limit=99, incident__start_s=60, incident__duration_s=30,
                      incident__capacity_factor=0.3, horizon_s=300)
    local = rs.risk(s, [0.8, 1.0], runs=10, vary=vary)
    got = rs.distributed.risk(s, [0.8, 1.0], runs=10, vary=vary, client=client,
                              task_runs=task_runs)
    table_local, table_got = local.pop("table", None), got.pop("table", None)
    assert got == local
    if vary:
        pd.testing.assert_frame_equal(table_got, table_local)


def test_distributed_risk_splits_the_splitting_replicas_too(client, random_server):
    s = random_server(horizon_s=300)
    kwargs = dict(runs=6, splitting=True, split_effort=6, split_runs=4, split_levels=3)
    local = rs.risk(s, [0.85], **kwargs)
    got = rs.distributed.risk(s, [0.85], client=client, task_runs=2, **kwargs)
    assert got == local
    assert local["levels"][0]["splitting"]["p"] > 0


def test_distributed_risk_refuses_before_any_task(client, monkeypatch, random_server):
    submitted = []
    monkeypatch.setattr(client, "submit", lambda *a, **k: submitted.append(a))
    with pytest.raises(ValueError, match="nothing in this scenario is random"):
        rs.distributed.risk(rs.Scenario.preset("order-status"), runs=4, client=client)
    with pytest.raises(ValueError, match="load 0"):
        rs.distributed.risk(random_server(), [0], runs=4, client=client)
    assert submitted == []


def test_the_grid_is_priced_once(agent):
    """grid_of hands back each point's price, and cutting by it gives the cut
    that prices the grid again: the client checks and cuts a grid in one pass."""
    from retrystorm.sweep import axes_of, cost_ranges, grid_of

    axes = axes_of(VARY)
    grid = grid_of(agent, axes, RUNS, SEED)
    assert len(grid["seconds"]) == grid["points"] == 20
    assert all(grid["seconds"] > 0)
    for parts in (1, 3, 7, 20):
        assert cost_ranges(agent, axes, RUNS, SEED, parts, grid["seconds"]) == cost_ranges(
            agent, axes, RUNS, SEED, parts
        )
    with pytest.raises(ValueError, match="seconds: 19 prices for a grid of another size"):
        cost_ranges(agent, axes, RUNS, SEED, 3, grid["seconds"][:19])


def test_distributed_run_of_a_fluid_scenario_is_one_run(client):
    # rs.run and the command line run a fluid scenario once, whatever runs says.
    s = rs.Scenario.preset("order-status")
    got = rs.distributed.run(s, runs=5, seed=1, client=client)
    assert got.montecarlo is None
    assert got.to_json() == rs.run(s, runs=5, seed=1).to_json()


@pytest.mark.parametrize("task_runs", [-1, 0, 0.5, 2.7, "2", True])
def test_task_runs_is_a_whole_number_of_one_or_more(client, task_runs):
    s = rs.Scenario.preset("order-status").set("engine", "agent")
    with pytest.raises((TypeError, ValueError), match="task_runs"):
        rs.distributed.run(s, runs=4, seed=1, client=client, task_runs=task_runs)
    with pytest.raises((TypeError, ValueError), match="task_runs"):
        rs.distributed.risk(s, runs=4, client=client, task_runs=task_runs)


@pytest.mark.parametrize("value", ["no", 2.0])
def test_on_off_options_are_flags_with_a_client_or_without(client, agent, random_server, value):
    # allow_large=None has a meaning of its own here (the cluster is the
    # budget); anything else is a flag, refused before any task.
    words = "is not a flag"
    for on in (None, client):
        with pytest.raises(TypeError, match=f"^allow_large: {value!r} {words}"):
            rs.distributed.sweep(agent, VARY, runs=RUNS, seed=SEED, client=on, allow_large=value)
        with pytest.raises(TypeError, match=f"^allow_large: {value!r} {words}"):
            rs.distributed.run(agent, runs=4, seed=1, client=on, allow_large=value)
        with pytest.raises(TypeError, match=f"^trace: {value!r} {words}"):
            rs.distributed.run(agent, runs=4, seed=1, client=on, trace=value)
        with pytest.raises(TypeError, match=f"^allow_large: {value!r} {words}"):
            rs.distributed.risk(random_server(), runs=4, client=on, allow_large=value)
        with pytest.raises(TypeError, match=f"^splitting: {value!r} {words}"):
            rs.distributed.risk(random_server(), runs=4, client=on, splitting=value)
