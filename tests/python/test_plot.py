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


def test_risk_map_colours_each_cell_and_rings_the_operating_point(random_server):
    answer = rs.risk(random_server(), loads=[0.5, 1.0], runs=2, exact=False,
                     vary="client.retries=0,4")
    ax = rs.plot.risk_map(answer)
    grid = ax.images[0].get_array()
    assert grid.shape == (2, 2)
    table = answer["table"]
    tip = table[(table.value == 4) & (table.load == 1.0)].tip_within_day.iloc[0]
    assert grid[1][1] == tip
    assert [t.get_text() for t in ax.get_yticklabels()] == ["0", "4"]
    assert len(ax.collections) == 1  # the ring around the scenario as it stands
    ax = rs.plot.risk_map(answer, colour="leave")
    assert 0 <= ax.images[0].get_array().min() and ax.images[0].get_array().max() <= 1
    plt.close("all")


def test_risk_map_refuses_what_it_cannot_draw(random_server):
    import pytest

    with pytest.raises(ValueError, match="colour"):
        rs.plot.risk_map({"table": None}, colour="blue")
    with pytest.raises(ValueError, match="vary"):
        rs.plot.risk_map(rs.risk(random_server(), runs=2, exact=False))
