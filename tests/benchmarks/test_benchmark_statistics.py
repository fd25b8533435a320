"""Aggregate metrics, stratified bootstrap intervals and performance profiles."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import mannwhitneyu, trim_mean

from palaestra.benchmarks import statistics as st


@pytest.fixture
def table() -> np.ndarray:
    rng = np.random.default_rng(0)
    return rng.uniform(0, 1.3, size=(5, 7))  # (runs, tasks), as rliable takes it


def test_point_estimates_follow_rliable_definitions(table: np.ndarray) -> None:
    # rliable.metrics: mean/median over tasks of the per-task means, IQM = trim_mean over all scores,
    # optimality gap = gamma - mean(min(scores, gamma))
    assert st.aggregate_mean(table) == pytest.approx(np.mean(np.mean(table, axis=0)))
    assert st.aggregate_median(table) == pytest.approx(np.median(np.mean(table, axis=0)))
    assert st.aggregate_iqm(table) == pytest.approx(trim_mean(table, proportiontocut=0.25, axis=None))
    assert st.aggregate_optimality_gap(table) == pytest.approx(1 - np.mean(np.minimum(table, 1)))
    assert st.aggregate_optimality_gap(table, gamma=0.5) == pytest.approx(
        0.5 - np.mean(np.minimum(table, 0.5))
    )
    as_dict = {f"task{j}": table[:, j] for j in range(table.shape[1])}
    assert st.aggregate_iqm(as_dict) == pytest.approx(st.aggregate_iqm(table))


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 9, 10, 11])
def test_iqm_matches_scipy_for_every_size(n: int) -> None:
    values = np.random.default_rng(n).normal(size=n)
    assert st.aggregate_iqm({"t": values}) == pytest.approx(trim_mean(values, 0.25))


def test_intervals_are_seeded_and_contain_the_point(table: np.ndarray) -> None:
    a = st.interval_estimates(table, reps=5000, seed=7)
    b = st.interval_estimates(table, reps=5000, seed=7)
    assert a == b
    for name, interval in a.items():
        assert interval.low <= interval.value <= interval.high, name
        assert interval.high > interval.low, name
    assert st.interval_estimates(table, reps=5000, seed=8)["iqm"] != a["iqm"]
    assert str(a["mean"]).count("[") == 1 and a["mean"].to_dict()["confidence"] == 0.95


def test_bootstrap_is_stratified_by_task() -> None:
    # Runs are resampled within each task: with every run of a task equal, no replicate can change
    # the task means, so the interval of the mean collapses to the point (pooled resampling would not).
    scores = {"a": [0.0, 0.0, 0.0], "b": [1.0, 1.0, 1.0]}
    interval = st.interval_estimates(scores, metrics=["mean"], reps=2000)["mean"]
    assert (interval.low, interval.value, interval.high) == (0.5, 0.5, 0.5)
    samples = st.stratified_bootstrap(
        {"a": [1.0, 2.0], "b": [10.0, 20.0, 30.0]}, 100, np.random.default_rng(0)
    )
    assert samples[0].shape == (100, 2) and set(np.unique(samples[0])) <= {1.0, 2.0}
    assert samples[1].shape == (100, 3) and set(np.unique(samples[1])) <= {10.0, 20.0, 30.0}


def test_interval_width_shrinks_with_more_runs() -> None:
    rng = np.random.default_rng(1)
    few = st.interval_estimates(rng.normal(0.5, 0.2, (3, 4)), metrics=["mean"], reps=4000)["mean"]
    many = st.interval_estimates(rng.normal(0.5, 0.2, (300, 4)), metrics=["mean"], reps=4000)["mean"]
    assert many.high - many.low < few.high - few.low


def test_large_bootstrap_is_chunked(monkeypatch: pytest.MonkeyPatch, table: np.ndarray) -> None:
    whole = st.interval_estimates(table, metrics=["iqm"], reps=3000, seed=1)["iqm"]
    monkeypatch.setattr(st, "_CHUNK_ELEMENTS", 2000)
    chunked = st.interval_estimates(table, metrics=["iqm"], reps=3000, seed=1)["iqm"]
    assert chunked.value == whole.value
    assert chunked.low == pytest.approx(whole.low, abs=0.05) and chunked.high == pytest.approx(
        whole.high, abs=0.05
    )


def test_performance_profile() -> None:
    scores = {"a": [0.1, 0.5, 0.9, 0.9], "b": [0.2, 0.2]}
    profile = st.performance_profile(scores, taus=[0.0, 0.15, 0.5, 0.95], reps=500)
    # tau=0.15: a 3/4 above, b 2/2 -> 0.875; tau=0.5: a 2/4 (strictly above), b 0 -> 0.25
    assert profile.fraction.tolist() == [1.0, 0.875, 0.25, 0.0]
    assert np.all(profile.low <= profile.fraction) and np.all(profile.fraction <= profile.high)
    default = st.performance_profile(scores, reps=100)
    assert len(default.taus) == 101 and default.taus[-1] == 1.0
    assert np.all(np.diff(default.fraction) <= 0)  # non-increasing in tau
    assert set(profile.to_dict()) == {"taus", "fraction", "low", "high", "confidence"}


def test_normalise_and_errors() -> None:
    assert st.normalise([-100, 0, 300], -100, 100).tolist() == [0.0, 0.5, 2.0]
    assert st.normalise([-100, 0, 300], -100, 100, clip=True).tolist() == [0.0, 0.5, 1.0]
    with pytest.raises(ValueError, match="floor == ceiling"):
        st.normalise([1], 2, 2)
    with pytest.raises(ValueError, match="empty"):
        st.aggregate_mean({})
    with pytest.raises(ValueError, match="no runs"):
        st.aggregate_mean({"a": []})
    with pytest.raises(ValueError, match="non-finite"):
        st.aggregate_mean({"a": [np.nan]})
    with pytest.raises(ValueError, match="unknown metric"):
        st.interval_estimates({"a": [1.0]}, metrics=["best"])
    with pytest.raises(ValueError, match="confidence"):
        st.interval_estimates({"a": [1.0]}, confidence=1.5)


# -- probability of improvement, spread, curve bands -----------------------------------------------


def test_probability_of_improvement_is_the_task_mean_of_mann_whitney_u_over_pairs() -> None:
    rng = np.random.default_rng(3)
    x = {"a": rng.normal(0.6, 0.1, 5), "b": rng.normal(0.4, 0.2, 3), "only-x": [1.0]}
    y = {"a": rng.normal(0.5, 0.1, 4), "b": [0.4, 0.4]}
    expected = np.mean([mannwhitneyu(x[t], y[t]).statistic / (len(x[t]) * len(y[t])) for t in ("a", "b")])
    result = st.probability_of_improvement(x, y, reps=2000, seed=1)
    assert result.value == pytest.approx(expected)
    assert result.low <= result.value <= result.high and result.high - result.low > 0.05
    assert st.probability_of_improvement(x, y, reps=2000, seed=1) == result, "the same seed, the same interval"
    # ties count a half, and P(X > Y) + P(Y > X) = 1
    assert st.probability_of_improvement({"t": [0.5]}, {"t": [0.5]}).value == 0.5
    assert st.probability_of_improvement(y, x).value == pytest.approx(1 - expected)


def test_probability_of_improvement_needs_a_common_task() -> None:
    with pytest.raises(ValueError, match=r"no task in common: the first set has \['a'\], the second \['b'\]"):
        st.probability_of_improvement({"a": [1.0]}, {"b": [0.0]})


def test_one_run_per_task_has_no_spread_and_a_point_interval() -> None:
    single = {"a": [0.099], "b": [0.2]}
    assert not st.has_spread(single) and st.has_spread({"a": [0.1], "b": [0.2, 0.3]})
    iqm = st.interval_estimates(single, metrics=("iqm",), reps=200)["iqm"]
    assert iqm.low == iqm.value == iqm.high, "what the pages must not print as an interval"


def test_curve_band_contains_the_mean_and_narrows_with_agreeing_runs() -> None:
    rng = np.random.default_rng(0)
    grid = np.linspace(0, 1, 50)
    noisy = grid[None, :] + rng.normal(0, 0.3, size=(8, 50))
    value, low, high = st.curve_interval(noisy, "mean", reps=1000)
    assert np.allclose(value, noisy.mean(axis=0))
    assert np.all(low <= value) and np.all(value <= high) and np.all(high - low > 0)
    _, tight_low, tight_high = st.curve_interval(grid[None, :] + rng.normal(0, 0.01, size=(8, 50)), reps=1000)
    assert np.all(tight_high - tight_low < (high - low))
    iqm, iqm_low, iqm_high = st.curve_interval(noisy, "iqm", reps=1000)
    assert np.all(iqm_low <= iqm) and np.all(iqm <= iqm_high)
    with pytest.raises(ValueError, match="non-finite"):
        st.curve_interval([[0.0, np.nan]])
    with pytest.raises(ValueError, match="unknown curve metric 'median'"):
        st.curve_interval([[0.0]], "median")
