"""The package's functions over retrystorm._core: the C++ answers as dicts,
and as pandas DataFrames where they are tables (docs/python.md)."""

import numbers
import os

import pandas as pd

from . import _core
from ._args import flag, number, number_list, optional_number, optional_whole, whole
from ._core import Scenario


def presets():
    """The presets compiled into the program: name, description, engine."""
    return _core.presets()


def keys():
    """The key table (docs/scenario-keys.md), one row per key, indexed by path:
    type, min, max, min_exclusive, choices, unit, group, label, help, default."""
    return pd.DataFrame(_core.keys()).set_index("path")


class Result:
    """One run's answer (what `retrystorm run --format json` writes).

    .metrics, .verdict: dicts; .series: one row per step (per bucket for the
    session model) with the JSON result's names; .services and .calls: a
    graph's per-service and per-call DataFrames; .band: the Monte Carlo band
    (None for one run); .montecarlo: the Monte Carlo part of the JSON answer;
    .summary: its figures as a table; .requests(): the per-request log
    (agent engine); .to_json(): the command line's bytes."""

    def __init__(self, answer):
        self._answer = answer
        self._series = None
        self._sessions = None  # the session model's answer, built once

    def _session_part(self, name):
        # The session model's parts come from its JSON answer: built on the
        # first access, not on every one.
        if self._sessions is None:
            self._sessions = self._answer.to_dict()
        return self._sessions.get(name)

    @property
    def engine(self):
        return self._answer.engine

    @property
    def scenario(self):
        """The scenario that ran (with runs and seed as given)."""
        return self._answer.scenario

    @property
    def metrics(self):
        if self.engine == "sessions":
            return self._session_part("metrics")
        return self._answer.metrics()

    @property
    def verdict(self):
        if self.engine == "sessions":
            return self._session_part("verdict")
        return self._answer.verdict()

    @property
    def series(self):
        # One copy: numpy views over the C++ buffers, consolidated by pandas.
        if self._series is None:
            columns = self._session_part("series") if self.engine == "sessions" else None
            self._series = pd.DataFrame(columns or self._answer.series())
        return self._series

    @property
    def services(self):
        """A graph's services: name -> DataFrame, one row per step (t_s, then
        the per-service series of docs/graph.md); {} without a graph."""
        t_s = self.series["t_s"].to_numpy() if self.engine != "sessions" else None
        return {
            name: pd.DataFrame({"t_s": t_s, **columns})
            for name, columns in self._answer.graph_services()
        }

    @property
    def calls(self):
        """A graph's calls in the scenario's order: one DataFrame each, one row
        per step (t_s, then the per-edge series), with attrs["from"] and
        attrs["to"]; [] without a graph."""
        t_s = self.series["t_s"].to_numpy() if self.engine != "sessions" else None
        frames = []
        for caller, callee, columns in self._answer.graph_calls():
            frame = pd.DataFrame({"t_s": t_s, **columns})
            frame.attrs["from"], frame.attrs["to"] = caller, callee
            frames.append(frame)
        return frames

    @property
    def montecarlo(self):
        if self.engine == "sessions":
            return self._session_part("montecarlo")
        return self._answer.montecarlo()

    @property
    def band(self):
        """The Monte Carlo band, one row per step (per bucket for the session
        model): t_s, then <series>_low, _mean, _high; None for one run."""
        mc = self.montecarlo
        if mc is None:
            return None
        band = pd.DataFrame(mc["band"])
        # The JSON object's keys come sorted (_high before _low): each
        # series' low, mean and high in that order, as documented.
        bases = list(dict.fromkeys(name.rsplit("_", 1)[0] for name in band.columns))
        band = band[[f"{base}_{end}" for base in bases for end in ("low", "mean", "high")]]
        band.insert(0, "t_s", self.series["t_s"].to_numpy())  # one row per step, as the series
        return band

    @property
    def summary(self):
        """The Monte Carlo figures as a table, one row per metric (indexed by
        name): mean, low, high (the 95% interval of the mean), min, median,
        max over the seeds, and n (the seeds where it happened); None for one run."""
        mc = self.montecarlo
        if mc is None:
            return None
        table = pd.DataFrame.from_dict(mc["metrics"], orient="index")
        table = table[["mean", "low", "high", "min", "median", "max", "n"]]
        table.index.name = "metric"
        return table.astype({"n": "int64"})

    def requests(self, max_rows=20_000_000):
        """The per-request log of this run (the agent engine; the run of its
        seed, replication 0 with runs > 1), as rs.requests gives it."""
        return requests(self.scenario, max_rows=max_rows, allow_large=True)

    def to_json(self):
        return self._answer.to_json()

    def to_dict(self):
        return self._answer.to_dict()

    def __repr__(self):
        return f"<retrystorm.Result {self.engine}: {self.verdict['headline']}>"


def run(scenario, runs=None, seed=None, *, trace=True, allow_large=False):
    """Runs a scenario as `retrystorm run` does; runs and seed as --runs and
    --seed (None: the scenario's keys). The GIL is released while it runs."""
    runs = optional_whole("runs", runs)
    return Result(_core.run(scenario, runs, optional_number("seed", seed), flag("trace", trace),
                            flag("allow_large", allow_large)))


def requests(scenario, seed=None, *, max_rows=20_000_000, allow_large=False):
    """The per-request log of an agent-engine run (what `retrystorm run --log
    DIR` writes to requests.csv, docs/log-formats.md): one row per attempt,
    request_id, attempt, sent_s, done_s (NaN: never answered), outcome (a
    categorical: ok, late, timeout, ...), layer, and call for a graph. More
    than max_rows attempts raise ValueError before memory runs out."""
    max_rows = whole("max_rows", max_rows, 1, 2**62)
    columns = _core._request_log(scenario, optional_number("seed", seed), max_rows,
                                 flag("allow_large", allow_large))
    names = columns.pop("outcomes")
    columns["outcome"] = pd.Categorical.from_codes(columns["outcome"], categories=names)
    return pd.DataFrame(columns)


def _flat_rows(rows):
    """One flat dict per row: nested dicts become dotted columns."""
    return pd.json_normalize(rows, sep=".")


def ladder(scenario, *, allow_large=False):
    """The defense ladder (`retrystorm ladder`): one row per rung, its metrics
    and verdict as columns (metrics.<name>, verdict.recovered, ...), one value
    per cell. Each rung's on-time goodput per second, averaged over at most
    60 equal buckets of steps (the page's small lines), is in
    .attrs["goodput_per_s"]: a DataFrame with t_s (each bucket's start) and
    one column per rung, in the rungs' order, named by the rung (a name
    already taken, by an earlier rung or by t_s, gets " (2)", " (3)", ...)."""
    rows = _core.ladder(scenario, flag("allow_large", allow_large))["rows"]
    goodput = {}
    for row, column in zip(rows, _rung_columns([row["name"] for row in rows])):
        rung = row.pop("scenario", None) or {}  # the whole scenario of each rung: in to_dict()
        values = row.pop("goodput_per_s", None)
        if values is not None:
            goodput[column] = pd.Series(values, index=_bucket_starts(
                rung.get("horizon_s", scenario.get("horizon_s")),
                rung.get("step_s", scenario.get("step_s")), len(values)))
    table = _flat_rows(rows)
    table.attrs["goodput_per_s"] = _rung_series(goodput)
    return table


def _rung_columns(names):
    """A column name per rung, unique and never t_s: a rung keeps its name
    unless an earlier rung has it or it is t_s; then the name with the first
    free " (2)", " (3)", ... (free: no rung's own name either), so that no
    rung's goodput replaces another's."""
    taken = {"t_s", *names}  # what a new name must not be
    used, columns = {"t_s"}, []
    for name in names:
        column, n = name, 2
        if column in used:
            while f"{name} ({n})" in taken:
                n += 1
            column = f"{name} ({n})"
            taken.add(column)
        used.add(column)
        columns.append(column)
    return columns


def _bucket_starts(horizon_s, step_s, buckets):
    """The start of each of a run's buckets of steps (ladder.cpp, spark_of)."""
    steps = round(horizon_s / step_s)
    return [(b * steps // buckets) * step_s for b in range(buckets)]


def _rung_series(columns):
    """One column per rung over t_s (columns: name -> Series indexed by its
    buckets' starts): a rung that changes horizon_s or step_s has buckets of
    its own, and is NaN at the other rungs' times."""
    if not columns:
        return pd.DataFrame()
    series = pd.DataFrame(columns).sort_index()
    series.index.name = "t_s"
    return series.reset_index()


def tipping(scenario, grid_s=0.0, *, allow_large=False):
    """The tipping point (`retrystorm tipping`): the shortest incident after
    which the scenario does not recover: grid_s, on_grid_s, exact_s."""
    return _core.tipping(scenario, number("grid_s", grid_s), flag("allow_large", allow_large))


def risk(scenario, loads=(1.0,), *, runs=0, horizon_s=0.0, threads=0, exact=True, vary=None,
         splitting=False, split_effort=40, split_runs=8, split_levels=8, allow_large=False):
    """How likely chance tips the scenario into the stuck state and how long it
    stays (`retrystorm risk --format json`, docs/risk.md): per load, the share
    of runs that tipped, the mean times to tip and to leave with their 95%
    intervals, the exact chain where the scenario is one. With
    splitting=True each level also has "splitting": the chance of tipping
    estimated by multilevel splitting, for tips too rare for `runs` to see.
    With vary="client.retries=0,1,2,3" the metastable region over that knob:
    the answer's "table" is a DataFrame with a row per knob value and load."""
    loads, runs, horizon_s, exact, vary, split = risk_request(
        loads, runs, horizon_s, exact, vary, splitting, split_effort, split_runs, split_levels
    )
    answer = _core.risk(scenario, loads, runs, horizon_s, whole("threads", threads), exact, vary,
                        flag("allow_large", allow_large), split)
    return with_risk_table(answer, vary)


def risk_request(loads, runs, horizon_s, exact, vary, splitting, split_effort, split_runs,
                 split_levels):
    """rs.risk's arguments checked: (loads, runs, horizon_s, exact, vary,
    split), as rs.risk and rs.distributed.risk hand them to the core."""
    split = [whole("split_effort", split_effort), whole("split_runs", split_runs),
             whole("split_levels", split_levels)] if flag("splitting", splitting) else []
    if vary is not None and not isinstance(vary, str):
        raise TypeError(f"vary: {vary!r} is not text like 'client.retries=0,1,2'")
    return (number_list("loads", loads), whole("runs", runs), number("horizon_s", horizon_s),
            flag("exact", exact), vary or "", split)


def with_risk_table(answer, vary):
    """rs.risk's answer with, for a map (vary), its "table" DataFrame."""
    if vary:
        answer["table"] = pd.DataFrame(
            {
                "value": row["value"],
                "load": level["load"],
                "tip_within_day": level["time_to_tip"]["within_day"]["p"],
                "leave_mean_s": level["time_to_leave"]["mean_s"],
                "leave_low_s": level["time_to_leave"]["low_s"],
                "stuck_runs": level["stuck_to_leave"]["k"],
                "operating": row["value"] == answer["operating_value"] and level["load"] == 1,
                "leave": level["leave"],
            }
            for row in answer["rows"]
            for level in row["levels"]
        )
    return answer


def step_down(scenario, *, from_load=0.5, to_load=1.5, step=0.1, hold_s=0.0, runs=0, threads=0,
              allow_large=False):
    """The hysteresis loop (`retrystorm step-down --format json`, docs/risk.md):
    the load climbs from from_load to to_load by step, holding each for
    hold_s (0: 40 timeouts, at least 60 s), then comes back down; the answer
    gives where each run became stuck going up and healthy again coming
    down, their medians, and run 0's series. "table" is a DataFrame of the
    runs."""
    answer = _core.step_down(scenario, number("from_load", from_load),
                             number("to_load", to_load), number("step", step),
                             number("hold_s", hold_s), whole("runs", runs),
                             whole("threads", threads), flag("allow_large", allow_large))
    answer["table"] = pd.DataFrame(
        answer["runs"],
        columns=["seed", "tipped_s", "tipped_load", "stuck_at_top", "recovered_s",
                 "recovered_load"],
    )
    return answer


def _paths(paths):
    if isinstance(paths, (str, bytes, os.PathLike)):  # one path; bytes refused below, not iterated
        paths = [paths]
    out = [os.fspath(p) for p in paths]
    for p in out:
        if not isinstance(p, str):
            raise TypeError(f"paths: {p!r}: give a str or a pathlib.Path, not bytes")
        if "\0" in p:  # the file system would read the path up to it: another file
            raise ValueError(f"paths: {p!r} holds a NUL character, which no file name can")
    return out


def _time(name, value):
    """A time as --from and --to take it: a clock's text, or seconds (any real
    number, numpy's too; never a bool)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name}: give seconds or a clock like '1d09:40'")
    return float(value)


def analyze(paths, *, from_s=None, to_s=None, slots=None, deadline_s=None, ladder_s=()):
    """Incident analysis of logs (`retrystorm analyze --format json`): the
    report as a dict; its lists of rows (hours, ...) also as DataFrames
    under report["tables"]."""
    report = _core.analyze(_paths(paths), _time("from_s", from_s), _time("to_s", to_s),
                           optional_number("slots", slots),
                           optional_number("deadline_s", deadline_s),
                           number_list("ladder_s", ladder_s))
    report["tables"] = {
        name: pd.DataFrame(value)
        for name, value in report.items()
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value)
    }
    return report


def import_configs(paths):
    """Reads retry configurations (`retrystorm import`): keys (flat), scenario
    (nested, as a scenario file), formats, warnings, from (where each key came
    from)."""
    return _core.import_configs(_paths(paths))


def export(scenario, to="envoy"):
    """A scenario's client policy as a real system's configuration
    (`retrystorm export --to`): system, text, notes."""
    if not isinstance(to, str):
        raise TypeError(f"to: {to!r} is not a system's name, like 'envoy'")
    return _core.export(scenario, to)


def lint(target, *, load=None, simulate=False, incident=None, instances=None):
    """Lints configuration files (a path or a list of paths), or a Scenario's
    own client policy (`retrystorm lint --format json`); exit_status is the
    command's. load: demand / capacity (--load); simulate with the preset
    `incident` (--simulate --preset; default primary-failover); instances:
    client instances sharing the load (--instances)."""
    load, instances = optional_number("load", load), optional_whole("instances", instances)
    simulate = flag("simulate", simulate)
    if isinstance(target, Scenario):
        if incident is not None:  # as `lint --preset` takes no second preset
            raise ValueError(
                "incident: a Scenario is its own incident to simulate; give incident= with "
                "configuration files"
            )
        return _core.lint_scenario(target, f"scenario {target.name}", load, simulate, instances)
    return _core.lint_files(_paths(target), load, simulate, incident or "", instances)


