"""The Monitor: files, JSON keys, modes, force/resume, resets, crash safety, vector envs."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import textwrap

import gymnasium as gym
import pytest

import palaestra
from palaestra.errors import MonitorError, ResetNeeded
from palaestra.monitoring import files, open_monitors, vector_env_fns
from palaestra.monitoring import recording as monitor_module
from tests.monitoring.monitoring_helpers import (
    CountingEnv,
    StableBaselinesStyleVecEnv,
    play,
    register_counting_env,
)


def cartpole() -> gym.Env:
    return gym.make("CartPole-v1")


def test_files_names_and_keys_match_the_2017_format(tmp_path):
    env = palaestra.Monitor(cartpole(), tmp_path, video_callable=False, uid="myuid")
    play(env, 3)
    env.close()
    names = sorted(os.listdir(tmp_path))
    infix = f"{env.file_infix}"
    assert infix.endswith(".myuid")
    assert names == [
        f"openaigym.episode_batch.{infix}.stats.json",
        f"openaigym.manifest.{infix}.manifest.json",
        f"openaigym.provenance.{infix}.json",  # palaestra's; the 2017 loader reads manifests only
    ]
    manifest = json.loads((tmp_path / names[1]).read_text())
    assert list(manifest) == ["stats", "videos", "env_info"]
    assert manifest["stats"] == names[0]
    assert manifest["videos"] == []
    assert manifest["env_info"]["env_id"] == "CartPole-v1"
    assert manifest["env_info"]["gym_version"] == gym.__version__
    stats = json.loads((tmp_path / names[0]).read_text())
    assert list(stats)[:5] == ["initial_reset_timestamp", "timestamps", "episode_lengths", "episode_rewards",
                               "episode_types"]
    assert len(stats["timestamps"]) == len(stats["episode_lengths"]) == len(stats["episode_types"]) == 3
    assert stats["episode_types"] == ["t", "t", "t"]
    assert stats["episode_rewards"] == [float(n) for n in stats["episode_lengths"]]
    assert stats["timestamps"] == sorted(stats["timestamps"])
    assert stats["initial_reset_timestamp"] <= stats["timestamps"][0]


def test_default_infix_is_monitor_id_and_pid(tmp_path):
    env = palaestra.Monitor(cartpole(), tmp_path, video_callable=False)
    monitor_id, pid = env.file_infix.split(".")
    assert pid == str(os.getpid()) and monitor_id.isdigit()
    env.close()


def record_one_episode(directory, **kwargs):
    env = palaestra.Monitor(cartpole(), directory, video_callable=False, **kwargs)
    play(env, 1)
    env.close()


def test_nothing_is_written_before_the_first_reset(tmp_path):
    palaestra.Monitor(cartpole(), tmp_path, video_callable=False).close()
    assert os.listdir(tmp_path) == []


def test_occupied_directory_is_refused_with_the_2017_hint(tmp_path):
    record_one_episode(tmp_path)
    with pytest.raises(MonitorError, match="(?s)existing monitor files.*unique directory.*force=True"):
        palaestra.Monitor(cartpole(), tmp_path, video_callable=False)


def test_force_clears_only_monitor_files(tmp_path):
    (tmp_path / "notes.txt").write_text("keep me")
    first = palaestra.Monitor(cartpole(), tmp_path, video_callable=False, uid="a")
    play(first, 2)
    first.close()
    second = palaestra.Monitor(cartpole(), tmp_path, video_callable=False, force=True, uid="b")
    play(second, 1)
    second.close()
    assert (tmp_path / "notes.txt").read_text() == "keep me"
    assert len(palaestra.load_results(tmp_path)["episode_lengths"]) == 1


def test_resume_merges_runs_sorted_by_time(tmp_path):
    first = palaestra.Monitor(cartpole(), tmp_path, video_callable=False, uid="a")
    lengths_a = play(first, 2)
    first.close()
    second = palaestra.Monitor(cartpole(), tmp_path, video_callable=False, resume=True, uid="b")
    lengths_b = play(second, 3, seed=1)
    second.close()
    results = palaestra.load_results(tmp_path)
    assert results["episode_lengths"] == lengths_a + lengths_b
    # sources are numbered in manifest-name order, which depends on the monitor ids ("10.b" < "9.a")
    first, second = results["data_sources"][0], results["data_sources"][2]
    assert results["data_sources"] == [first] * 2 + [second] * 3 and {first, second} == {0, 1}
    assert len(results["initial_reset_timestamps"]) == 2
    assert len(results["manifests"]) == 2


def test_resume_with_the_same_uid_keeps_the_earlier_episodes(tmp_path):
    for seed in range(2):
        env = palaestra.Monitor(cartpole(), tmp_path, video_callable=False, resume=True, uid="same")
        play(env, 2, seed=seed)
        env.close()
        del env
    assert len(palaestra.load_results(tmp_path)["episode_lengths"]) == 4


def test_modes_are_recorded_per_episode_and_switchable(tmp_path):
    env = palaestra.Monitor(cartpole(), tmp_path, video_callable=False, mode="evaluation")
    play(env, 1)
    env.set_monitor_mode("training")
    play(env, 2)
    env.close()
    assert palaestra.load_results(tmp_path)["episode_types"] == ["e", "t", "t"]


@pytest.mark.parametrize("kwargs, match", [
    ({"mode": "testing"}, "Invalid mode 'testing'"),
    ({"video_callable": True}, "You must provide a function, None, or False for video_callable"),
])
def test_bad_arguments_get_clear_errors(tmp_path, kwargs, match):
    with pytest.raises(MonitorError, match=match):
        palaestra.Monitor(cartpole(), tmp_path, **kwargs)


def test_terminated_and_truncated_are_both_completed_and_told_apart(tmp_path):
    env_id = register_counting_env()
    env = palaestra.Monitor(gym.make(env_id, length=3, truncate=False), tmp_path / "a", video_callable=False)
    play(env, 2)
    env.close()
    env = palaestra.Monitor(gym.make(env_id, length=4, truncate=True), tmp_path / "b", video_callable=False)
    play(env, 2)
    env.close()
    assert palaestra.load_results(tmp_path / "a")["episode_truncated"] == [False, False]
    b = palaestra.load_results(tmp_path / "b")
    assert b["episode_truncated"] == [True, True] and b["episode_lengths"] == [4, 4]


def test_time_limit_truncation_is_recorded(tmp_path):
    env = palaestra.Monitor(gym.make("CartPole-v1", max_episode_steps=5), tmp_path, video_callable=False)
    env.reset(seed=0)
    for _ in range(5):
        env.step(0 if env.get_total_steps() % 2 else 1)
    env.close()
    results = palaestra.load_results(tmp_path)
    assert results["episode_lengths"] == [5] and results["episode_truncated"] == [True]


def test_reset_before_the_end_is_allowed_and_its_steps_still_count(tmp_path):
    env_id = register_counting_env()
    env = palaestra.Monitor(gym.make(env_id, length=10), tmp_path, video_callable=False)
    env.reset()
    for _ in range(4):
        env.step(0)
    env.reset()  # abandons a 4-step episode
    for _ in range(10):
        env.step(0)
    assert env.get_total_steps() == 14
    env.reset()
    env.step(0)
    assert env.get_total_steps() == 15
    env.close()  # closes with a 1-step episode in progress: dropped, as in 2017
    results = palaestra.load_results(tmp_path)
    assert results["episode_lengths"] == [10]
    assert results["abandoned_steps"] == [4]
    assert results["total_steps"] == 14


def test_stepping_before_reset_or_after_the_end_needs_a_reset(tmp_path):
    env_id = register_counting_env()
    env = palaestra.Monitor(gym.make(env_id, length=1), tmp_path, video_callable=False)
    with pytest.raises(ResetNeeded, match="before reset"):
        env.step(0)
    env.reset()
    env.step(0)
    with pytest.raises(ResetNeeded, match="currently done.*env.reset"):
        env.step(0)
    env.close()


def test_stepping_a_closed_monitor_is_refused(tmp_path):
    env = palaestra.Monitor(cartpole(), tmp_path, video_callable=False)
    env.reset(seed=0)
    env.close()
    with pytest.raises(MonitorError, match="Trying to step a closed Monitor"):
        env.step(0)


def test_closing_the_monitor_closes_the_wrapped_env_and_unregisters(tmp_path):
    inner = CountingEnv()
    env = palaestra.Monitor(gym.wrappers.TimeLimit(inner, 10), tmp_path, video_callable=False)
    assert env in open_monitors()
    env.close()
    assert inner.closed
    assert env not in open_monitors()
    env.close()  # idempotent


def test_env_without_spec_records_but_is_not_uploadable(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="palaestra"):
        env = palaestra.Monitor(CountingEnv(), tmp_path, video_callable=False)
    assert "has no spec" in caplog.text
    play(env, 1)
    env.close()
    with pytest.raises(palaestra.errors.ResultsError, match="missing required key env_id"):
        palaestra.load_results(tmp_path)


def test_completed_episodes_are_journaled_not_rewritten(tmp_path, monkeypatch):
    """Keeping the directory crash-safe costs O(1) per episode: no full rewrite per episode."""
    writes = []
    real = files.atomic_write_json
    monkeypatch.setattr(
        files, "atomic_write_json", lambda path, doc, **kw: (writes.append(path), real(path, doc, **kw))
    )
    env = palaestra.Monitor(gym.make(register_counting_env(), length=1), tmp_path, video_callable=False)
    env.reset()
    writes_at_start = len(writes)
    play(env, 500)
    # one more: play's first reset brings a seed, which rewrites the provenance file (the only write
    # of the 500 episodes; resets without a seed write nothing)
    assert len(writes) == writes_at_start + 1 and writes[-1].endswith(".json") and "provenance" in writes[-1]
    assert len(palaestra.load_results(tmp_path)["episode_lengths"]) == 500  # readable while open
    env.close()
    assert not [p for p in os.listdir(tmp_path) if p.endswith(files.JOURNAL_SUFFIX)]


def test_write_upon_reset_rewrites_the_stats_file(tmp_path):
    env = palaestra.Monitor(cartpole(), tmp_path, video_callable=False, write_upon_reset=True)
    play(env, 2)
    with open(env.stats_recorder.path) as f:
        stats = json.load(f)
    assert len(stats["episode_lengths"]) == 2
    env.close()


CRASH_SCRIPT = textwrap.dedent("""
    import sys, gymnasium as gym, palaestra
    env = palaestra.Monitor(gym.make("CartPole-v1"), sys.argv[1], video_callable=False)
    env.reset(seed=0)
    env.action_space.seed(0)
    episodes = 0
    while True:
        _, _, term, trunc, _ = env.step(env.action_space.sample())
        if term or trunc:
            episodes += 1
            print(episodes, flush=True)
            env.reset()
""")


@pytest.mark.parametrize("kill_after", [1, 7, 40])
def test_sigkill_at_any_moment_loses_no_completed_episode(tmp_path, kill_after):
    proc = subprocess.Popen([sys.executable, "-c", CRASH_SCRIPT, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    reported = 0
    while reported < kill_after:
        reported = int(proc.stdout.readline())
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    results = palaestra.load_results(tmp_path)
    assert len(results["episode_lengths"]) >= reported
    assert len(results["timestamps"]) == len(results["episode_rewards"]) == len(results["episode_types"])


def test_torn_journal_line_is_ignored(tmp_path):
    env = palaestra.Monitor(cartpole(), tmp_path, video_callable=False)
    play(env, 3)
    with open(env.stats_recorder.journal_path, "ab") as f:
        f.write(b'{"t": 1.0, "l": 1')  # what a kill in the middle of a write leaves
    assert len(palaestra.load_results(tmp_path)["episode_lengths"]) == 3
    env.close()


def test_a_killed_run_resumed_with_the_same_uid_keeps_its_episodes(tmp_path):
    proc = subprocess.Popen(
        [sys.executable, "-c", CRASH_SCRIPT.replace('video_callable=False', 'video_callable=False, uid="u"'),
         str(tmp_path)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    while int(proc.stdout.readline()) < 3:
        pass
    proc.kill()
    proc.wait()
    survived = len(palaestra.load_results(tmp_path)["episode_lengths"])
    env = palaestra.Monitor(cartpole(), tmp_path, video_callable=False, resume=True, uid="u")
    play(env, 2)
    env.close()
    assert len(palaestra.load_results(tmp_path)["episode_lengths"]) == survived + 2


def test_monitors_left_open_are_closed_at_exit(tmp_path):
    script = CRASH_SCRIPT.replace("while True:", "for _ in range(300):").replace("print(episodes, flush=True)", "")
    subprocess.run([sys.executable, "-c", script, str(tmp_path)], check=True)
    assert not [p for p in os.listdir(tmp_path) if p.endswith(files.JOURNAL_SUFFIX)]
    stats_file = next(p for p in os.listdir(tmp_path) if p.endswith(".stats.json"))
    assert json.loads((tmp_path / stats_file).read_text())["episode_lengths"]


@pytest.mark.parametrize("vector_cls", [gym.vector.SyncVectorEnv, gym.vector.AsyncVectorEnv])
def test_vector_env_sub_environments_record_into_one_directory(tmp_path, vector_cls):
    fns = vector_env_fns([cartpole] * 3, tmp_path, video_callable=False)
    envs = vector_cls(fns)
    envs.reset(seed=0)
    envs.action_space.seed(0)
    for _ in range(300):
        envs.step(envs.action_space.sample())
    envs.close()
    results = palaestra.load_results(tmp_path)
    assert len(results["manifests"]) == 3
    assert len(set(results["data_sources"])) == 3
    assert len(results["episode_lengths"]) >= 3
    # each sub-env took 300 steps; episodes in progress at close are not completed episodes
    assert sum(results["episode_lengths"]) <= 900


def test_vector_env_fns_refuse_an_occupied_directory(tmp_path):
    record_one_episode(tmp_path)
    with pytest.raises(MonitorError, match="existing monitor files"):
        vector_env_fns([cartpole], tmp_path)


def test_videos_wanted_without_a_render_mode_warn_once_naming_the_fix(tmp_path, caplog, monkeypatch):
    monkeypatch.setattr(monitor_module, "_warned_without_video", set())  # once per process: start afresh
    with caplog.at_level(logging.INFO, logger="palaestra"):
        for run in ("a", "b"):  # two Monitors of the same env id (as vector_env_fns makes): one warning
            env = palaestra.Monitor(cartpole(), tmp_path / run)
            play(env, 2)
            env.close()
    (warning,) = [r for r in caplog.records if "no videos" in r.message]
    assert warning.levelno == logging.WARNING
    assert 'render_mode="rgb_array"' in warning.message and "CartPole-v1" in warning.message
    assert "video_callable=False" in warning.message
    assert palaestra.load_results(tmp_path / "a")["videos"] == []


def test_no_warning_when_videos_are_off_or_recorded_and_the_fix_fits_the_env(tmp_path, caplog, monkeypatch):
    monkeypatch.setattr(monitor_module, "_warned_without_video", set())
    with caplog.at_level(logging.INFO, logger="palaestra"):
        palaestra.Monitor(cartpole(), tmp_path / "off", video_callable=False).close()
        palaestra.Monitor(gym.make("CartPole-v1", render_mode="rgb_array"), tmp_path / "on").close()
        assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []
        # a text env is told to render text; an env that renders nothing gets no advice it cannot take
        palaestra.Monitor(gym.make(register_counting_env()), tmp_path / "text").close()
        palaestra.Monitor(gym.make("NChain-v0"), tmp_path / "nothing").close()
    (warning,) = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert 'render_mode="ansi"' in warning.message and "Counting-v0" in warning.message
    assert any("NChain-v0, which renders no frames" in r.message for r in caplog.records)


def test_a_stable_baselines_vec_env_is_refused_with_the_way_to_wrap_its_sub_environments(tmp_path):
    vec_env = StableBaselinesStyleVecEnv([cartpole] * 4)
    with pytest.raises(MonitorError) as refused:
        palaestra.Monitor(vec_env, tmp_path)
    message = str(refused.value)
    assert "StableBaselinesStyleVecEnv" in message and "4 sub-environments" in message
    assert "Stable-Baselines3's VecEnv" in message and "vector_env_fns([make_env] * n_envs, directory)" in message
    assert not list(tmp_path.iterdir())  # nothing written
    # the hint works: each sub-environment records, and the run loads as one
    vec_env = StableBaselinesStyleVecEnv(vector_env_fns([cartpole] * 2, tmp_path / "run"))
    vec_env.reset()
    for _ in range(300):
        vec_env.step([vec_env.action_space.sample() for _ in range(vec_env.num_envs)])
    vec_env.close()
    results = palaestra.load_results(tmp_path / "run")
    assert len(results["manifests"]) == 2 and len(results["episode_lengths"]) >= 4


def test_importing_palaestra_leaves_the_root_logger_alone():
    code = "import logging, palaestra; print(len(logging.getLogger().handlers))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "0"
