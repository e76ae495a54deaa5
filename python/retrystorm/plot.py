"""The page's charts with matplotlib, for notebooks and papers: the load
chart (first attempts and retries stacked, capacity, on-time and late
responses, the backlog below) and the defense ladder's bars.

    import retrystorm as rs, retrystorm.plot
    rs.plot.load_chart(rs.run(rs.Scenario.preset("primary-failover")))
"""

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
