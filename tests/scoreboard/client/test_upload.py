"""The upload client end to end against a real ``palaestra server`` process: upload and fetch back,
idempotent re-uploads, a server killed mid-way, benchmark runs, the command line, SB3 imports, and
bad directories."""

from __future__ import annotations

import collections
import contextlib
import json
import logging
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import httpx
import numpy as np
import pytest

import palaestra
from palaestra.benchmarks import TotalReward, benchmark_score_from_local, register_benchmark
from palaestra.benchmarks.registry import registry
from palaestra.errors import (
    AuthenticationError,
    ConfigurationError,
    InvalidRequestError,
    MonitorError,
    ResultsError,
    RetriesExceededError,
    UnregisteredBenchmark,
)
from palaestra.monitoring.sb3_import import import_sb3
from palaestra.scoreboard import protocol
from palaestra.scoreboard.client import RetryPolicy, ScoreboardClient, prepare_training_directory
from palaestra.scoreboard.server.web.render import fmt_number
from tests.scoreboard.client.client_helpers import (
    environ_without_config,
    manifest_of,
    play_episodes,
    record_cartpole,
    record_frozenlake_videos,
)

FAST = RetryPolicy(max_retries=2, base_delay=0.01, max_delay=0.05)


def client_for(server: Any, **kwargs: Any) -> ScoreboardClient:
    return ScoreboardClient(server.url, server.api_key, **kwargs)


def evaluation_ids(server: Any, **filters: str) -> list[str]:
    with server.client() as http:
        answer = http.get("/v1/evaluations", params={"limit": 100, **filters})
    answer.raise_for_status()
    return [e["id"] for e in answer.json()["data"]]


def test_upload_a_monitor_directory_and_fetch_the_evaluation_back(scoreboard_server, tmp_path, caplog):
    directory = record_cartpole(tmp_path / "cartpole", episodes=12)
    with caplog.at_level(logging.INFO, logger="palaestra"):
        evaluation_id = palaestra.upload(
            str(directory),
            algorithm_id="e2e-random-agent",
            writeup="https://example.org/writeup",
            server=scoreboard_server.url,
            api_key=scoreboard_server.api_key,
        )
    assert evaluation_id.startswith("eval_")
    web_url = f"{scoreboard_server.url}/evaluations/{evaluation_id}"
    assert (
        web_url in caplog.text and "You successfully uploaded your evaluation on CartPole-v1" in caplog.text
    )
    with client_for(scoreboard_server) as client:
        evaluation = client.retrieve_evaluation(evaluation_id)
    results = palaestra.load_results(directory)
    assert evaluation.env == "CartPole-v1" and evaluation.env_listed
    assert evaluation.algorithm is not None and evaluation.algorithm.name == "e2e-random-agent"
    assert evaluation.writeup == "https://example.org/writeup"
    assert evaluation.gym_version == results["env_info"]["gym_version"]
    assert evaluation.training_episode_batch and evaluation.training_video is None
    assert evaluation.score is not None and evaluation.score.number_episodes == 12
    assert evaluation.score.number_timesteps == sum(results["episode_lengths"])
    assert httpx.get(web_url, timeout=30).status_code == 200


def test_the_same_upload_again_says_already_uploaded_and_another_algorithm_is_refused_naming_it(
    scoreboard_server, tmp_path, caplog
):
    directory = record_cartpole(tmp_path / "run", episodes=3, seed=5)
    kwargs = {"server": scoreboard_server.url, "api_key": scoreboard_server.api_key}
    with caplog.at_level(logging.INFO, logger="palaestra"):
        first = palaestra.upload(str(directory), algorithm_id="e2e-same", tags={"ignored": True}, **kwargs)
    assert "Tags are NOT uploaded for evaluation submissions" in caplog.text
    web_url = f"{scoreboard_server.url}/evaluations/{first}"
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="palaestra"):
        assert palaestra.upload(str(directory), algorithm_id="e2e-same", **kwargs) == first
    assert f"already uploaded: {web_url}" in caplog.text and "successfully" not in caplog.text
    with pytest.raises(InvalidRequestError) as refused:
        palaestra.upload(str(directory), algorithm_id="e2e-other", **kwargs)
    assert refused.value.http_status == 409
    assert f"evaluation {first} ({web_url})" in str(refused.value) and "'e2e-other'" in str(refused.value)
    with client_for(scoreboard_server) as client:
        algorithm = client.retrieve_evaluation(first).algorithm
    assert algorithm is not None and algorithm.name == "e2e-same"
    assert evaluation_ids(scoreboard_server, algorithm=algorithm.id) == [first]


def test_a_repeat_past_the_idempotency_keys_lifetime_is_found_by_its_episodes(scoreboard_server, tmp_path):
    """The client's keys are forgotten after a day (gc); the server still knows the episodes."""
    directory = record_cartpole(tmp_path / "run", episodes=2, seed=6)
    with client_for(scoreboard_server) as client:
        first = client.upload(str(directory), algorithm_id="e2e-forgotten")
        prepared = prepare_training_directory(str(directory))
        batch = client.upload_content("episode_batch", f"another-key-{first.id}", lambda: _bytes(prepared.batch))
        again = client.create_evaluation(
            protocol.EvaluationCreate(
                training_episode_batch=batch.id,
                env="CartPole-v1",
                algorithm=protocol.AlgorithmRef(id="e2e-forgotten"),
                gym_version=prepared.env_info.get("gym_version"),
                provenance=prepared.provenance,
            )
        )
    assert not first.already_uploaded and again.already_uploaded and again.id == first.id
    assert again.algorithm is not None and again.algorithm.name == "e2e-forgotten"
    assert evaluation_ids(scoreboard_server, algorithm=again.algorithm.id) == [first.id]


def _bytes(data: bytes | None) -> Any:
    assert data is not None
    return contextlib.nullcontext(data)


def test_videos_are_uploaded_and_broken_ones_skipped(scoreboard_server, tmp_path, caplog):
    directory = record_frozenlake_videos(tmp_path / "lake", episodes=4)
    _, manifest = manifest_of(directory)
    broken_meta = directory / manifest["videos"][2][1]
    broken_meta.write_text(json.dumps({**json.loads(broken_meta.read_text()), "broken": True}))
    with caplog.at_level(logging.WARNING, logger="palaestra"):
        evaluation_id = palaestra.upload(
            str(directory), server=scoreboard_server.url, api_key=scoreboard_server.api_key
        )
    assert "marked broken by the recorder" in caplog.text
    with client_for(scoreboard_server) as client:
        evaluation = client.retrieve_evaluation(evaluation_id)
    assert evaluation.training_video is not None
    expected = [v for i, (v, _) in enumerate(manifest["videos"]) if i != 2]
    assert sorted(v.name for v in evaluation.videos) == sorted(expected)
    assert evaluation.score is not None and evaluation.score.number_episodes == 4


class FaultyTransport(httpx.BaseTransport):
    """Forwards to the real server, and once, at the first request ``matches`` accepts, runs ``fault``
    before sending it (``when="before"``) or after the server answered it, losing the answer (``"after"``)."""

    def __init__(
        self, matches: Callable[[httpx.Request], bool], when: str, fault: Callable[[], None]
    ) -> None:
        self.inner = httpx.HTTPTransport()
        self.matches, self.when, self.fault = matches, when, fault
        self.fired = False
        self.lost_answer: Any = None

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        hit = not self.fired and self.matches(request)
        if hit:
            self.fired = True
        if hit and self.when == "before":
            self.fault()
        response = self.inner.handle_request(request)
        if hit and self.when == "after":
            response.read()
            self.lost_answer = json.loads(response.content)
            self.fault()
            raise httpx.ReadError("the server died before its answer arrived", request=request)
        return response

    def close(self) -> None:
        self.inner.close()


def test_a_lost_answer_is_retried_into_the_same_objects(scoreboard_server, tmp_path):
    """The network drops the server's answers to the creating POSTs; the retries (same Idempotency-Key)
    get the objects the first attempts made: one file each, one evaluation."""
    directory = record_cartpole(tmp_path / "run", episodes=3, seed=11)
    lost_file = FaultyTransport(
        lambda r: r.method == "POST" and r.url.path == "/v1/files", "after", lambda: None
    )
    with client_for(scoreboard_server, transport=lost_file, retry=FAST) as client:
        prepared = prepare_training_directory(directory)
        first = client.upload_prepared(prepared, algorithm_id="e2e-lost")
    assert lost_file.fired and first.training_episode_batch == lost_file.lost_answer["id"]
    lost_eval = FaultyTransport(
        lambda r: r.method == "POST" and r.url.path == "/v1/evaluations", "after", lambda: None
    )
    with client_for(scoreboard_server, transport=lost_eval, retry=FAST) as client:
        again = client.upload_prepared(prepared, algorithm_id="e2e-lost")
    assert lost_eval.fired and again.id == lost_eval.lost_answer["id"] == first.id
    assert first.algorithm is not None
    assert evaluation_ids(scoreboard_server, algorithm=first.algorithm.id) == [first.id]


@pytest.mark.slow
def test_a_server_killed_mid_way_loses_nothing_and_duplicates_nothing(fresh_scoreboard_server, tmp_path):
    """Killed between the episode batch (uploaded) and the video archive (not yet): the client gives
    up; the same upload run again, while the server is still restarting, waits for it, keeps the
    batch already there, sends the rest, and makes one evaluation with every episode and video."""
    server = fresh_scoreboard_server
    directory = record_frozenlake_videos(tmp_path / "lake", episodes=3)

    def is_video_form(r: httpx.Request) -> bool:
        return r.method == "POST" and r.url.path.startswith("/v1/uploads/") and b"x-compressed" in r.read()

    transport = FaultyTransport(is_video_form, "before", server.kill)
    with (
        client_for(server, transport=transport, retry=FAST) as client,
        pytest.raises(RetriesExceededError) as e,
    ):
        client.upload(directory, algorithm_id="e2e-crash")
    assert transport.fired and "Could not reach the scoreboard" in str(e.value)

    restarting = threading.Thread(target=server.restart, daemon=True)
    restarting.start()
    # a fresh client told that the server is starting: its refused connections are waited for
    patient = RetryPolicy(max_retries=80, base_delay=0.2, max_delay=1.0, wait_for_local_server=True)
    with client_for(server, retry=patient) as client:
        result = client.upload(directory, algorithm_id="e2e-crash")
        evaluation_id = result.id
        assert result.web_url == f"{server.url}/evaluations/{evaluation_id}" and result.object == "evaluation"
        evaluation = client.retrieve_evaluation(evaluation_id)
        batch = client.retrieve_file(evaluation.training_episode_batch or "")
    restarting.join(60)
    assert evaluation_ids(server) == [evaluation_id]
    assert (
        len(evaluation.videos) == 3 and evaluation.score is not None and evaluation.score.number_episodes == 3
    )
    assert batch.status == "uploaded" and batch.created is not None
    with server.client() as http:
        files = http.get("/v1/files", params={"limit": 100}).json()["data"]
    assert (
        sum(f["purpose"] == "episode_batch" for f in files) == 1
    )  # the batch sent before the crash was kept
    # and running it once more changes nothing
    assert palaestra.upload(
        str(directory), algorithm_id="e2e-crash", server=server.url, api_key=server.api_key
    ) == (evaluation_id)
    assert evaluation_ids(server) == [evaluation_id]


@pytest.mark.slow
def test_a_server_restarted_mid_upload_is_waited_for_within_the_retry_budget(fresh_scoreboard_server, tmp_path):
    """The server is killed just before the episode batch's form arrives and takes its time to come
    back; the client's default retry budget outlasts the restart and the upload completes, once."""
    server = fresh_scoreboard_server
    directory = record_cartpole(tmp_path / "run", episodes=4, seed=5)
    restarting = threading.Thread(target=server.start, daemon=True)

    def kill_and_restart() -> None:
        server.kill()
        restarting.start()

    transport = FaultyTransport(
        lambda r: r.method == "POST" and r.url.path.startswith("/v1/uploads/"), "before", kill_and_restart
    )
    with client_for(server, transport=transport) as client:
        assert client.http.retry == RetryPolicy()  # the default budget, as users get it
        result = client.upload(directory, algorithm_id="e2e-restart")
    restarting.join(60)
    assert transport.fired and evaluation_ids(server) == [result.id]
    with server.client() as http:
        evaluation = http.get(f"/v1/evaluations/{result.id}").json()
    assert evaluation["score"]["number_episodes"] == 4


def test_upload_training_data_uploads_the_files_only(scoreboard_server, tmp_path):
    from palaestra.scoreboard.client import upload_training_data

    directory = record_frozenlake_videos(tmp_path / "lake", episodes=2)
    env_info, batch, video = upload_training_data(
        str(directory), api_key=scoreboard_server.api_key, server=scoreboard_server.url
    )
    assert env_info["env_id"] == "FrozenLake-v1"
    assert batch is not None and video is not None
    with client_for(scoreboard_server) as client:
        assert client.retrieve_file(batch.id).status == "uploaded"
        assert client.retrieve_file(video.id).purpose == "video"


def record_benchmark(root: Path) -> Path:
    """A ClassicControl2-v1 run: one directory per task (CartPole-v0 and Pendulum-v1, one trial each)."""
    record_cartpole(root / "cartpole", episodes=3, env_id="CartPole-v0")
    env = palaestra.Monitor(
        gym.make("Pendulum-v1", max_episode_steps=20), root / "pendulum", video_callable=False
    )
    env.action_space.seed(0)
    play_episodes(env, 2)
    env.close()
    return root


@pytest.mark.filterwarnings("ignore:.*CartPole-v0 is out of date")
def test_benchmark_upload_is_one_committed_run_of_one_evaluation_per_directory(
    scoreboard_server, tmp_path, caplog
):
    root = record_benchmark(tmp_path / "bench")
    kwargs = {"server": scoreboard_server.url, "api_key": scoreboard_server.api_key}
    with caplog.at_level(logging.WARNING, logger="palaestra"):
        run_id = palaestra.upload(
            str(root), benchmark_id="ClassicControl2-v1", algorithm_id="e2e-bench", tags={"lr": 0.5}, **kwargs
        )
    assert run_id.startswith("brun_") and "expects env ids" not in caplog.text
    with client_for(scoreboard_server) as client:
        run = client.retrieve_benchmark_run(run_id)
        envs = sorted(client.retrieve_evaluation(e).env or "" for e in run.evaluations)
    assert run.status == "committed" and run.benchmark_id == "ClassicControl2-v1"
    assert run.tags == {"lr": 0.5} and run.algorithm is not None and run.algorithm.name == "e2e-bench"
    assert envs == ["CartPole-v0", "Pendulum-v1"]
    assert sorted(evaluation_ids(scoreboard_server, benchmark_run_id=run_id)) == sorted(run.evaluations)
    # uploading the same run again is harmless
    assert (
        palaestra.upload(
            str(root), benchmark_id="ClassicControl2-v1", algorithm_id="e2e-bench", tags={"lr": 0.5}, **kwargs
        )
        == run_id
    )
    assert len(evaluation_ids(scoreboard_server, benchmark_run_id=run_id)) == 2


@pytest.mark.filterwarnings("ignore:.*CartPole-v0 is out of date")
def test_benchmark_checks_the_id_and_warns_about_missing_tasks(scoreboard_server, tmp_path, caplog):
    root = tmp_path / "bench"
    record_cartpole(root / "cartpole", episodes=2, env_id="CartPole-v0")
    kwargs = {"server": scoreboard_server.url, "api_key": scoreboard_server.api_key}
    with pytest.raises(UnregisteredBenchmark, match="Invalid benchmark id: NoSuchBenchmark-v0"):
        palaestra.upload(str(root), benchmark_id="NoSuchBenchmark-v0", **kwargs)
    with caplog.at_level(logging.WARNING, logger="palaestra"):
        run_id = palaestra.upload(str(root), benchmark_id="ClassicControl2-v1", **kwargs)
    assert "Benchmark ClassicControl2-v1 expects env ids ['CartPole-v0', 'Pendulum-v1']" in caplog.text
    assert len(evaluation_ids(scoreboard_server, benchmark_run_id=run_id)) == 1


@pytest.mark.filterwarnings("ignore:.*CartPole-v0 is out of date")
def test_a_run_of_twelve_trials_is_uploaded_in_the_order_it_is_scored_locally(scoreboard_server, tmp_path, monkeypatch):
    """Trial 10 comes after trial 9, not after trial 1: the client and the scorer walk the run alike."""
    root = tmp_path / "run"
    for trial in range(12):  # trial t has t + 1 episodes, so each evaluation tells which trial it is
        record_cartpole(root / f"CartPole-v0-{trial}", episodes=trial + 1, seed=trial, env_id="CartPole-v0")
    # registered for this test only: other tests compare the registry with what a server shows
    monkeypatch.setattr(registry, "benchmarks", collections.OrderedDict(registry.benchmarks))
    register_benchmark(
        "TwelveTrials-v0",
        TotalReward(),
        [{"env_id": "CartPole-v0", "trials": 12, "max_timesteps": 10**6}],
        add_view=False,
    )
    local = benchmark_score_from_local("TwelveTrials-v0", root, reps=100)
    local_order = [len(palaestra.load_results(d)["episode_lengths"]) for d in local["directories"]]
    assert local_order == list(range(1, 13))

    with client_for(scoreboard_server) as client:
        result = client.upload(root, benchmark_id="ClassicControl2-v1")
        assert result.object == "benchmark_run"
        assert result.web_url == f"{scoreboard_server.url}/benchmark_runs/{result.id}"
        run = client.retrieve_benchmark_run(result.id)  # evaluations in the order they were created
        uploaded_order = [client.retrieve_evaluation(e).score.number_episodes for e in run.evaluations]
    assert uploaded_order == local_order


def test_cli_login_then_upload(scoreboard_server, tmp_path):
    directory = record_cartpole(tmp_path / "run", episodes=2)
    env = environ_without_config(tmp_path)
    cmd = [sys.executable, "-m", "palaestra"]
    login = subprocess.run(
        [*cmd, "login", "--server", scoreboard_server.url],
        input=scoreboard_server.api_key + "\n",
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert login.returncode == 0, login.stderr
    config = Path(env["XDG_CONFIG_HOME"]) / "palaestra" / "config.json"
    assert config.stat().st_mode & 0o777 == 0o600
    upload = subprocess.run(
        [*cmd, "upload", str(directory), "--algorithm", "e2e-cli"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert upload.returncode == 0, upload.stderr
    *_, url_line, id_line = upload.stdout.strip().splitlines()
    assert id_line.startswith("eval_") and url_line == f"{scoreboard_server.url}/evaluations/{id_line}"
    assert url_line in upload.stderr  # the banner


def test_a_wrong_key_is_refused_with_a_hint(
    scoreboard_server, tmp_path, isolated_config, cli_logging, capsys
):
    directory = record_cartpole(tmp_path / "run", episodes=1)
    with pytest.raises(AuthenticationError) as info:
        palaestra.upload(str(directory), server=scoreboard_server.url, api_key="key_wrong")
    assert info.value.http_status == 401 and "palaestra login" in str(info.value)
    from palaestra.cli import main

    assert main(["login", "--server", scoreboard_server.url, "--api-key", "key_wrong"]) == 1
    assert "palaestra login: error:" in capsys.readouterr().err and not isolated_config.exists()


def test_sb3_monitor_files_import_and_upload(scoreboard_server, tmp_path):
    lines = ['#{"t_start": 1700000000.0, "env_id": "CartPole-v1"}', "r,l,t", "15.0,15,0.3", "40.0,40,1.1", ""]
    (tmp_path / "0.monitor.csv").write_text("\n".join(lines))
    import_sb3([tmp_path / "0.monitor.csv"], tmp_path / "run")
    evaluation_id = palaestra.upload(
        str(tmp_path / "run"), server=scoreboard_server.url, api_key=scoreboard_server.api_key
    )
    with client_for(scoreboard_server) as client:
        evaluation = client.retrieve_evaluation(evaluation_id)
    assert evaluation.env == "CartPole-v1" and evaluation.score is not None
    assert evaluation.score.number_episodes == 2 and evaluation.score.number_timesteps == 55


def _commingled(d: Path) -> None:
    record_cartpole(d, episodes=1)
    env = palaestra.Monitor(gym.make("Acrobot-v1"), d, video_callable=False, resume=True)
    env.reset(seed=0)
    env.close()


def _missing_video(d: Path) -> None:
    record_frozenlake_videos(d, episodes=2)
    _, manifest = manifest_of(d)
    (d / manifest["videos"][0][0]).unlink()


def _no_data(d: Path) -> None:
    env = palaestra.Monitor(gym.make("CartPole-v1"), d, video_callable=False)
    env.reset(seed=0)
    env.close()


@pytest.mark.parametrize(
    ("make", "error", "message"),
    [
        (lambda d: None, ResultsError, "Training directory {d} does not exist"),
        (lambda d: d.mkdir(), ResultsError, "Could not find any manifest files in {d}"),
        (_commingled, ResultsError, "training directory {d} has commingled results from multiple runs"),
        (
            _missing_video,
            ResultsError,
            "listed in a manifest of {d} does not exist. Restore it, or upload without",
        ),
        (_no_data, ResultsError, "[CartPole-v1] You didn't have any recorded training data in {d}"),
    ],
    ids=["none", "no-manifests", "commingled", "missing-video", "no-data"],
)
def test_bad_directories_get_a_clear_message_and_create_nothing(
    scoreboard_server, tmp_path, make, error, message
):
    directory = tmp_path / "bad"
    make(directory)
    before = evaluation_ids(scoreboard_server)
    with pytest.raises(error) as info:
        palaestra.upload(str(directory), server=scoreboard_server.url, api_key=scoreboard_server.api_key)
    assert message.format(d=directory) in str(info.value)
    assert evaluation_ids(scoreboard_server) == before


def test_an_open_monitor_is_refused_before_anything_is_sent(scoreboard_server, tmp_path):
    env = palaestra.Monitor(gym.make("CartPole-v1"), tmp_path / "open", video_callable=False)
    play_episodes(env, 1)
    try:
        with pytest.raises(
            MonitorError, match="Still have an open monitor on .*open. You must run 'env.close"
        ):
            palaestra.upload(
                str(tmp_path / "open"), server=scoreboard_server.url, api_key=scoreboard_server.api_key
            )
    finally:
        env.close()


def test_a_cleanrl_style_vector_training_loop_uploads_and_shows_on_the_evaluation_page(scoreboard_server, tmp_path):
    """gym.make_vec + the Monitor + a tiny numpy policy trained by random search, as CleanRL loops are
    written; the run uploads as one evaluation whose numbers are the episodes of every sub-env."""
    envs = gym.make_vec("FrozenLake-v1", num_envs=8, render_mode="ansi")  # ansi: videos without ffmpeg
    envs = palaestra.Monitor(envs, tmp_path / "run")
    rng = np.random.default_rng(0)
    weights = rng.normal(size=(16, 4))
    best, best_return = weights, -1.0
    obs, _ = envs.reset(seed=0)
    for _update in range(10):
        returns = np.zeros(envs.num_envs)
        for _ in range(40):
            obs, reward, *_ = envs.step(np.argmax(weights[obs], axis=1))
            returns += reward
        if returns.mean() >= best_return:
            best, best_return = weights, returns.mean()
        weights = best + 0.5 * rng.normal(size=best.shape)
    envs.close()
    results = palaestra.load_results(tmp_path / "run")
    assert len(results["manifests"]) == 1 and set(results["env_index"]) == set(range(8)) and results["videos"]
    evaluation_id = palaestra.upload(
        str(tmp_path / "run"), algorithm_id="cleanrl-style", server=scoreboard_server.url,
        api_key=scoreboard_server.api_key,
    )
    with client_for(scoreboard_server) as client:
        evaluation = client.retrieve_evaluation(evaluation_id)
    assert evaluation.env == "FrozenLake-v1"
    assert evaluation.score is not None
    assert evaluation.score.number_episodes == len(results["episode_lengths"]) > 50
    assert evaluation.score.number_timesteps == sum(results["episode_lengths"])
    assert evaluation.training_video is not None
    page = httpx.get(f"{scoreboard_server.url}/evaluations/{evaluation_id}", timeout=30)
    assert page.status_code == 200
    assert f"<dt>Training episodes</dt><dd>{fmt_number(len(results['episode_lengths']))}</dd>" in page.text
    assert f"<dt>Training timesteps</dt><dd>{fmt_number(sum(results['episode_lengths']))}</dd>" in page.text
    assert "cleanrl-style" in page.text
    # the scoreboard keeps which sub-environment played each episode
    stored = httpx.get(f"{scoreboard_server.url}/evaluations/{evaluation_id}/episode_batch.json", timeout=30)
    assert stored.json()["env_index"] == results["env_index"]


def test_an_atari_vector_run_uploads_as_one_evaluation_whose_page_says_its_video_is_from_observations(
    scoreboard_server, tmp_path
):
    """ale-py's AtariVectorEnv (no spec, no render): env_id= names it, sub-environment 0's video comes
    from its observations, and the page and the API say so."""
    pytest.importorskip("ale_py", reason="ale-py (the atari extra) is not installed")
    from ale_py.vector_env import AtariVectorEnv

    envs = palaestra.Monitor(AtariVectorEnv("breakout", 4), tmp_path / "run", env_id="ALE/Breakout-v5")
    envs.reset(seed=0)
    rng = np.random.default_rng(0)
    while not envs.get_episode_lengths():
        envs.step(rng.integers(0, 4, 4))
    envs.close()
    results = palaestra.load_results(tmp_path / "run")
    assert len(results["manifests"]) == 1 and results["videos"]
    evaluation_id = palaestra.upload(
        str(tmp_path / "run"), algorithm_id="atari-vector", server=scoreboard_server.url,
        api_key=scoreboard_server.api_key,
    )
    with client_for(scoreboard_server) as client:
        evaluation = client.retrieve_evaluation(evaluation_id)
    assert evaluation.env == "ALE/Breakout-v5"
    assert evaluation.score is not None and evaluation.score.number_episodes == len(results["episode_lengths"])
    assert evaluation.videos and {v.frame_source for v in evaluation.videos} == {"observations"}
    page = httpx.get(f"{scoreboard_server.url}/evaluations/{evaluation_id}", timeout=30)
    assert page.status_code == 200
    assert page.text.count('<span class="frame-source">from observations</span>') == len(evaluation.videos)


@pytest.mark.filterwarnings("ignore:.*CartPole-v0 is out of date")
def test_a_benchmark_upload_of_a_directory_of_another_env_is_refused_before_anything_is_made(
    scoreboard_server, tmp_path
):
    root = tmp_path / "bench"
    record_cartpole(root / "CartPole-v0-0", episodes=2, env_id="CartPole-v0")
    record_cartpole(root / "Acrobot-v1-0", episodes=1, env_id="Acrobot-v1")
    before = evaluation_ids(scoreboard_server)
    with pytest.raises(ResultsError) as info:
        palaestra.upload(
            str(root), benchmark_id="ClassicControl2-v1", server=scoreboard_server.url, api_key=scoreboard_server.api_key
        )
    assert str(info.value) == (
        f"{root} is not a run of benchmark ClassicControl2-v1: Acrobot-v1-0 recorded Acrobot-v1, which is not one "
        "of its envs (CartPole-v0, Pendulum-v1). Upload it without --benchmark, or with the benchmark it belongs to."
    )
    assert evaluation_ids(scoreboard_server) == before


def test_a_writeup_that_is_not_a_url_is_refused_before_anything_is_sent(scoreboard_server, tmp_path):
    directory = record_cartpole(tmp_path / "run", episodes=2)
    before = evaluation_ids(scoreboard_server)
    with pytest.raises(ConfigurationError, match="writeup must be an http\\(s\\) URL.*not 'notaurl'"):
        palaestra.upload(
            str(directory), writeup="notaurl", server=scoreboard_server.url, api_key=scoreboard_server.api_key
        )
    assert evaluation_ids(scoreboard_server) == before


def test_cli_upload_json_says_what_was_made(scoreboard_server, tmp_path):
    directory = record_cartpole(tmp_path / "run", episodes=2)
    env = {**environ_without_config(tmp_path), "PALAESTRA_SERVER": scoreboard_server.url, "PALAESTRA_API_KEY": scoreboard_server.api_key}
    cmd = [sys.executable, "-m", "palaestra", "upload", str(directory)]
    result = subprocess.run([*cmd, "--json"], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    made = json.loads(result.stdout)
    web_url = f"{scoreboard_server.url}/evaluations/{made['id']}"
    assert made == {"id": made["id"], "object": "evaluation", "web_url": web_url, "already_uploaded": False}
    assert made["id"] in evaluation_ids(scoreboard_server)
    again = subprocess.run([*cmd, "--json"], env=env, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout) == {**made, "already_uploaded": True}
    assert f"already uploaded: {web_url}" in again.stderr and "successfully" not in again.stderr
    other = subprocess.run([*cmd, "--algorithm", "e2e-json-other"], env=env, capture_output=True, text=True, timeout=120)
    assert other.returncode == 1 and other.stdout == ""
    assert f"evaluation {made['id']} ({web_url}), with algorithm none" in other.stderr
    refused = subprocess.run([*cmd, "--writeup", "notaurl"], env=env, capture_output=True, text=True, timeout=120)
    assert refused.returncode == 1 and refused.stdout == ""
    assert refused.stderr.strip().splitlines() == [
        "palaestra upload: error: writeup must be an http(s) URL, such as https://gist.github.com/you/1234, not 'notaurl'"
    ]
