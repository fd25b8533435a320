"""The command-line contract: --help everywhere, exit 0 / 1 (one line) / 2, and `palaestra envs`."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pytest

from palaestra.cli import build_parser
from tests.cli.cli_helpers import palaestra

SUBCOMMANDS = sorted(
    next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)).choices
)


def test_my_subcommands_are_registered() -> None:
    for name in ("envs", "run", "results", "demo"):
        assert name in SUBCOMMANDS


def test_top_level_help_and_version() -> None:
    result = palaestra("--help")
    assert result.returncode == 0
    for name in ("envs", "run", "results", "demo"):
        assert name in result.stdout
    version = palaestra("--version")
    assert version.returncode == 0 and version.stdout.startswith("palaestra ")


@pytest.mark.parametrize("command", SUBCOMMANDS)
def test_every_subcommand_has_help(command: str) -> None:
    result = palaestra(command, "--help")
    assert result.returncode == 0, result.stderr
    assert f"usage: palaestra {command}" in result.stdout


def test_each_server_action_has_its_own_help_with_its_own_options() -> None:
    listed = palaestra("server", "--help").stdout
    for action in ("run", "migrate", "gc", "rotate-secret", "backup", "rescore", "export", "import", "verify"):
        assert action in listed
    gc = palaestra("server", "gc", "--help")
    assert gc.returncode == 0 and "usage: palaestra server gc" in gc.stdout
    assert "--grace" in gc.stdout and "--dry-run" in gc.stdout and "--data-dir" in gc.stdout
    assert "--port" not in gc.stdout and "--include-keys" not in gc.stdout and "--static" not in gc.stdout
    export = palaestra("server", "export", "--help").stdout
    assert "--static" in export and "--include-keys" in export and "--grace" not in export
    run = palaestra("server", "run", "--help").stdout
    assert "--port" in run and "--workers" in run and "--dry-run" not in run and "--expect-head" not in run


def test_run_help_documents_the_agent_interface() -> None:
    out = palaestra("run", "--help").stdout
    assert "module:factory" in out and "observe" in out and "end_episode" in out


@pytest.mark.parametrize(
    "args",
    [
        (),
        ("no-such-command",),
        ("run", "CartPole-v1"),
        ("run", "CartPole-v1", "--agent", "random", "--monitor", "x"),
        ("run", "CartPole-v1", "--agent", "random", "--episodes", "2", "--steps", "2", "--monitor", "x"),
        ("run", "CartPole-v1", "--agent", "random", "--episodes", "0", "--monitor", "x"),
        ("run", "CartPole-v1", "--agent", "random", "--episodes", "two", "--monitor", "x"),
        ("run", "CartPole-v1", "--agent", "random", "--episodes", "1", "--monitor", "x", "--mode", "test"),
        (
            "run",
            "CartPole-v1",
            "--agent",
            "random",
            "--episodes",
            "1",
            "--monitor",
            "x",
            "--video",
            "--no-video",
        ),
        ("results",),
        ("envs", "--group", "no-such-group"),
        ("demo", "--port", "eighty"),
    ],
    ids=lambda a: " ".join(a) or "(nothing)",
)
def test_usage_errors_exit_2(args: tuple[str, ...], tmp_path: Path) -> None:
    result = palaestra(*args, cwd=tmp_path)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "usage:" in result.stderr + result.stdout
    assert not (tmp_path / "x").exists()


def _one_line_error(result: object, command: str) -> str:
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]  # type: ignore[attr-defined]
    assert result.returncode == 1, result.stderr  # type: ignore[attr-defined]
    assert len(lines) == 1, result.stderr  # type: ignore[attr-defined]
    assert lines[0].startswith(f"palaestra {command}: error: ")
    return lines[0]


def test_results_on_a_missing_directory_fails_with_one_line(tmp_path: Path) -> None:
    line = _one_line_error(palaestra("results", "nowhere", cwd=tmp_path), "results")
    assert "nowhere" in line and "does not exist" in line


def test_results_on_a_directory_without_manifests_fails(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    line = _one_line_error(palaestra("results", "empty", cwd=tmp_path), "results")
    assert "manifest" in line


def test_run_with_an_unknown_env_fails_with_a_hint(tmp_path: Path) -> None:
    result = palaestra(
        "run", "NoSuchEnv-v0", "--agent", "random", "--episodes", "1", "--monitor", "x", cwd=tmp_path
    )
    line = _one_line_error(result, "run")
    assert "NoSuchEnv-v0" in line and "palaestra envs" in line


def test_run_with_an_unknown_agent_fails(tmp_path: Path) -> None:
    result = palaestra(
        "run",
        "CartPole-v1",
        "--agent",
        "no_such_module:make",
        "--episodes",
        "1",
        "--no-video",
        "--monitor",
        "x",
        cwd=tmp_path,
    )
    line = _one_line_error(result, "run")
    assert "no_such_module" in line
    bad_form = palaestra(
        "run", "CartPole-v1", "--agent", "dqn", "--episodes", "1", "--monitor", "y", cwd=tmp_path
    )
    assert "module:factory" in _one_line_error(bad_form, "run")


def test_run_refuses_a_directory_with_results_unless_forced(tmp_path: Path) -> None:
    args = ("run", "CartPole-v1", "--agent", "random", "--episodes", "2", "--no-video", "--monitor", "runs/a")
    assert palaestra(*args, cwd=tmp_path).returncode == 0
    line = _one_line_error(palaestra(*args, cwd=tmp_path), "run")
    assert "existing monitor files" in line or "force" in line
    assert palaestra(*args, "--force", cwd=tmp_path).returncode == 0
    assert palaestra(*args, "--resume", cwd=tmp_path).returncode == 0


def test_results_plot_into_a_missing_folder_fails(tmp_path: Path) -> None:
    assert (
        palaestra(
            "run",
            "CartPole-v1",
            "--agent",
            "random",
            "--episodes",
            "3",
            "--monitor",
            "r",
            "--no-video",
            cwd=tmp_path,
        ).returncode
        == 0
    )
    line = _one_line_error(
        palaestra("results", "r", "--plot", "no/such/folder/x.png", cwd=tmp_path), "results"
    )
    assert "x.png" in line


# -- palaestra envs -----------------------------------------------------------------------------------


def _group_blocks(text: str) -> dict[str, str]:
    """Group id -> that group's lines of `palaestra envs`."""
    blocks: dict[str, str] = {}
    current = None
    for line in text.splitlines():
        heading = re.match(r"^\S.*\((\w+)\):", line)
        if heading:
            current = heading.group(1)
            blocks[current] = ""
        elif current:
            blocks[current] += line + "\n"
    return blocks


def test_envs_lists_ids_by_group_with_threshold_and_trials() -> None:
    result = palaestra("envs")
    assert result.returncode == 0, result.stderr
    groups = _group_blocks(result.stdout)
    assert re.search(r"^\s+CartPole-v1\s+475\.0\s+100\s", groups["classic_control"], re.M)
    assert re.search(r"^\s+Pendulum-v1\s+-\s+100\s", groups["classic_control"], re.M)
    assert re.search(r"^\s+Go9x9-v0\s", groups["board_game"], re.M)
    assert re.search(r"^\s+Hex9x9-v0\s", groups["board_game"], re.M)
    for env_id in ("Pong-v0", "PongNoFrameskip-v4", "ALE/Pong-v5"):
        assert re.search(rf"^\s+{re.escape(env_id)}\s", groups["atari"], re.M), env_id
    # the 2017 ids under their 2017 groups, marked, with what makes them and their 2017 rule
    assert re.search(r"^\s+Copy-v0\s+25\.0\s+100\s.*\(2017 id\)$", groups["algorithmic"], re.M)
    assert re.search(r"^\s+FrozenLake-v0\s+0\.78\s.*made by FrozenLake-v1's code", groups["toy_text"], re.M)
    assert re.search(r"^\s+Acrobot-v1\s+-100\.0\s.*2017 runs: threshold -\)$", groups["classic_control"], re.M)
    assert re.search(r"^\s+OffSwitchCartpole-v0\s", groups["safety"], re.M)
    # what cannot run here only with --all, with why
    assert "Thrower-v0" not in result.stdout
    assert re.search(r"^\s+Thrower-v0\s.*cannot run here: Thrower-v0 has no successor", palaestra("envs", "--all").stdout, re.M)


def test_envs_group_filter() -> None:
    result = palaestra("envs", "--group", "atari")
    assert result.returncode == 0
    assert "PongNoFrameskip-v4" in result.stdout and "CartPole-v1" not in result.stdout
    assert list(_group_blocks(result.stdout)) == ["atari"]


def test_envs_json_lists_what_the_table_lists() -> None:
    result = palaestra("envs", "--json", "--group", "classic_control")
    assert result.returncode == 0, result.stderr
    entries = {e["env_id"]: e for e in json.loads(result.stdout)}
    assert entries["CartPole-v1"] == {
        "env_id": "CartPole-v1",
        "group": "classic_control",
        "summary": "Balance a pole on a cart.",
        "reward_threshold": 475.0,
        "trials": 100,
        "max_episode_steps": 500,
        "available": True,
        "unavailable_reason": None,
        "legacy_2017": True,
    }
    table = palaestra("envs", "--group", "classic_control").stdout
    assert sorted(entries) == sorted(re.findall(r"^  (\S+-v\d+)\s", table, re.M))


def test_users_list_json_shows_keys_without_the_key(tmp_path: Path) -> None:
    created = palaestra("users", "create", "ann", "--data-dir", "board", cwd=tmp_path)
    assert created.returncode == 0, created.stderr
    key = created.stdout.strip().splitlines()[-1]
    palaestra("users", "revoke", "ann", "--data-dir", "board", cwd=tmp_path)
    palaestra("users", "create", "ann", "--data-dir", "board", cwd=tmp_path)
    result = palaestra("users", "--data-dir", "board", "list", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    keys = json.loads(result.stdout)
    assert [(k["user"], k["active"]) for k in keys] == [("ann", False), ("ann", True)]
    assert key not in result.stdout and all(key.startswith(k["prefix"]) for k in keys[:1])
    assert keys[0]["revoked"] is not None and keys[1]["revoked"] is None


def test_an_unknown_env_id_gets_a_suggestion_with_its_version(tmp_path: Path) -> None:
    result = palaestra("run", "Cartpole-v1", "--agent", "random", "--episodes", "1", "--monitor", "x", cwd=tmp_path)
    line = _one_line_error(result, "run")
    assert "Unknown environment 'Cartpole-v1'. Did you mean 'CartPole-v1'? `palaestra envs` lists" in line
    assert "?." not in line


def test_benchmark_run_help_lists_every_built_in_agent() -> None:
    from palaestra.agents import BUILTIN_AGENTS

    for command in (("run",), ("benchmark", "run")):
        out = palaestra(*command, "--help").stdout
        for name in (*BUILTIN_AGENTS, "module:factory"):
            assert re.search(rf"^  {re.escape(name)}\s", out, re.M), (command, name)


def test_a_benchmark_of_2017_versions_runs_without_gymnasiums_deprecation_warning(tmp_path: Path) -> None:
    """ClassicControl2-v1 asks for CartPole-v0 on purpose; "CartPole-v0 is out of date" is noise there."""
    result = palaestra(
        "benchmark", "run", "ClassicControl2-v1", "--agent", "random", "--out", "b", "--no-score", cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert "Trial CartPole-v0-0 finished" in result.stderr
    assert "Warning" not in result.stderr and "out of date" not in result.stderr
