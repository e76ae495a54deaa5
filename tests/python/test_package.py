"""The package against the command line: the same answers, the same refusals."""

import io
import json
import pickle
import threading
import time

import numpy as np
import pandas as pd
import pytest

import retrystorm as rs

PRESETS = [p["name"] for p in rs.presets()]


@pytest.mark.parametrize("name", PRESETS)
def test_run_json_is_the_command_lines_bytes(name, cli):
    # Every preset, session presets included: one run path (app::run).
    ours = rs.run(rs.Scenario.preset(name)).to_json()
    assert ours == cli("run", "--preset", name, "--format", "json").stdout


def test_runs_seed_and_set_match_the_command_line(cli):
    s = rs.Scenario.preset("primary-failover").set("engine", "agent").set("client.retries", 1)
    ours = rs.run(s, runs=4, seed=7).to_json()
    theirs = cli(
        "run", "--preset", "primary-failover", "--set", "engine=agent",
        "--set", "client.retries=1", "--runs", "4", "--seed", "7", "--format", "json",
    ).stdout
    assert ours == theirs


def test_presets_and_keys_are_the_command_lines():
    assert PRESETS[:2] == ["order-status", "primary-failover"]
    keys = rs.keys()
    row = keys.loc["client.retries"]
    assert (row["type"], row["min"], row["max"]) == ("integer", 0, 100)
    assert keys.loc["client.backoff.base_s", "unit"] == "s"
    assert "full" in keys.loc["client.backoff.jitter", "choices"]
    assert keys.loc["client.retries", "default"] == 3 and keys.loc["client.retries", "help"]


def test_series_is_one_row_per_step_with_the_json_names():
    r = rs.run(rs.Scenario.preset("primary-failover"))
    doc = r.to_dict()
    steps = doc["scenario"]["horizon_s"] / doc["scenario"]["step_s"]
    assert r.series.shape == (steps, len(doc["series"]))
    assert set(r.series.columns) == set(doc["series"])
    # The CSV's column order (kSeriesFields); the JSON object's keys are sorted.
    assert list(r.series.columns[:3]) == ["t_s", "capacity", "first_attempts"]
    assert set(r.series.columns) == set(doc["series"])
    for name, values in doc["series"].items():
        np.testing.assert_array_equal(r.series[name].to_numpy(), np.array(values))
    assert r.metrics == doc["metrics"]
    assert r.verdict == doc["verdict"]
    assert r.band is None and r.montecarlo is None


def test_a_graph_gives_a_data_frame_per_service_and_per_call(cli):
    r = rs.run(rs.Scenario.preset("three-tier-chain"))
    doc = r.to_dict()
    names = [s["name"] for s in doc["graph"]["services"]]
    assert list(r.services) == names
    db = r.services["db"]
    assert list(db.columns[:3]) == ["t_s", "first_attempts", "retries"]
    assert len(db) == len(r.series)
    np.testing.assert_array_equal(db["t_s"].to_numpy(), r.series["t_s"].to_numpy())
    for service in doc["graph"]["services"]:
        for field, values in service["series"].items():
            np.testing.assert_array_equal(r.services[service["name"]][field].to_numpy(), values)
    assert [(c.attrs["from"], c.attrs["to"]) for c in r.calls] == [
        (e["from"], e["to"]) for e in doc["graph"]["edges"]
    ]
    assert r.calls[3]["retries"].sum() == doc["graph"]["edges"][3]["totals"]["retries"]
    # The command line's long CSV holds the same numbers.
    csv = pd.read_csv(io.StringIO(
        cli("run", "--preset", "three-tier-chain", "--format", "csv", "--per", "service").stdout))
    np.testing.assert_array_equal(csv[csv["service"] == "db"]["queue"].to_numpy(),
                                  db["queue"].to_numpy())
    # Without a graph: none.
    plain = rs.run(rs.Scenario.preset("order-status"))
    assert plain.services == {} and plain.calls == []


def test_monte_carlo_band_is_one_row_per_step():
    s = rs.Scenario.preset("primary-failover").set("engine", "agent")
    r = rs.run(s, runs=3, seed=1)
    assert r.montecarlo["runs"] == 3
    assert list(r.band.columns) == ["t_s", "goodput_low", "goodput_mean", "goodput_high"]
    assert len(r.band) == len(r.series)
    assert (r.band.goodput_low <= r.band.goodput_high).all()


def test_session_presets_report_through_the_same_run():
    r = rs.run(rs.Scenario.preset("scheduler-429-outage"))
    assert r.engine == "sessions"
    assert isinstance(r.series, pd.DataFrame) and len(r.series) > 0
    assert r.verdict == r.to_dict()["verdict"]


@pytest.mark.parametrize(
    "key,value,words",
    [
        ("client.retries", -1, "client.retries: -1 is out of range"),
        ("client.nope", 1, "unknown key 'client.nope'"),
        ("client.backoff.jitter", "sometimes", "client.backoff.jitter"),
        ("client.retries", "three", "client.retries"),
    ],
)
def test_bad_keys_and_values_raise_value_error_naming_the_key(key, value, words, cli):
    with pytest.raises(ValueError) as e:
        rs.Scenario.preset("primary-failover").set(key, value)
    assert words in str(e.value)
    if isinstance(value, int):  # the command line's own words
        done = cli("run", "--preset", "primary-failover", "--set", f"{key}={value}", check=False)
        assert done.returncode != 0 and str(e.value) in done.stderr


def test_inputs_are_read_as_the_command_line_reads_them(source_dir, cli):
    """Issue 31, item 4: the same inputs as the command line, the same answers."""
    import pathlib

    import numpy as np

    s = rs.Scenario.preset("order-status")
    # Text as --set reads it; numpy bools are bools.
    assert s.copy().set("server.shed_abandoned", "true").get("server.shed_abandoned") is True
    assert s.copy().set("server.shed_abandoned", np.bool_(True)).get("server.shed_abandoned") is True
    assert s.copy().set("client.retries", "2").get("client.retries") == 2
    # A numpy value of no dimension keeps its fraction (int() would cut it);
    # an array of one or more dimensions is no single value.
    assert s.copy().set("horizon_s", np.array(200.5)).get("horizon_s") == 200.5
    assert s.copy().set("horizon_s", np.float64(200.5)).get("horizon_s") == 200.5
    assert s.copy().set("client.retries", np.array(3)).get("client.retries") == 3
    with pytest.raises(TypeError, match="array"):
        s.copy().set("horizon_s", np.array([200.5]))
    with pytest.raises(ValueError, match="client.retries: 1e[+]30 is out of range"):
        s.copy().set("client.retries", 10**30)
    # A path object is a path.
    path = source_dir / "presets" / "order-status.yaml"
    assert rs.Scenario.scenario_file(pathlib.Path(path)).name == rs.Scenario.scenario_file(
        str(path)
    ).name
    # An unknown key names the nearest ones, not all of them.
    with pytest.raises(ValueError) as e:
        s.copy().set("client.retires", 3)
    assert "did you mean client.retries" in str(e.value)
    assert "server.queue_limit" not in str(e.value)
    done = cli("run", "--preset", "order-status", "--set", "client.retires=3", check=False)
    assert done.returncode == 2 and str(e.value) in done.stderr
    # A list is the values themselves, in the order given; a tuple a range.
    listed = rs.sweep(s, {"client.retries": [0, 1, 2]})
    assert list(listed["client.retries"]) == [0, 1, 2]
    pd.testing.assert_frame_equal(listed, rs.sweep(s, {"client.retries": (0, 2, 1)}))
    uneven = rs.sweep(s, {"client.retries": np.array([5, 0, 1])})
    assert list(uneven["client.retries"]) == [5, 0, 1]
    theirs = cli("sweep", "--preset", "order-status", "--vary", "client.retries=5,0,1").stdout
    ours = pd.read_csv(io.StringIO(theirs), float_precision="round_trip")
    ours.index = pd.RangeIndex(len(ours), name="point")
    pd.testing.assert_frame_equal(uneven, ours, check_dtype=False)
    with pytest.raises(ValueError, match="must be numbers"):
        rs.sweep(s, {"client.retries": "0,1"})
    with pytest.raises(ValueError, match="client.retries"):
        rs.sweep(s, {"client.retries": [0, -1]})  # each value validated at its point
    with pytest.raises(ValueError, match="grid_s"):
        rs.tipping(s, grid_s=-1)


def test_unknown_preset_and_cross_key_rules_raise_value_error():
    with pytest.raises(ValueError, match="preset: 'nope' is not a preset"):
        rs.Scenario.preset("nope")
    s = rs.Scenario.preset("primary-failover").set("step_s", 0.07)  # valid alone
    with pytest.raises(ValueError, match="step"):
        rs.run(s)
    with pytest.raises(ValueError, match="runs"):
        rs.run(rs.Scenario.preset("primary-failover"), runs=0)


def test_scenario_round_trips_through_dict_file_and_pickle(tmp_path):
    import pickle

    s = rs.Scenario.preset("two-layer-stack").set("client.retries", 2)
    assert rs.Scenario.from_dict(s.to_dict()).to_dict() == s.to_dict()
    assert pickle.loads(pickle.dumps(s)).to_dict() == s.to_dict()
    path = tmp_path / "s.json"
    path.write_text(json.dumps(s.to_dict()))
    assert rs.Scenario.scenario_file(str(path)).to_dict() == s.to_dict()
    assert s.set("name", "x") is s and s.name == "x"


def counted_while(call):
    """How often this thread counts while `call` runs in another: near 0
    when the call holds the GIL."""
    started = threading.Event()
    worker = threading.Thread(target=lambda: (started.set(), call()))
    worker.start()
    started.wait()
    time.sleep(0.005)  # let it enter C++
    counted = 0
    while worker.is_alive():
        counted += 1
    worker.join()
    return counted


def test_the_gil_is_released_while_a_run_runs():
    # An agent-engine Monte Carlo long enough to take a while; while it
    # runs, this thread must keep counting (it could not if the run held the GIL).
    s = rs.Scenario.preset("primary-failover").set("engine", "agent")
    assert counted_while(lambda: rs.run(s, runs=8, trace=False)) > 10_000  # about a million here


def test_the_gil_is_released_while_lint_simulates():
    # lint's --simulate runs held the GIL (and so could not hear Ctrl-C).
    s = rs.Scenario.preset("partial-brownout").set("engine", "agent")
    assert counted_while(lambda: rs.lint(s, simulate=True)) > 10_000


def test_ladder_and_tipping_match_the_command_line(cli):
    s = rs.Scenario.preset("primary-failover")
    ladder = rs.ladder(s)
    theirs = json.loads(cli("ladder", "--preset", "primary-failover", "--format", "json").stdout)
    assert list(ladder["name"]) == [row["name"] for row in theirs["rows"]]
    assert list(ladder["verdict.recovered"]) == [r["verdict"]["recovered"] for r in theirs["rows"]]
    tip = json.loads(cli("tipping", "--preset", "primary-failover", "--format", "json").stdout)
    assert rs.tipping(s) == tip


def test_configs_import_export_lint_match_the_command_line(source_dir, cli):
    envoy = source_dir / "tests/fixtures/configs/envoy/route.yaml"
    imported = rs.import_configs(envoy)
    theirs = json.loads(cli("import", str(envoy), "--format", "json").stdout)
    assert imported["scenario"] == theirs
    s = rs.Scenario.preset("primary-failover")
    assert rs.export(s, to="envoy")["text"] == cli(
        "export", "--preset", "primary-failover", "--to", "envoy"
    ).stdout
    with pytest.raises(ValueError):
        rs.export(s, to="nope")
    report = rs.lint(envoy)
    done = cli("lint", str(envoy), "--format", "json", check=False)
    assert report["exit_status"] == done.returncode
    assert report == json.loads(done.stdout)
    assert rs.lint(s)["exit_status"] in (0, 1)
    # --instances: the client instances per-instance budgets scale by.
    seven = rs.lint(envoy, instances=7)
    assert seven["instances"]["count"] == 7
    assert seven == json.loads(
        cli("lint", str(envoy), "--instances", "7", "--format", "json", check=False).stdout
    )
    with pytest.raises(ValueError):
        rs.lint(envoy, instances=0)


def test_analyze_matches_the_command_line(source_dir, cli):
    log = source_dir / "tests/fixtures/logs/requests.csv"
    report = rs.analyze(log)
    theirs = json.loads(cli("analyze", str(log), "--format", "json").stdout)
    assert {k: v for k, v in report.items() if k != "tables"} == theirs
    for table in report["tables"].values():
        assert isinstance(table, pd.DataFrame)
    with pytest.raises(ValueError):
        rs.analyze(source_dir / "tests/fixtures/logs/empty.csv")
    with pytest.raises(ValueError, match="slots: 0 is not allowed"):
        rs.analyze(log, slots=0)


def test_analyze_reads_a_clock_as_the_command_line_does(source_dir, cli):
    sessions = str(source_dir / "tests/fixtures/logs/outage/sessions.csv")
    events = str(source_dir / "tests/fixtures/logs/outage/events.jsonl")
    report = rs.analyze([sessions, events], from_s="0d01:00", to_s=86400)
    theirs = json.loads(cli("analyze", sessions, events, "--from", "0d01:00", "--to", "86400",
                            "--format", "json").stdout)
    assert {k: v for k, v in report.items() if k != "tables"} == theirs
    with pytest.raises(ValueError, match="from_s: 'soon' is not a time"):
        rs.analyze([sessions, events], from_s="soon")
    with pytest.raises(TypeError, match="from_s: give seconds or a clock"):
        rs.analyze([sessions, events], from_s=True)


# Hostile input, round three (docs/limits.md): what Python hands the binding.

def test_a_scenario_that_contains_itself_is_a_value_error():
    loop = {"name": "loop"}
    loop["client"] = loop
    with pytest.raises(ValueError, match="contains itself"):
        rs.Scenario.from_dict(loop)


def test_deep_nesting_is_a_value_error_not_a_crash():
    deep = {}
    for _ in range(100_000):
        deep = {"a": deep}
    with pytest.raises(ValueError, match="200 levels"):
        rs.Scenario.from_dict(deep)
    items = []
    for _ in range(100_000):
        items = [items]
    with pytest.raises(ValueError, match="200 levels"):
        rs.Scenario.from_dict({"client": items})


def test_an_object_made_without_init_is_a_type_error_not_a_crash():
    # pybind11 hands a method the raw memory of an object __new__ made
    # without __init__ (it crashed in repr and run); src/python/bindings.hpp.
    bare = rs.Scenario.__new__(rs.Scenario)
    for use in (repr, lambda s: s.get("engine"), lambda s: s.set("engine", "agent"), rs.run,
                lambda s: rs.sweep(s, {"client.retries": [0, 1]}), pickle.dumps):
        with pytest.raises(TypeError, match="__new__ without __init__"):
            use(bare)
    answer = rs._core.RunAnswer.__new__(rs._core.RunAnswer)
    with pytest.raises(TypeError, match="__new__ without __init__"):
        rs.Result(answer).to_json()
    assert pickle.loads(pickle.dumps(rs.Scenario())).to_dict() == rs.Scenario().to_dict()


def test_an_integer_beyond_64_bits_is_checked_by_the_key():
    s = rs.Scenario.preset("order-status")
    with pytest.raises(ValueError, match="client.retries"):
        s.set("client.retries", 2**63)
    with pytest.raises(ValueError, match="outside the range"):
        s.set("client.retries", 10**400)


# What the converter refuses names the key, given to set or inside from_dict's
# dicts and lists (src/python/convert.cpp): a huge int, bytes, a lone surrogate.
@pytest.mark.parametrize(
    "value,error,words",
    [
        (10**400, ValueError, r"1000.*\(401 characters\) is outside the range of numbers$"),
        (b"3", TypeError, r"b'3' is a bytes; a scenario value is a bool, int, float or str$"),
        ("\ud800", ValueError, r"'\\ud800' holds a lone surrogate, which UTF-8 cannot encode"),
    ],
    ids=["huge-int", "bytes", "lone-surrogate"],
)
def test_a_value_the_converter_refuses_names_its_key(value, error, words):
    s = rs.Scenario.preset("order-status")
    with pytest.raises(error, match=rf"^client\.retries: {words}"):
        s.set("client.retries", value)
    with pytest.raises(error, match=rf"^client\.backoff\.jitter: {words}"):
        rs.Scenario.from_dict({"client": {"backoff": {"jitter": value}}})
    with pytest.raises(error, match=rf"^calls\[0\]\.to: {words}"):
        rs.Scenario.from_dict({"calls": [{"to": value}]})


def test_a_dict_key_that_is_not_a_str_is_a_type_error_naming_where():
    # str() of it would make the key "client.b'retries'" (an unknown key).
    bytes_key = r"^client key: b'retries' is a bytes; a scenario key is a str$"
    with pytest.raises(TypeError, match=bytes_key):
        rs.Scenario.from_dict({"client": {b"retries": 2}})
    with pytest.raises(TypeError, match=r"^scenario key: 3 is an int; a scenario key is a str$"):
        rs.Scenario.from_dict({3: 1})
    with pytest.raises(TypeError, match=r"^calls\[0\] key: \(1, 2\) is a tuple"):
        rs.Scenario.from_dict({"calls": [{(1, 2): "a"}]})


def test_a_type_is_named_with_its_article():
    with pytest.raises(TypeError, match=r"^client\.retries: <object object at .*> is an object;"):
        rs.Scenario.preset("order-status").set("client.retries", object())


def test_a_loop_and_deep_nesting_name_the_key():
    loop = {"retries": 1}
    loop["backoff"] = loop
    with pytest.raises(ValueError, match=r"^client\.backoff: the scenario contains itself"):
        rs.Scenario.from_dict({"client": loop})
    deep = {}
    for _ in range(300):
        deep = {"a": deep}
    with pytest.raises(ValueError, match=r"^client(\.a)+: the scenario is nested more than 200"):
        rs.Scenario.from_dict({"client": deep})


def test_an_int_with_no_repr_and_a_surrogate_in_a_dict_key_are_named():
    with pytest.raises(ValueError, match="^seed: an integer of 16610 bits is outside the range"):
        rs.Scenario.preset("order-status").set("seed", 10**5000)
    with pytest.raises(ValueError, match=r"^client key: '\\ud800' holds a lone surrogate"):
        rs.Scenario.from_dict({"client": {"\ud800": 1}})


def test_tipping_refuses_a_grid_that_is_not_a_number():
    s = rs.Scenario.preset("primary-failover")
    for grid in (float("nan"), float("inf"), -1.0):
        with pytest.raises(ValueError, match="grid_s"):
            rs.tipping(s, grid_s=grid)


def test_monte_carlo_summary_is_a_table_of_the_json_figures():
    r = rs.run(rs.Scenario.preset("primary-failover").set("engine", "agent"), runs=4, seed=3)
    table = r.summary
    assert list(table.columns) == ["mean", "low", "high", "min", "median", "max", "n"]
    figures = r.montecarlo["metrics"]
    assert list(table.index) == list(figures)
    for name, row in table.iterrows():
        for column in table.columns:
            expected = figures[name][column]  # None (it never happened) is NaN
            assert row[column] == expected or (expected is None and pd.isna(row[column]))
    assert table.loc["failed_fraction", "n"] == 4
    assert rs.run(rs.Scenario.preset("primary-failover")).summary is None


def test_ladder_has_one_value_per_cell_and_its_goodput_beside(cli):
    ladder = rs.ladder(rs.Scenario.preset("primary-failover"))
    for column in ladder.columns:
        assert not any(isinstance(v, (list, dict)) for v in ladder[column]), column
    goodput = ladder.attrs["goodput_per_s"]
    theirs = json.loads(cli("ladder", "--preset", "primary-failover", "--format", "json").stdout)
    assert list(goodput.columns) == ["t_s", *[row["name"] for row in theirs["rows"]]]
    for row in theirs["rows"]:
        assert list(goodput[row["name"]]) == row["goodput_per_s"]
    assert goodput["t_s"].iloc[0] == 0 and goodput["t_s"].is_monotonic_increasing


def test_the_request_log_is_the_command_lines_requests_csv(cli, tmp_path):
    s = rs.Scenario.preset("primary-failover").set("engine", "agent").set("horizon_s", 40)
    s.set("demand.rate_per_s", 60).set("server.capacity_per_s", 100)
    path = tmp_path / "s.json"
    path.write_text(json.dumps(s.to_dict()))
    cli("run", "--scenario", str(path), "--log", str(tmp_path / "log"))
    theirs = pd.read_csv(tmp_path / "log" / "requests.csv", float_precision="round_trip")
    ours = rs.requests(s)
    assert list(ours.columns) == list(theirs.columns)
    assert str(ours["outcome"].dtype) == "category"
    # requests.csv writes times to the millisecond; the DataFrame keeps the doubles.
    pd.testing.assert_frame_equal(
        ours.assign(outcome=ours["outcome"].astype(str)), theirs, check_dtype=False,
        check_exact=False, rtol=0, atol=0.0005 + 1e-9,
    )
    assert rs.run(s).requests().equals(ours)
    with pytest.raises(ValueError, match="max_rows=10"):
        rs.requests(s, max_rows=10)
    with pytest.raises(ValueError, match="needs engine agent"):
        rs.requests(rs.Scenario.preset("primary-failover"))
    graph = rs.requests(rs.Scenario.preset("three-tier-chain").set("engine", "agent"))
    assert "call" in graph.columns and graph["call"].min() >= 0


def test_session_results_are_built_once_and_their_band_has_t_s():
    r = rs.run(rs.Scenario.preset("scheduler-429-outage"), runs=2)
    first = r.metrics
    started = time.perf_counter()
    for _ in range(20):
        assert r.metrics == first and r.verdict["headline"]
        r.montecarlo
    assert (time.perf_counter() - started) / 20 < 0.002  # was 5-12 ms per access
    band = r.band
    assert list(band.columns)[0] == "t_s"
    assert band["t_s"].equals(r.series["t_s"])
    assert r.to_dict()["metrics"] == first


def test_risk_answers_as_the_command_line_does(random_server):
    r = rs.risk(random_server(), loads=[0.5, 1.0], runs=4)
    assert [level["load"] for level in r["levels"]] == [0.5, 1.0]
    assert r["levels"][0]["tipped_within_horizon"]["k"] == 0
    assert r["levels"][0]["exact"]["states"] > 1000
    assert "one timeout of work" in r["stuck_rule"]["text"]


def test_risk_map_is_a_table_with_the_operating_point(random_server):
    r = rs.risk(random_server(), loads=[0.5, 1.0], runs=2, vary="client.retries=0,4")
    table = r["table"]
    assert list(table.columns) == ["value", "load", "tip_within_day", "leave_mean_s", "leave_low_s",
                                   "stuck_runs", "operating", "leave"]
    assert len(table) == 4
    assert set(table.leave) <= {"none", "never", "measured"}
    assert (table.leave == "none").equals(table.stuck_runs == 0)
    assert table.operating.sum() == 1
    assert table[table.operating].iloc[0].value == 4


def test_risk_tells_no_storm_from_a_storm_that_does_not_end(random_server):
    """The mean time to leave is None both when no run was stuck and when
    none of those stuck left by the horizon: "leave" says which."""
    calm = rs.risk(random_server(demand__rate_per_s=5), runs=8, exact=False)["levels"][0]
    spike = random_server(demand__rate_per_s=5, server__queue_limit=100,
                          client__backoff__base_s=0, incident__start_s=60,
                          incident__duration_s=10, incident__capacity_factor=1,
                          incident__demand_factor=4, horizon_s=900)
    stuck = rs.risk(spike, runs=8, exact=False)["levels"][0]
    assert calm["time_to_leave"]["mean_s"] is None and calm["leave"] == "none"
    assert stuck["stuck_to_leave"]["k"] == 8
    assert stuck["time_to_leave"]["mean_s"] is None and stuck["leave"] == "never"


def test_risk_refuses_a_scenario_without_randomness():
    with pytest.raises(ValueError, match="nothing in this scenario is random"):
        rs.risk(rs.Scenario.preset("order-status"), runs=2)


def test_risk_by_splitting_sees_what_few_runs_cannot(random_server):
    r = rs.risk(random_server(), loads=[0.5], runs=4, exact=False, splitting=True,
                split_effort=10, split_runs=3, split_levels=4)
    level = r["levels"][0]
    assert level["tipped_within_horizon"]["k"] == 0
    split = level["splitting"]
    assert split["effort"] == 10 and split["runs"] == 3
    assert split["levels"] == [8, 16, 24, 31]
    assert 0 <= split["low"] <= split["p"] <= split["high"] < 0.01
    assert split["engine_runs"] <= 3 * 10 * 5


def test_step_down_finds_the_loop(random_server):
    r = rs.step_down(random_server(server__queue_limit=99), from_load=0.1, to_load=1.2,
                     runs=4)
    assert r["hold_s"] == 120
    assert len(r["loads"]) == 23
    assert list(r["table"].columns) == [
        "seed", "tipped_s", "tipped_load", "stuck_at_top", "recovered_s", "recovered_load"
    ]
    assert r["recovery_load"] < r["tipping_load"]
    with pytest.raises(ValueError, match="step"):
        rs.step_down(random_server(), step=0)


def test_empty_names_and_a_damaged_pickle_are_value_errors():
    import pickle

    with pytest.raises(ValueError, match="name: '' is empty"):
        rs.Scenario.preset("")
    with pytest.raises(ValueError, match="path: '' is empty"):
        rs.Scenario.scenario_file("")
    damaged = pickle.dumps(rs.Scenario()).replace(b'{"api"', b'["api"')
    with pytest.raises(ValueError, match="pickled scenario"):
        pickle.loads(damaged)


@pytest.mark.parametrize(
    "call, error, words",
    [
        # A fraction where a whole number belongs was cut by int(); beyond the
        # core's int it was pybind11's signature; a bool was read as 1.
        (lambda s: rs.sweep(s, {"client.retries": [1]}, runs=1.7), ValueError, "runs: 1.7"),
        (lambda s: rs.sweep(s, {"client.retries": [1]}, threads=-1), ValueError, "threads: -1"),
        (lambda s: rs.sweep(s, {"client.retries": [1]}, task_points=0), ValueError,
         "task_points: 0"),
        (lambda s: rs.sweep(s, {"client.retries": [True, False]}), ValueError,
         "vary client.retries"),
        (lambda s: rs.tipping(s, True), TypeError, "grid_s: True"),
        (lambda s: rs.run(s, seed=True), TypeError, "seed: True"),
        (lambda s: rs.run(s, runs=2.5), ValueError, "runs: 2.5"),
        (lambda s: rs.requests(s.set("engine", "agent"), max_rows=-1), ValueError, "max_rows"),
        (lambda s: rs.risk(s, loads="12"), TypeError, "loads: give numbers"),
        (lambda s: rs.risk(s, runs=10**30), ValueError, "runs: 1000000000000000000000000000000"),
        (lambda s: rs.risk(s, splitting=True, split_runs=2.9), ValueError, "split_runs: 2.9"),
        (lambda s: rs.step_down(s, runs=1.5), ValueError, "runs: 1.5"),
    ],
)
def test_arguments_are_checked_as_the_command_line_checks_flags(call, error, words,
                                                                 random_server):
    with pytest.raises(error, match=words):
        call(random_server())


def test_numbers_of_any_kind_and_a_single_load_are_accepted(random_server):
    s = random_server()
    assert [level["load"] for level in rs.risk(s, loads=1.0, runs=2)["levels"]] == [1.0]
    frame = rs.sweep(rs.Scenario(), {"client.retries": [np.int64(1)]}, runs=np.int64(1),
                     seed=np.float64(3))
    assert len(frame) == 1


def test_a_hold_shorter_than_a_step_is_one_step(random_server):
    # It came to no step at all: a run of no length that never tipped.
    answer = rs.step_down(random_server(), hold_s=1e-10, runs=2)
    assert answer["hold_s"] == random_server().get("step_s")


def test_arguments_are_checked_as_the_command_line_checks_its_flags(tmp_path):
    """No bool is a number, numpy's numbers are numbers, and a wrong type is a
    TypeError naming the argument, not pybind11's signature."""
    import numpy as np

    s = rs.Scenario.preset("order-status")
    with pytest.raises(TypeError, match="load"):
        rs.lint(s, load=True)
    with pytest.raises(TypeError, match="instances"):
        rs.lint(s, instances=True)
    with pytest.raises(ValueError, match="client.retries"):
        rs.sweep(s, {"client.retries": ("0", "3", "1")})
    with pytest.raises(ValueError, match="client.retries"):
        rs.sweep(s, {"client.retries": (False, True, True)})
    with pytest.raises(TypeError, match="vary"):
        rs.risk(s, vary={"client.retries": [0, 1]})
    with pytest.raises(TypeError, match="to"):
        rs.export(s, to=None)
    log = tmp_path / "sessions.csv"
    log.write_text("session_id,start_s,end_s,outcome\na,0,10,completed\n")
    plain = {k: v for k, v in rs.analyze([log], from_s=0.0).items() if k != "tables"}
    numpy = {k: v for k, v in rs.analyze([log], from_s=np.int64(0)).items() if k != "tables"}
    assert numpy == plain


def test_studies_validate_their_scenario_as_the_command_line_does(cli):
    # Scenario.set checks one key alone; a study of a scenario that fails
    # validation crashed (a graph's unknown service) or answered nonsense.
    graph = rs.Scenario.preset("three-tier-chain").set("incident.service", "zzz")
    refused = cli("tipping", "--preset", "three-tier-chain", "--set", "incident.service=zzz",
                  check=False)
    assert refused.returncode == 2
    for study in (rs.tipping, rs.ladder, lambda s: rs.risk(s, runs=2),
                  lambda s: rs.step_down(s, from_load=0.5, to_load=1.0, step=0.5)):
        with pytest.raises(ValueError, match="incident.service"):
            study(graph)
    half = rs.Scenario.preset("order-status").set("horizon_s", 100.5)
    for study in (rs.tipping, rs.lint):
        with pytest.raises(ValueError, match="horizon_s"):
            study(half)


def test_a_sweep_works_on_its_own_copy_of_the_scenario():
    # Another thread changing the scenario while the sweep (GIL released)
    # copies it point by point crashed the interpreter.
    s = rs.Scenario.preset("order-status")
    stop = threading.Event()

    def mutate():
        i = 0
        while not stop.is_set():
            s.set("description", "x" * (1_000_000 + (i % 7) * 300_000))
            i += 1

    worker = threading.Thread(target=mutate)
    worker.start()
    try:
        for _ in range(3):
            rows = rs.sweep(s, {"client.retries": (0, 4, 1), "incident.duration_s": (1, 40, 1)},
                            threads=2)
            assert len(rows) == 5 * 40
    finally:
        stop.set()
        worker.join()


def test_lint_of_a_scenario_simulates_that_scenario(source_dir, cli):
    s = rs.Scenario.preset("order-status")
    ours = rs.lint(s, simulate=True)
    theirs = json.loads(
        cli("lint", "--preset", "order-status", "--simulate", "--format", "json",
            check=False).stdout
    )
    assert ours["simulation"]["scenario"] == theirs["simulation"]["scenario"]

    def same(findings):  # the file and message name the source: "scenario ..." or "preset ..."
        return [(f["rule"], f["numbers"], f.get("fix")) for f in findings]

    assert same(ours["findings"]) == same(theirs["findings"])
    with pytest.raises(ValueError, match="incident"):
        rs.lint(s, simulate=True, incident="brief-outage")
    path = source_dir / "examples/random-tipping.yaml"
    ours = rs.lint(rs.Scenario.scenario_file(path))
    theirs = json.loads(cli("lint", "--scenario", str(path), "--format", "json",
                            check=False).stdout)
    assert same(ours["findings"]) == same(theirs["findings"])
    assert any(f["rule"] == "load" or "load" in f["message"] for f in ours["findings"])


def test_a_rung_of_its_own_horizon_and_step_keeps_its_own_times():
    d = rs.Scenario.preset("primary-failover").to_dict()
    d["ladder"] = {"mode": "single", "rows": [
        {"name": "base", "change": "x", "set": {"client.retries": 0}},
        {"name": "coarse", "change": "c", "set": {"horizon_s": 30.0, "step_s": 1.0}},
        {"name": "short", "change": "s", "set": {"horizon_s": 30.0}},
    ]}
    ladder = rs.ladder(rs.Scenario.from_dict(d))
    goodput = ladder.attrs["goodput_per_s"]
    assert goodput["t_s"].is_monotonic_increasing
    for name, horizon in (("base", 120), ("coarse", 30), ("short", 30)):
        times = goodput.loc[goodput[name].notna(), "t_s"]
        assert times.iloc[0] == 0 and times.iloc[-1] < horizon
    # The short rung's 0.5 s buckets: its last starts at 29.5 s at most, not 118.
    assert goodput.loc[goodput["short"].notna(), "t_s"].iloc[-1] <= 29.5


def test_paths_with_a_nul_are_refused(source_dir):
    path = str(source_dir / "examples/random-tipping.yaml")
    with pytest.raises(ValueError, match="NUL"):
        rs.Scenario.scenario_file(path + "\0ignored")
    for call in (rs.analyze, rs.import_configs, rs.lint):
        with pytest.raises(ValueError, match="NUL"):
            call(path + "\0x")


def test_sweep_and_risk_arguments_of_the_wrong_kind_are_named():
    s = rs.Scenario()
    with pytest.raises(TypeError, match="vary"):
        rs.sweep(s, "client.retries=0,1,2")
    for spec in ({4: "a", 1: "b"}, {1, 2}):
        with pytest.raises(ValueError, match="vary client.retries"):
            rs.sweep(s, {"client.retries": spec})
    with pytest.raises(TypeError, match="exact"):
        rs.risk(s.set("engine", "agent"), runs=2, exact="no")
    # A flag: a bool, numpy's, or 1 and 0.
    agent = rs.Scenario.preset("order-status").set("engine", "agent").set("demand.process", "poisson")
    for yes in (True, np.bool_(True), 1):
        assert rs.risk(agent, loads=[0.9], runs=2, horizon_s=120, exact=yes)["levels"]


def test_ladder_goodput_columns_are_unique_and_never_t_s():
    # Rungs named alike kept only the last one's series; a rung named t_s
    # raised "cannot insert t_s, already exists".
    def ladder_of(names):
        d = rs.Scenario.preset("primary-failover").to_dict()
        d["ladder"] = {"mode": "single", "rows": [
            {"name": name, "change": f"retries {i}", "set": {"client.retries": i}}
            for i, name in enumerate(names)
        ]}
        return rs.ladder(rs.Scenario.from_dict(d))

    ours = ladder_of(["base", "base", "t_s"])
    assert list(ours["name"]) == ["base", "base", "t_s"]  # the rows keep the rungs' names
    goodput = ours.attrs["goodput_per_s"]
    assert list(goodput.columns) == ["t_s", "base", "base (2)", "t_s (2)"]
    distinct = ladder_of(["a", "b", "c"]).attrs["goodput_per_s"]
    for column, rung in (("base", "a"), ("base (2)", "b"), ("t_s (2)", "c")):
        assert list(goodput[column]) == list(distinct[rung])
    assert not goodput["base"].equals(goodput["base (2)"])
    # A suffix no rung is named: a later rung "a (2)" keeps its own name.
    assert rs.api._rung_columns(["a", "a", "a (2)", "a"]) == ["a", "a (3)", "a (2)", "a (4)"]


def test_get_reads_the_graph_keys_set_takes():
    s = rs.Scenario.preset("three-tier-chain")
    s.set("calls[1].retries", 2).set("services.db.queue_limit", 50).set("calls[0].optional", True)
    assert s.get("calls[1].retries") == 2
    assert s.get("services.db.queue_limit") == 50
    assert s.get("calls[0].optional") is True
    assert s.get("calls[0].timeout_s") == 4.0  # the call's own
    assert s.get("calls[2].retries") == s.get("client.retries")  # else the scenario's
    with pytest.raises(ValueError, match=r"calls\[9\]: the scenario has 4 calls"):
        s.get("calls[9].retries")
    with pytest.raises(ValueError, match="services.nope: no such service"):
        s.get("services.nope.slots")


def test_export_validates_its_scenario_as_the_command_line_does(cli):
    half = rs.Scenario.preset("order-status").set("horizon_s", 100.5)
    refused = cli("export", "--preset", "order-status", "--set", "horizon_s=100.5", "--to", "envoy",
                  check=False)
    assert refused.returncode == 2
    with pytest.raises(rs.InputError) as e:
        rs.export(half, "envoy")
    assert str(e.value) == "horizon_s: 100.5 is not a whole number of steps of step_s = 1"
    assert str(e.value) in refused.stderr


def test_a_number_past_a_double_is_a_value_error_naming_the_argument(random_server):
    s = random_server()
    for call, name in ((lambda: rs.run(s, seed=10**400), "seed"),
                       (lambda: rs.tipping(s, grid_s=10**400), "grid_s"),
                       (lambda: rs.risk(s, loads=[1.0, 10**400]), r"loads\[1\]"),
                       (lambda: rs.risk(s, loads=10**400), "loads"),
                       (lambda: rs.step_down(s, runs=10**400), "runs")):
        with pytest.raises(ValueError, match=rf"^{name}: 1000.*\(401 characters\) is outside the "
                                             "range of numbers$"):
            call()
    # Past Python's 4300 digits an int has no repr: its size instead.
    with pytest.raises(ValueError, match="^seed: an integer of 16610 bits is outside the range"):
        rs.run(s, seed=10**5000)


def test_a_single_bytes_path_is_refused_as_a_list_of_them_is(source_dir):
    path = bytes(source_dir / "tests/fixtures/logs/requests.csv")
    for call in (rs.analyze, rs.import_configs, rs.lint):
        for given in (path, [path]):
            with pytest.raises(TypeError, match="give a str or a pathlib.Path, not bytes"):
                call(given)


# Each on/off option and a call that takes it: (name, call(scenario, value)).
FLAG_CALLS = [
    ("trace", lambda s, v: rs.run(s, trace=v)),
    ("allow_large", lambda s, v: rs.run(s, allow_large=v)),
    ("allow_large", lambda s, v: rs.requests(s, allow_large=v)),
    ("allow_large", lambda s, v: rs.ladder(s, allow_large=v)),
    ("allow_large", lambda s, v: rs.tipping(s, allow_large=v)),
    ("allow_large", lambda s, v: rs.risk(s, runs=2, allow_large=v)),
    ("splitting", lambda s, v: rs.risk(s, runs=2, splitting=v)),
    ("allow_large", lambda s, v: rs.step_down(s, runs=2, allow_large=v)),
    ("allow_large", lambda s, v: rs.sweep(s, {"client.retries": [0]}, allow_large=v)),
    ("progress", lambda s, v: rs.sweep(s, {"client.retries": [0]}, progress=v)),
    ("simulate", lambda s, v: rs.lint(s, simulate=v)),
]


@pytest.mark.parametrize(
    "name, call, value",
    [pytest.param(name, call, value, id=f"{i}-{name}={value!r}")
     for i, (name, call) in enumerate(FLAG_CALLS) for value in (None, 2.0, "no", 2)
     if not (name == "progress" and value is None)],  # progress=None: a bar where one shows
)
def test_every_on_off_option_is_a_flag(name, call, value, random_server):
    # Each was handed to pybind11 or bool(): None was False, 2.0 and "no" True.
    with pytest.raises(TypeError, match=f"^{name}: {value!r} is not a flag; give True or False$"):
        call(random_server(), value)


def test_a_huge_int_as_a_flag_is_refused_naming_the_option():
    # Past Python's 4300 digits an int has no repr: the message still names it.
    with pytest.raises(TypeError, match="^trace: an integer of .* bits is not a flag"):
        rs.run(rs.Scenario.preset("order-status"), trace=10**5000)


def test_flags_still_take_bools_numpy_bools_and_1_and_0():
    s = rs.Scenario.preset("order-status")
    for no in (False, np.bool_(False), 0):
        assert rs.tipping(s, allow_large=no) == rs.tipping(s)
        assert rs.run(s, trace=no, allow_large=no).to_json() == rs.run(s, trace=False).to_json()
        assert rs.lint(s, simulate=no) == rs.lint(s)


def test_a_listed_axis_past_the_point_limit_is_refused_before_it_is_listed():
    class Huge:
        """3,000,000 values that must never be listed."""

        def __len__(self):
            return 3 * 10**6

        def __iter__(self):
            raise AssertionError("listed")

        def __getitem__(self, i):
            raise AssertionError("listed")

    s = rs.Scenario.preset("order-status")
    limit = rs._core._sweep_max_points
    assert limit == 1_000_000
    for values, count in ((Huge(), 3 * 10**6), (range(3 * 10**6), 3 * 10**6),
                          (range(10**20), 10**20), (range(0, 10**20, 7), (10**20 - 1) // 7 + 1)):
        with pytest.raises(rs.InputError) as e:
            rs.sweep(s, {"client.retries": values})
        assert str(e.value) == (
            f"vary client.retries: the grid has more than 1000000 points ({count} listed "
            "values); the limit is 1000000"
        )
    # The words the core gives a listed axis it counts itself.
    with pytest.raises(rs.InputError, match=r"more than 1000000 points \(1000001 listed values\)"):
        rs._core._sweep_grid(s, [("client.retries", 0.0, 0.0, 1.0, [0.0] * 1_000_001)])
    # At the limit the grid is the core's to check (here its cost).
    with pytest.raises(ValueError, match=r"make 1e\+06 points"):
        rs.sweep(s, {"client.retries": range(10**6)})
