"""The page's charts with matplotlib, for notebooks and papers: the load
chart (first attempts and retries stacked, capacity, on-time and late
responses, the backlog below), the defense ladder's bars and the
metastable region of `risk` (rs.risk(..., vary=...)).

    import retrystorm as rs, retrystorm.plot
    rs.plot.load_chart(rs.run(rs.Scenario.preset("primary-failover")))
"""

import math

import matplotlib.pyplot as plt

# The page's colours (web/src/style.css), by series.
COLOURS = {
    "first": "#4c78a8",
    "retries": "#e45756",
    "capacity": "#333333",
    "good": "#2e9e44",
    "late": "#f58518",
    "backlog": "#7a5195",
    "failed": "#b00020",
}


def _per_second(result):
    """The series per second, as the page draws them (counts per step / step_s)."""
    s = result.series
    step = result.scenario.get("step_s")
    cols = ["capacity", "first_attempts", "retries", "goodput", "served_late", "failed"]
    out = s[cols] / step
    out["t_s"] = s.t_s
    out["backlog"] = s.backlog
    return out


def load_chart(result, ax=None, title=None, band=True):
    """The load chart of one per-step run (fluid or agent engine): demand
    (first attempts) and retries stacked, capacity, on-time and late
    responses; the backlog on a second panel when `ax` is not given.
    Returns the axes."""
    if result.engine == "sessions":
        raise ValueError("load_chart: a per-step run (engine fluid or agent), not sessions")
    d = _per_second(result)
    if ax is None:
        _, (ax, ax_backlog) = plt.subplots(
            2, 1, sharex=True, figsize=(9, 5.5), gridspec_kw={"height_ratios": [3, 1.2]}
        )
    else:
        ax_backlog = None
    t = d.t_s
    ax.stackplot(
        t,
        d.first_attempts,
        d.retries,
        colors=[COLOURS["first"], COLOURS["retries"]],
        alpha=0.35,
        labels=["First attempts", "Retries"],
    )
    ax.step(t, d.capacity, where="post", color=COLOURS["capacity"], lw=1.5, label="Capacity")
    ax.plot(t, d.goodput, color=COLOURS["good"], lw=2.2, label="On-time responses")
    ax.plot(t, d.served_late, color=COLOURS["late"], lw=1.8, ls="--", label="Late (wasted)")
    if band and result.band is not None:
        b = result.band
        step = result.scenario.get("step_s")
        ax.fill_between(
            b.t_s, b.goodput_low / step, b.goodput_high / step, color=COLOURS["good"], alpha=0.2,
            label=f"goodput 95% interval ({result.montecarlo['runs']} runs)",
        )
    ax.set_ylabel("per second")
    ax.set_title(title or result.verdict["headline"], fontsize=10)
    ax.legend(loc="upper right", fontsize=8)
    if ax_backlog is not None:
        # Two quantities of different units and sizes (a backlog of thousands,
        # a few failures per second): each on its own labelled axis.
        ax_backlog.fill_between(t, d.backlog, color=COLOURS["backlog"], alpha=0.3, label="Backlog")
        ax_backlog.set_ylabel("backlog (requests)", color=COLOURS["backlog"])
        ax_failed = ax_backlog.twinx()
        ax_failed.plot(t, d.failed, color=COLOURS["failed"], lw=1.2, label="Failed /s")
        ax_failed.set_ylabel("failed per second", color=COLOURS["failed"])
        ax_failed.set_ylim(bottom=0)
        ax_backlog.set_xlabel("seconds")
        handles = [*ax_backlog.get_legend_handles_labels()[0],
                   *ax_failed.get_legend_handles_labels()[0]]
        ax_backlog.legend(handles=handles, loc="upper right", fontsize=8)
    else:
        ax.set_xlabel("seconds")
    return ax


def ladder_bars(ladder, metric="metrics.failed_fraction", ax=None, title=None):
    """The defense ladder as bars, one per rung (rs.ladder(...)): the chosen
    metric, green where the rung recovers and red where it does not."""
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 0.45 * len(ladder) + 1.2))
    colours = [COLOURS["good"] if r else COLOURS["failed"] for r in ladder["verdict.recovered"]]
    ax.barh(ladder["name"], ladder[metric], color=colours)
    ax.invert_yaxis()  # the first rung on top, as the page lists them
    ax.set_xlabel(metric.split(".", 1)[-1].replace("_", " "))
    if title:
        ax.set_title(title, fontsize=10)
    return ax


def _leave_shade(row):
    """The mean time back as a shade from 0 to 1, as the page colours it:
    none stuck 0; a mean on a log scale from a minute (0) to a day (1); only
    a lower bound (none came back) at least that bound's shade, 1 from an
    hour up."""
    if row.stuck_runs == 0:
        return 0.0

    def shade(seconds):
        return min(1.0, max(0.0, math.log10(seconds / 60) / math.log10(1440)))

    if row.leave_mean_s is not None and not math.isnan(row.leave_mean_s):
        return shade(row.leave_mean_s)
    return 1.0 if row.leave_low_s >= 3600 else shade(max(row.leave_low_s, 1e-9))


def risk_map(answer, colour="tip", ax=None, title=None):
    """The metastable region of rs.risk(..., vary="KEY=V1,V2,..."): knob
    values down, loads across, each cell coloured by the chance of tipping
    within a day by chance (colour="tip") or by the mean time back once stuck
    (colour="leave", a log scale from a minute to a day), the scenario as it
    stands ringed."""
    if colour not in ("tip", "leave"):
        raise ValueError(f"colour: {colour!r}; allowed: 'tip' or 'leave'")
    table = answer.get("table")
    if table is None:
        raise ValueError("risk_map: the answer has no map; call rs.risk(..., vary=\"KEY=V1,V2\")")
    values = sorted(table.value.unique())
    loads = sorted(table.load.unique())
    grid = [[0.0] * len(loads) for _ in values]
    for row in table.itertuples():
        tone = row.tip_within_day if colour == "tip" else _leave_shade(row)
        grid[values.index(row.value)][loads.index(row.load)] = tone
    if ax is None:
        _, ax = plt.subplots(figsize=(1.1 * len(loads) + 2, 0.55 * len(values) + 1.5))
    image = ax.imshow(grid, cmap="Reds", vmin=0, vmax=1, aspect="auto", origin="lower")
    ax.set_xticks(range(len(loads)), [f"{x:g}x" for x in loads])
    ax.set_yticks(range(len(values)), [f"{v:g}" for v in values])
    ax.set_xlabel("load (multiple of demand)")
    ax.set_ylabel(answer["knob"])
    for row in table[table.operating].itertuples():
        ax.scatter([loads.index(row.load)], [values.index(row.value)], s=160, facecolors="none",
                   edgecolors="black", linewidths=1.5, label="the scenario as it stands")
    bar = ax.figure.colorbar(image, ax=ax)
    bar.set_label("chance of tipping within a day" if colour == "tip"
                  else "mean time back (1 min to 1 day, log)")
    if title:
        ax.set_title(title, fontsize=10)
    return ax
