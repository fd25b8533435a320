"""The vector Monitor: one Monitor over a gymnasium VectorEnv, in every autoreset mode, with real
SyncVectorEnv/AsyncVectorEnv/vector_entry_point envs, crash safety, resume and videos."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv
from gymnasium.wrappers.vector import RecordEpisodeStatistics

import palaestra
from palaestra.errors import MonitorError, ResetNeeded, ResultsError
from palaestra.monitoring import VectorMonitor, files, open_monitors
from tests.monitoring.monitoring_helpers import CountingEnv, register_counting_env

MODES = [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP]


def counting_envs(lengths, mode=AutoresetMode.NEXT_STEP, render_mode=None, cls=SyncVectorEnv, **kwargs):
    """A vector env whose sub-environment k plays episodes of exactly ``lengths[k]`` steps, reward 1 each."""
    env_id = register_counting_env()
    fns = [lambda n=n: gym.make(env_id, length=n, render_mode=render_mode) for n in lengths]
    return cls(fns, autoreset_mode=mode, **kwargs)


def step_n(envs, n):
    actions = np.zeros(envs.num_envs, np.int64)
    for _ in range(n):
        envs.step(actions)


def per_source(results):
    """Each sub-environment's episode lengths, in the order they ended."""
    found: dict[int, list[int]] = {}
    for source, length in zip(results["env_index"], results["episode_lengths"]):
        found.setdefault(source, []).append(length)
    return found


def test_monitor_of_a_make_vec_env_just_works_and_writes_one_manifest_and_one_stats_file(tmp_path):
    envs = palaestra.Monitor(gym.make_vec("CartPole-v1", num_envs=3), tmp_path, video_callable=False, uid="u")
    assert isinstance(envs, VectorMonitor)
    envs.reset(seed=0)
    envs.action_space.seed(0)
    for _ in range(100):
        envs.step(envs.action_space.sample())
    envs.close()
    names = sorted(os.listdir(tmp_path))
    infix = envs.file_infix
    assert infix.endswith(".u")
    assert names == [
        f"openaigym.episode_batch.{infix}.stats.json",
        f"openaigym.manifest.{infix}.manifest.json",
        f"openaigym.provenance.{infix}.json",  # one for the vector Monitor
    ]
    manifest = json.loads((tmp_path / f"openaigym.manifest.{infix}.manifest.json").read_text())
    assert list(manifest) == ["stats", "videos", "env_info"]
    assert manifest["stats"] == f"openaigym.episode_batch.{infix}.stats.json"
    assert manifest["env_info"]["env_id"] == "CartPole-v1"
    stats = json.loads((tmp_path / manifest["stats"]).read_text())
    assert len(stats["env_index"]) == len(stats["timestamps"]) and set(stats["env_index"]) == {0, 1, 2}
    results = palaestra.load_results(tmp_path)
    assert len(results["manifests"]) == 1 and set(results["data_sources"]) == {0}
    assert results["env_index"] == stats["env_index"]
    assert results["timestamps"] == sorted(results["timestamps"])
    assert results["episode_lengths"] == envs.get_episode_lengths()
    assert results["episode_rewards"] == [float(n) for n in results["episode_lengths"]]
    # 300 env-steps minus one autoreset step after each of the episodes but the last ones
    assert sum(results["episode_lengths"]) <= envs.get_total_steps() <= 300


@pytest.mark.parametrize("num_envs", [1, 11, 300])
def test_the_files_are_three_whatever_the_number_of_sub_environments(tmp_path, num_envs):
    envs = palaestra.Monitor(counting_envs([2] * num_envs), tmp_path, uid="u")
    envs.reset()
    step_n(envs, 5)
    assert len(os.listdir(tmp_path)) == 4  # and the journal while open
    envs.close()
    assert sorted(os.listdir(tmp_path)) == [
        f"openaigym.episode_batch.{envs.file_infix}.stats.json",
        f"openaigym.manifest.{envs.file_infix}.manifest.json",
        f"openaigym.provenance.{envs.file_infix}.json",
    ]
    assert per_source(palaestra.load_results(tmp_path)) == {k: [2, 2] for k in range(num_envs)}


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
def test_every_sub_environments_episodes_are_recorded_exactly_under_each_autoreset_mode(tmp_path, mode):
    lengths = [2, 3, 5]
    envs = palaestra.Monitor(counting_envs(lengths, mode), tmp_path)
    envs.reset(seed=0)
    step_n(envs, 30)
    envs.close()
    results = palaestra.load_results(tmp_path)
    # same-step: an episode every L steps; next-step: one more step for the reset in between
    period = {AutoresetMode.SAME_STEP: 0, AutoresetMode.NEXT_STEP: 1}[mode]
    expected = {k: [n] * ((30 + period) // (n + period)) for k, n in enumerate(lengths)}
    assert per_source(results) == expected
    assert results["episode_rewards"] == [float(n) for n in results["episode_lengths"]]
    assert results["episode_truncated"] == [False] * len(results["episode_lengths"])
    assert results["timestamps"] == sorted(results["timestamps"])


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
def test_the_episodes_are_those_gymnasiums_record_episode_statistics_reports_in_the_order_they_ended(tmp_path, mode):
    stats = RecordEpisodeStatistics(SyncVectorEnv([lambda: gym.make("CartPole-v1")] * 4, autoreset_mode=mode))
    envs = palaestra.Monitor(stats, tmp_path, video_callable=False)
    envs.reset(seed=3)
    envs.action_space.seed(3)
    reported: list[tuple[float, int]] = []
    for _ in range(400):
        *_, info = envs.step(envs.action_space.sample())
        if "episode" in info:
            for k in np.flatnonzero(info["_episode"]):
                reported.append((float(info["episode"]["r"][k]), int(info["episode"]["l"][k])))
    envs.close()
    results = palaestra.load_results(tmp_path)
    assert list(zip(results["episode_rewards"], results["episode_lengths"])) == reported
    assert len(reported) > 20


def test_truncated_episodes_are_told_apart_from_terminated_ones(tmp_path):
    env_id = register_counting_env()
    fns = [lambda: gym.make(env_id, length=2), lambda: gym.make(env_id, length=3, truncate=True)]
    envs = palaestra.Monitor(SyncVectorEnv(fns), tmp_path)
    envs.reset()
    step_n(envs, 8)
    envs.close()
    results = palaestra.load_results(tmp_path)
    truncated = {(s, t) for s, t in zip(results["env_index"], results["episode_truncated"])}
    assert truncated == {(0, False), (1, True)}


def test_with_autoreset_disabled_a_finished_sub_environment_must_be_reset_before_the_next_step(tmp_path):
    envs = palaestra.Monitor(counting_envs([2, 4], AutoresetMode.DISABLED), tmp_path)
    envs.reset()
    step_n(envs, 2)  # sub-env 0 has finished
    with pytest.raises(ResetNeeded, match=r"Sub-environments \[0\].*reset_mask"):
        envs.step(np.zeros(2, np.int64))
    envs.reset(options={"reset_mask": np.array([True, False])})
    step_n(envs, 2)  # both finish: sub-env 0 its second episode, sub-env 1 its first
    envs.reset(options={"reset_mask": np.array([True, True])})
    step_n(envs, 1)
    envs.reset(options={"reset_mask": np.array([False, True])})  # abandons sub-env 1's 1-step episode
    assert envs.get_total_steps() == 2 + 2 + 4 + 1 + 1  # sub-env 0's running episode: 1 step
    envs.close()
    results = palaestra.load_results(tmp_path)
    assert per_source(results) == {0: [2, 2], 1: [4]}
    assert results["abandoned_steps"] == [1]
    assert results["total_steps"] == 9


def test_a_reset_before_the_end_abandons_every_running_episode_but_counts_its_steps(tmp_path):
    envs = palaestra.Monitor(counting_envs([3, 5]), tmp_path)
    envs.reset()
    step_n(envs, 4)  # sub-env 0: a 3-step episode, then the reset step; sub-env 1: 4 steps running
    envs.reset()
    step_n(envs, 2)
    assert envs.get_total_steps() == 3 + 4 + 2 * 2
    envs.close()
    results = palaestra.load_results(tmp_path)
    assert results["episode_lengths"] == [3]
    assert results["abandoned_steps"] == [4]
    assert results["total_steps"] == 7


def test_a_masked_reset_in_next_step_mode_restarts_only_the_masked_sub_environments(tmp_path):
    envs = palaestra.Monitor(counting_envs([2, 3]), tmp_path)
    envs.reset()
    step_n(envs, 2)  # sub-env 0 finished (its reset is due at the next step); sub-env 1 at 2 steps
    envs.reset(options={"reset_mask": np.array([True, False])})
    step_n(envs, 1)  # sub-env 0: a real step of its new episode; sub-env 1 finishes
    step_n(envs, 2)  # sub-env 0 finishes its second episode; sub-env 1 resets, then steps
    envs.close()
    assert per_source(palaestra.load_results(tmp_path)) == {0: [2, 2], 1: [3]}


def test_training_and_evaluation_modes_apply_to_the_episodes_that_start_after_the_switch(tmp_path):
    envs = palaestra.Monitor(counting_envs([2, 3], AutoresetMode.SAME_STEP), tmp_path, mode="evaluation")
    envs.reset()
    step_n(envs, 3)  # episodes end: sub-env 0 at step 2, sub-env 1 at step 3
    envs.set_monitor_mode("training")
    step_n(envs, 6)  # the episodes running at the switch (ending at steps 4 and 6) stay evaluation
    envs.close()
    results = palaestra.load_results(tmp_path)
    assert list(zip(results["env_index"], results["episode_types"])) == [
        (0, "e"), (1, "e"), (0, "e"), (0, "t"), (1, "e"), (0, "t"), (1, "t"),
    ]


@pytest.mark.parametrize("shared_memory", [True, False], ids=["shared-memory", "pipes"])
def test_async_vector_env_records_the_same_episodes_as_sync(tmp_path, shared_memory):
    lengths = [2, 3, 4]
    for name, cls, kwargs in [("sync", SyncVectorEnv, {}), ("async", AsyncVectorEnv, {"shared_memory": shared_memory})]:
        envs = palaestra.Monitor(counting_envs(lengths, cls=cls, **kwargs), tmp_path / name)
        envs.reset(seed=0)
        step_n(envs, 20)
        envs.close()
    assert per_source(palaestra.load_results(tmp_path / "async")) == per_source(
        palaestra.load_results(tmp_path / "sync")
    )


def test_a_vector_entry_point_env_is_recorded(tmp_path):
    inner = gym.make_vec("CartPole-v1", num_envs=8, vectorization_mode="vector_entry_point")
    stats = RecordEpisodeStatistics(inner)
    envs = palaestra.Monitor(stats, tmp_path, video_callable=False)
    envs.reset(seed=0)
    envs.action_space.seed(0)
    reported = []
    for _ in range(200):
        *_, info = envs.step(envs.action_space.sample())
        if "episode" in info:
            reported += info["episode"]["l"][info["_episode"]].tolist()
    envs.close()
    results = palaestra.load_results(tmp_path)
    assert results["env_info"]["env_id"] == "CartPole-v1"
    assert results["episode_lengths"] == reported and len(reported) > 20


def test_force_resume_and_the_occupied_directory_rules_are_the_monitors(tmp_path):
    def record(**kwargs):
        envs = palaestra.Monitor(counting_envs([2, 2]), tmp_path, **kwargs)
        envs.reset()
        step_n(envs, 2)
        envs.close()

    record(uid="a")
    with pytest.raises(MonitorError, match="existing monitor files"):
        record(uid="b")
    record(uid="b", resume=True)
    assert len(palaestra.load_results(tmp_path)["episode_lengths"]) == 4
    record(uid="c", force=True)
    results = palaestra.load_results(tmp_path)
    assert len(results["episode_lengths"]) == 2 and len(results["manifests"]) == 1


def test_resuming_adds_a_run_beside_the_earlier_one(tmp_path):
    for _ in range(2):
        envs = palaestra.Monitor(counting_envs([2, 3]), tmp_path, uid="same", resume=True)
        envs.reset()
        step_n(envs, 3)
        envs.close()
    results = palaestra.load_results(tmp_path)
    assert results["episode_lengths"] == [2, 3, 2, 3] and len(results["manifests"]) == 2
    assert results["env_index"] == [0, 1, 0, 1]


def test_the_directory_loads_while_the_monitor_is_open_from_the_shared_journal(tmp_path, monkeypatch):
    writes = []
    real = files.atomic_write_json
    monkeypatch.setattr(
        files, "atomic_write_json", lambda path, doc, **kw: (writes.append(path), real(path, doc, **kw))
    )
    envs = palaestra.Monitor(counting_envs([1] * 4, AutoresetMode.SAME_STEP), tmp_path)
    envs.reset()
    writes_at_start = len(writes)
    step_n(envs, 500)
    assert len(writes) == writes_at_start  # episodes are journaled, nothing is rewritten
    journals = [n for n in os.listdir(tmp_path) if n.endswith(files.JOURNAL_SUFFIX)]
    assert journals == [os.path.basename(files.journal_path(envs.stats_recorder.path))]
    assert len(palaestra.load_results(tmp_path)["episode_lengths"]) == 2000
    envs.close()
    assert not [n for n in os.listdir(tmp_path) if n.endswith(files.JOURNAL_SUFFIX)]


CRASH_SCRIPT = textwrap.dedent("""
    import sys, gymnasium as gym, palaestra
    envs = palaestra.Monitor(
        gym.make_vec("CartPole-v1", num_envs=4), sys.argv[1], video_callable=False, uid="u", resume=True
    )
    envs.reset(seed=0)
    envs.action_space.seed(0)
    for _ in range(int(sys.argv[2])):
        envs.step(envs.action_space.sample())
        print(len(envs.get_episode_lengths()), flush=True)
    input()  # wait to be killed
""")


@pytest.mark.parametrize("kill_after", [1, 30])
def test_sigkill_at_any_moment_loses_no_completed_episode_of_any_sub_environment(tmp_path, kill_after):
    command = [sys.executable, "-c", CRASH_SCRIPT, str(tmp_path), "1000000"]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    reported = 0
    while reported < kill_after:
        reported = int(proc.stdout.readline())
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    results = palaestra.load_results(tmp_path)
    assert len(results["episode_lengths"]) >= reported
    assert len(results["timestamps"]) == len(results["episode_rewards"]) == len(results["episode_types"])
    # A run resumed with the same uid (and so the same files) folds the killed run's journal into
    # its stats files, where gym 0.9.4's loader finds them, and keeps them.
    command[-1] = "0"
    subprocess.run(command, input="\n", text=True, check=True, capture_output=True)
    assert not [n for n in os.listdir(tmp_path) if n.endswith(files.JOURNAL_SUFFIX)]
    stats = [json.loads((tmp_path / n).read_text()) for n in os.listdir(tmp_path) if n.endswith(".stats.json")]
    assert sum(len(doc["episode_lengths"]) for doc in stats) == len(results["episode_lengths"])
    assert palaestra.load_results(tmp_path)["episode_lengths"] == results["episode_lengths"]


def test_a_malformed_journal_entry_in_a_manifest_is_named(tmp_path):
    envs = palaestra.Monitor(counting_envs([2]), tmp_path)
    envs.reset()
    step_n(envs, 2)
    manifest = json.loads(Path(envs.manifest_path).read_text())
    manifest["journal"] = {"file": "../elsewhere", "source": 0}
    with open(envs.manifest_path, "w") as f:
        json.dump(manifest, f)
    with pytest.raises(ResultsError, match="malformed journal entry"):
        palaestra.load_results(tmp_path)
    envs.close()


@pytest.mark.parametrize("env_index", [[0], [0, -1], [0, "1"], "01"], ids=["short", "negative", "string", "not-a-list"])
def test_a_malformed_env_index_in_a_stats_file_is_named(tmp_path, env_index):
    envs = palaestra.Monitor(counting_envs([2, 2]), tmp_path)
    envs.reset()
    step_n(envs, 2)
    envs.close()
    stats = json.loads(Path(envs.stats_recorder.path).read_text())
    stats["env_index"] = env_index
    Path(envs.stats_recorder.path).write_text(json.dumps(stats))
    with pytest.raises(ResultsError, match=r"malformed env_index.*one sub-environment index .* per episode, 2 in all"):
        palaestra.load_results(tmp_path)


def test_a_directory_of_the_earlier_layout_one_stats_file_per_sub_environment_still_loads(tmp_path):
    """What palaestra wrote before issue 27, killed while open: a manifest and a stats file per
    sub-environment, the manifests naming one shared journal (here written by hand)."""
    from palaestra.monitoring.journal import JournalWriter

    journal = JournalWriter(str(tmp_path / "openaigym.episode_batch.0.u.journal"))
    journal.set_initial_reset_timestamp(100.0)
    for t, source, length in [(101.0, 1, 3), (102.0, 0, 5), (103.0, 1, 4)]:
        journal.append(t, float(length), length, 0, False, source)
    for k in range(2):
        stats = f"openaigym.episode_batch.0.u-{k}.stats.json"
        (tmp_path / stats).write_text(json.dumps({"initial_reset_timestamp": 100.0, "timestamps": [],
                                                  "episode_lengths": [], "episode_rewards": []}))
        manifest = {"stats": stats, "videos": [], "env_info": {"env_id": "CartPole-v1", "gym_version": "1"},
                    "journal": {"file": "openaigym.episode_batch.0.u.journal", "source": k}}
        (tmp_path / f"openaigym.manifest.0.u-{k}.manifest.json").write_text(json.dumps(manifest))
    results = palaestra.load_results(tmp_path)
    assert results["episode_lengths"] == [3, 5, 4]
    assert results["env_index"] == [1, 0, 1]
    journal.close()


def test_closing_closes_the_vector_env_and_unregisters_and_stepping_after_is_refused(tmp_path):
    envs = palaestra.Monitor(counting_envs([2, 2]), tmp_path)
    with pytest.raises(ResetNeeded, match="before reset"):
        envs.step(np.zeros(2, np.int64))
    assert envs in open_monitors()
    with envs:
        envs.reset()
    assert envs.env.closed and envs not in open_monitors()
    with pytest.raises(MonitorError, match="step a closed Monitor"):
        envs.step(np.zeros(2, np.int64))


def test_video_envs_naming_a_missing_sub_environment_is_refused(tmp_path):
    with pytest.raises(MonitorError, match=r"video_envs \[0, 5\].*\[5\].*has 2"):
        palaestra.Monitor(counting_envs([2, 2]), tmp_path, video_envs=[0, 5])


# -- videos --------------------------------------------------------------------------------------
def video_frames(results):
    """{sub-environment's infix suffix: [(episode id, [frame texts])]} of the recorded ansi videos."""
    found: dict[str, list[tuple[int, list[str]]]] = {}
    for video, meta in results["videos"]:
        episode_id = json.loads(Path(meta).read_text())["episode_id"]
        frames = [text.split("\x1b[1;1H")[1].strip() for _, text in json.loads(Path(video).read_text())["stdout"]]
        found.setdefault(os.path.basename(video).split(".video")[1].split("-")[-1], []).append((episode_id, frames))
    return found


@pytest.mark.parametrize("mode", [*MODES, AutoresetMode.DISABLED], ids=lambda m: m.value)
def test_sub_environment_0_gets_videos_on_the_capped_cubic_schedule_of_its_own_episodes(tmp_path, mode):
    envs = palaestra.Monitor(counting_envs([2, 3], mode, render_mode="ansi"), tmp_path)
    envs.reset()
    for _ in range(40):
        if mode is AutoresetMode.DISABLED and envs._finished is not None:
            envs.reset(options={"reset_mask": envs._finished.copy()})
        envs.step(np.zeros(2, np.int64))
    envs.close()
    videos = video_frames(palaestra.load_results(tmp_path))
    assert list(videos) == ["0"]  # only sub-env 0
    assert [episode for episode, _ in videos["0"]] == [0, 1, 8]
    # the first frame is the reset's; same-step autoreset has no final frame (the env has reset)
    final = [] if mode is AutoresetMode.SAME_STEP else ["t=2"]
    assert all(frames == ["t=0", "t=1", *final] for _, frames in videos["0"])


def test_after_a_render_failure_the_vector_monitor_renders_no_more_in_that_run(tmp_path, caplog):
    class NoOpenGL(CountingEnv):
        renders = 0

        def render(self):
            NoOpenGL.renders += 1
            raise RuntimeError("no OpenGL context")

    caplog.set_level("INFO", logger="palaestra")
    envs = palaestra.Monitor(
        SyncVectorEnv([lambda: NoOpenGL(2, render_mode="ansi")] * 2), tmp_path, video_envs=(0, 1), env_id="NoOpenGL-v0"
    )
    envs.reset()
    step_n(envs, 21)  # seven episodes per sub-environment (next-step autoreset), 0, 1 on the schedule
    envs.close()
    assert NoOpenGL.renders == 2  # the first frame of each sub-environment's first video, then none
    assert envs.videos == [] and envs.get_episode_lengths() == [2] * 14
    assert sum("no more videos" in r.getMessage() for r in caplog.records) == 1


def test_chosen_sub_environments_of_an_async_vector_env_get_videos_from_its_render(tmp_path):
    envs = palaestra.Monitor(
        counting_envs([2, 3, 4], render_mode="ansi", cls=AsyncVectorEnv),
        tmp_path,
        video_envs=[1, 2],
        video_callable=lambda episode_id: episode_id < 2,
    )
    envs.reset()
    step_n(envs, 12)
    envs.close()
    videos = video_frames(palaestra.load_results(tmp_path))
    assert sorted(videos) == ["1", "2"]
    assert videos["1"] == [(0, ["t=0", "t=1", "t=2", "t=3"]), (1, ["t=0", "t=1", "t=2", "t=3"])]
    assert videos["2"] == [(0, ["t=0", "t=1", "t=2", "t=3", "t=4"]), (1, ["t=0", "t=1", "t=2", "t=3", "t=4"])]


@pytest.mark.slow
def test_rgb_videos_of_a_vector_entry_point_env_are_mp4s_of_sub_environment_0(tmp_path):
    inner = gym.make_vec("CartPole-v1", num_envs=3, vectorization_mode="vector_entry_point", render_mode="rgb_array")
    envs = palaestra.Monitor(inner, tmp_path)
    envs.reset(seed=0)
    envs.action_space.seed(0)
    while len(envs.videos) < 2:
        envs.step(envs.action_space.sample())
    envs.close()
    results = palaestra.load_results(tmp_path)
    assert [os.path.basename(v) for v, _ in results["videos"]] == [
        f"openaigym.video.{envs.file_infix}-0.video00000{e}.mp4" for e in (0, 1)
    ]
    for video, meta in results["videos"]:
        assert video.endswith(".mp4") and os.path.getsize(video) > 1000
        assert json.loads(Path(meta).read_text())["content_type"] == "video/mp4"


def test_a_true_reward_in_info_is_recorded_instead_of_the_reward_the_agent_sees(tmp_path):
    envs = palaestra.Monitor(
        gym.make_vec("SemisuperPendulumNoise-v0", num_envs=2, vectorization_mode="sync"), tmp_path,
        video_callable=False,
    )
    envs.reset(seed=0)
    envs.action_space.seed(0)
    seen = np.zeros(2)
    true = np.zeros(2)
    for _ in range(200):
        _, reward, terminated, truncated, info = envs.step(envs.action_space.sample())
        seen += reward
        true += info["true_reward"]
    envs.close()
    assert terminated.all() or truncated.all()  # Pendulum's 200-step limit ends both at once
    results = palaestra.load_results(tmp_path)
    assert results["episode_rewards"] == pytest.approx(true.tolist())
    assert results["episode_rewards"] != pytest.approx(seen.tolist())


# -- env ids -------------------------------------------------------------------------------------
def test_a_vector_env_without_a_spec_is_refused_with_a_hint_and_env_id_names_it(tmp_path):
    def spec_less():
        return SyncVectorEnv([lambda: CountingEnv(2)] * 2)

    with pytest.raises(MonitorError, match=r"SyncVectorEnv has no spec.*env_id='CartPole-v1'.*gymnasium.make_vec"):
        palaestra.Monitor(spec_less(), tmp_path / "refused")
    assert not (tmp_path / "refused").exists()
    envs = palaestra.Monitor(spec_less(), tmp_path / "named", env_id="palaestra-test/Counting-v0")
    envs.reset()
    step_n(envs, 2)
    envs.close()
    results = palaestra.load_results(tmp_path / "named")
    assert results["env_info"]["env_id"] == "palaestra-test/Counting-v0" and results["episode_lengths"] == [2, 2]


def test_an_env_id_that_disagrees_with_the_spec_or_is_empty_is_refused(tmp_path):
    envs = counting_envs([2])
    with pytest.raises(MonitorError, match=r"env_id='CartPole-v1' disagrees with the vector environment's spec"):
        palaestra.Monitor(envs, tmp_path, env_id="CartPole-v1")
    with pytest.raises(MonitorError, match="env_id must be a non-empty string"):
        palaestra.Monitor(envs, tmp_path, env_id=" ")
    recorded = palaestra.Monitor(envs, tmp_path, env_id=envs.envs[0].spec.id)  # agreeing is fine
    assert recorded.env_id == envs.envs[0].spec.id
    recorded.close()


def test_write_upon_reset_rewrites_the_one_stats_file_with_every_sub_environments_episodes(tmp_path):
    envs = palaestra.Monitor(counting_envs([2, 3], AutoresetMode.DISABLED), tmp_path, write_upon_reset=True)
    envs.reset()
    step_n(envs, 2)
    envs.reset(options={"reset_mask": np.array([True, False])})
    stats = json.loads(Path(envs.stats_recorder.path).read_text())  # rewritten, the journal still open
    assert stats["episode_lengths"] == [2] and stats["env_index"] == [0]
    step_n(envs, 1)
    envs.reset()
    stats = json.loads(Path(envs.stats_recorder.path).read_text())
    assert stats["episode_lengths"] == [2, 3] and stats["env_index"] == [0, 1]
    assert stats["abandoned_steps"] == [1]  # sub-env 0's second episode, reset after one step
    envs.close()
