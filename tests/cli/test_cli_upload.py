"""``palaestra upload`` run as a user runs it: what it says when nothing can be uploaded."""

from __future__ import annotations

from pathlib import Path

from tests.cli.cli_helpers import palaestra
from tests.scoreboard.client.client_helpers import record_cartpole
from tests.server_process import free_port


def test_an_upload_to_a_local_server_that_is_not_running_fails_at_once_suggesting_palaestra_server(
    tmp_path: Path,
) -> None:
    directory = record_cartpole(tmp_path / "run", episodes=2)
    url = f"http://127.0.0.1:{free_port()}"  # nobody listens there
    result = palaestra("upload", str(directory), "--server", url, PALAESTRA_API_KEY="key_nobody", timeout=120)
    assert result.returncode == 1, result.stderr
    assert "retrying" not in result.stderr
    assert f"No scoreboard server is running at {url}" in result.stderr
    assert "'palaestra server'" in result.stderr


def test_uploading_a_benchmark_runs_folder_without_benchmark_suggests_benchmark(tmp_path: Path) -> None:
    run = tmp_path / "bench-run"
    for trial in range(2):
        record_cartpole(run / f"CartPole-v0-{trial}", episodes=2, env_id="CartPole-v0")
    result = palaestra(
        "upload", str(run), "--server", f"http://127.0.0.1:{free_port()}", PALAESTRA_API_KEY="key_nobody"
    )
    assert result.returncode == 1, result.stderr
    line = result.stderr.strip().splitlines()[-1]
    assert f"{run} is not a training directory, but it holds 2 (CartPole-v0-0, CartPole-v0-1)" in line
    assert "--benchmark ID" in line and "Could not find any manifest files" not in line
