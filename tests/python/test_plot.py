"""retrystorm.plot draws the page's charts with matplotlib (Agg backend)."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402

import retrystorm as rs  # noqa: E402
import retrystorm.plot  # noqa: E402,F401


def test_load_chart_draws_every_series(tmp_path):
    s = rs.Scenario.preset("primary-failover").set("engine", "agent")
    ax = rs.plot.load_chart(rs.run(s, runs=3))
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    for name in ("First attempts", "Retries", "Capacity", "On-time responses", "Late (wasted)"):
        assert name in labels
    assert any("95% interval" in label for label in labels)
    ax.figure.savefig(tmp_path / "load.png")
    assert (tmp_path / "load.png").stat().st_size > 10_000
    plt.close("all")


def test_ladder_bars_one_bar_per_rung():
    ladder = rs.ladder(rs.Scenario.preset("primary-failover"))
    ax = rs.plot.ladder_bars(ladder)
    assert len(ax.patches) == len(ladder)
    plt.close("all")


def test_load_chart_puts_failures_on_their_own_labelled_axis():
    import matplotlib.pyplot as plt

    rs.plot.load_chart(rs.run(rs.Scenario.preset("primary-failover")))
    fig = plt.gcf()
    labels = {ax.get_ylabel() for ax in fig.axes}
    assert {"per second", "backlog (requests)", "failed per second"} <= labels
    failed_axis = next(ax for ax in fig.axes if ax.get_ylabel() == "failed per second")
    assert failed_axis.get_lines()[0].get_ydata().max() > 0  # visible, not flat at 0
    plt.close("all")
