"""Where the upload client finds its server and API key: argument, PALAESTRA_*, the 2017 OPENAI_GYM_*
names, then the file ``palaestra login`` writes (mode 0600); and the errors that say how to set them."""

from __future__ import annotations

import io
import json
import logging
import stat

import pytest

import palaestra
from palaestra.cli import main
from palaestra.errors import ConfigurationError
from palaestra.scoreboard.client import (
    read_config,
    resolve_api_key,
    resolve_server,
    write_config,
)
from tests.scoreboard.client.client_helpers import record_cartpole

pytestmark = pytest.mark.usefixtures("cli_logging")


def test_missing_server_says_how_to_set_it(isolated_config):
    with pytest.raises(ConfigurationError) as info:
        resolve_server()
    message = str(info.value)
    assert "No scoreboard server is configured" in message
    assert (
        "PALAESTRA_SERVER" in message and "palaestra login --server URL" in message and "--server" in message
    )


def test_missing_api_key_says_how_to_set_it(isolated_config):
    with pytest.raises(ConfigurationError) as info:
        resolve_api_key()
    message = str(info.value)
    assert "PALAESTRA_API_KEY" in message and "palaestra login" in message and "users create" in message


def test_upload_without_configuration_fails_before_any_request(isolated_config, tmp_path):
    directory = record_cartpole(tmp_path / "run", episodes=1)
    with pytest.raises(ConfigurationError, match="No scoreboard server"):
        palaestra.upload(str(directory), api_key="key_x")
    with pytest.raises(ConfigurationError, match="API key"):
        palaestra.upload(str(directory), server="http://127.0.0.1:9")


def test_precedence_argument_then_palaestra_then_2017_names_then_login_file(isolated_config, monkeypatch):
    write_config(server="http://from-file:1", api_key="key_file")
    assert resolve_server() == "http://from-file:1" and resolve_api_key() == "key_file"
    monkeypatch.setenv("OPENAI_GYM_API_BASE", "http://legacy:2/")
    monkeypatch.setenv("OPENAI_GYM_API_KEY", "key_legacy")
    assert resolve_server() == "http://legacy:2" and resolve_api_key() == "key_legacy"
    monkeypatch.setenv("PALAESTRA_SERVER", "https://palaestra:3")
    monkeypatch.setenv("PALAESTRA_API_KEY", "key_palaestra")
    assert resolve_server() == "https://palaestra:3" and resolve_api_key() == "key_palaestra"
    assert resolve_server("http://arg:4") == "http://arg:4" and resolve_api_key("key_arg") == "key_arg"


def test_a_server_that_is_not_a_url_is_refused(isolated_config):
    with pytest.raises(ConfigurationError, match="http:// or https:// base URL"):
        resolve_server("127.0.0.1:8000")


def test_login_file_is_private_and_keeps_the_other_setting(isolated_config):
    path = write_config(server="http://127.0.0.1:8000/")
    assert path == isolated_config
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    write_config(api_key="key_abc")
    assert read_config() == {"server": "http://127.0.0.1:8000", "api_key": "key_abc"}
    path.chmod(0o644)
    write_config(api_key="key_def")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert not path.with_name(path.name + "~").exists()


def test_a_readable_login_file_is_warned_about(isolated_config, caplog):
    write_config(server="http://h:1", api_key="key_abc").chmod(0o644)
    with caplog.at_level(logging.WARNING, logger="palaestra"):
        assert resolve_api_key() == "key_abc"
    assert "readable by other users" in caplog.text and "chmod 600" in caplog.text


def test_a_corrupt_login_file_is_named(isolated_config):
    isolated_config.parent.mkdir(parents=True)
    isolated_config.write_text("{not json")
    with pytest.raises(ConfigurationError, match=r"not valid JSON.*palaestra login"):
        resolve_server()


def test_cli_login_reads_the_key_from_stdin_and_writes_mode_0600(isolated_config, monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", io.StringIO("key_from_stdin\n"))
    assert main(["login", "--server", "http://127.0.0.1:8123", "--no-verify"]) == 0
    assert stat.S_IMODE(isolated_config.stat().st_mode) == 0o600
    assert json.loads(isolated_config.read_text()) == {
        "server": "http://127.0.0.1:8123",
        "api_key": "key_from_stdin",
    }
    assert str(isolated_config) in capsys.readouterr().out
    # and the client now finds both without arguments or environment variables
    assert resolve_server() == "http://127.0.0.1:8123" and resolve_api_key() == "key_from_stdin"


def test_cli_login_without_a_key_says_how_to_give_one(isolated_config, monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    assert main(["login", "--server", "http://127.0.0.1:8123", "--no-verify"]) == 1
    assert "No API key given" in capsys.readouterr().err
    assert not isolated_config.exists()


def test_cli_upload_without_configuration_is_one_clear_line(isolated_config, tmp_path, capsys):
    directory = record_cartpole(tmp_path / "run", episodes=1)
    assert main(["upload", str(directory)]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("palaestra upload: error: No scoreboard server is configured")
    assert len(err.splitlines()) == 1


def test_cli_upload_bad_tags_are_a_usage_error(isolated_config, tmp_path, capsys):
    assert main(["upload", str(tmp_path), "--benchmark", "B", "--tags", "[1]", "--server", "http://h:1"]) == 1
    assert "--tags must be a JSON object" in capsys.readouterr().err
