"""The upload client's HTTP layer against a scripted local server: retries with backoff and jitter,
Retry-After, the 2017 error mapping, idempotency keys, the post_url form upload and its progress bar."""

from __future__ import annotations

import contextlib
import io
import json
import random
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime
from pathlib import Path

import pytest

from palaestra.errors import (
    APIConnectionError,
    APIError,
    AuthenticationError,
    ConfigurationError,
    InvalidRequestError,
    RateLimitError,
    RetriesExceededError,
    StorageFullError,
)
from palaestra.scoreboard import protocol
from palaestra.scoreboard.client import (
    RetryPolicy,
    ScoreboardClient,
    idempotency_key,
    parse_retry_after,
)
from palaestra.scoreboard.client.transport import is_local_url
from tests.scoreboard.client.client_helpers import Reply, ScriptedServer, file_object
from tests.server_process import free_port


def make_client(server: ScriptedServer | str, sleeps: list[float], **kwargs) -> ScoreboardClient:
    url = server if isinstance(server, str) else server.url
    policy = kwargs.pop("retry", RetryPolicy(max_retries=3, base_delay=0.5, max_delay=4.0))
    return ScoreboardClient(url, "key_secret", retry=policy, sleep=sleeps.append, **kwargs)


def test_503_twice_then_success_is_retried_with_the_same_idempotency_key(scripted_server):
    scripted_server.on(
        "POST",
        "/v1/files",
        Reply(503, {"detail": "busy", "type": "about:blank"}),
        Reply(503, b"Service Unavailable", {"Content-Type": "text/html"}),
        Reply(200, file_object(scripted_server.url)),
    )
    sleeps: list[float] = []
    with make_client(scripted_server, sleeps) as client:
        file = client.create_file("episode_batch", idempotency_key="pal-file-abc")
    assert file.id == "file_1" and file.post_url
    seen = scripted_server.seen("POST", "/v1/files")
    assert len(seen) == 3
    assert {s.headers["Idempotency-Key"] for s in seen} == {"pal-file-abc"}
    assert all(s.headers["Authorization"] == "Bearer key_secret" for s in seen)
    assert [json.loads(s.body) for s in seen] == [{"purpose": "episode_batch"}] * 3
    # full jitter: retry n sleeps somewhere in [0, base * 2**n]
    assert len(sleeps) == 2 and 0 <= sleeps[0] <= 0.5 and 0 <= sleeps[1] <= 1.0


def test_retry_after_is_honoured_on_429(scripted_server):
    scripted_server.on(
        "POST",
        "/v1/files",
        Reply(429, {"detail": "slow down", "type": "about:blank"}, {"Retry-After": "7"}),
        Reply(200, file_object(scripted_server.url)),
    )
    sleeps: list[float] = []
    with make_client(scripted_server, sleeps) as client:
        client.create_file("episode_batch")
    assert sleeps == [7.0]


def test_retry_after_is_capped():
    assert RetryPolicy(max_retry_after=10).delay(0, retry_after=3600) == 10


def test_backoff_grows_exponentially_and_is_capped():
    policy = RetryPolicy(base_delay=1.0, max_delay=8.0)
    rng = random.Random(0)
    for retry in range(8):
        ceiling = min(8.0, 2.0**retry)
        delays = [policy.delay(retry, rng=rng) for _ in range(200)]
        assert min(delays) >= 0 and max(delays) <= ceiling
        assert max(delays) > ceiling * 0.8  # the whole range is used (jitter), not a fixed step


def test_parse_retry_after_reads_seconds_and_http_dates():
    assert parse_retry_after("12") == 12.0
    assert parse_retry_after(None) is None and parse_retry_after("soon") is None
    later = datetime.now(timezone.utc) + timedelta(seconds=30)
    assert 20 < (parse_retry_after(format_datetime(later, usegmt=True)) or 0) <= 30


def test_persistent_5xx_gives_up_with_every_attempt_counted(scripted_server):
    scripted_server.on(
        "POST", "/v1/evaluations", Reply(502, {"detail": "bad gateway", "type": "about:blank"})
    )
    sleeps: list[float] = []
    with make_client(scripted_server, sleeps) as client, pytest.raises(RetriesExceededError) as info:
        client.create_evaluation(protocol.EvaluationCreate(env="CartPole-v1"), idempotency_key="k")
    assert "after 4 attempts" in str(info.value) and "bad gateway" in str(info.value)
    assert "POST /v1/evaluations" in str(info.value)
    assert isinstance(info.value.__cause__, APIError)
    assert len(scripted_server.seen("POST", "/v1/evaluations")) == 4 and len(sleeps) == 3


def test_a_refused_connection_to_this_machine_fails_at_once_naming_palaestra_server():
    """Nothing listens on a local port: no retry will start a server, so the first refusal is the answer."""
    sleeps: list[float] = []
    url = f"http://127.0.0.1:{free_port()}"
    with make_client(url, sleeps) as client, pytest.raises(APIConnectionError) as e:
        client.retrieve_evaluation("eval_1")
    assert not isinstance(e.value, RetriesExceededError) and sleeps == []
    assert f"No scoreboard server is running at {url}" in str(e.value)
    assert "'palaestra server'" in str(e.value) and "GET /v1/evaluations/eval_1" in str(e.value)


def test_a_refused_local_connection_is_retried_when_the_caller_waits_for_the_server_then_reported():
    sleeps: list[float] = []
    policy = RetryPolicy(max_retries=3, base_delay=0.5, max_delay=4.0, wait_for_local_server=True)
    with (
        make_client(f"http://127.0.0.1:{free_port()}", sleeps, retry=policy) as client,
        pytest.raises(RetriesExceededError) as e,
    ):
        client.retrieve_evaluation("eval_1")
    assert isinstance(e.value.__cause__, APIConnectionError)
    assert "Could not reach the scoreboard" in str(e.value) and "GET /v1/evaluations/eval_1" in str(e.value)
    assert len(sleeps) == 3


@pytest.mark.parametrize(
    ("url", "local"),
    [
        ("http://localhost:8000", True),
        ("http://127.0.0.1:8000", True),
        ("http://127.8.9.10", True),
        ("http://[::1]:8000", True),
        ("http://board.localhost", True),
        ("https://scoreboard.example.org", False),
        ("http://10.0.0.5:8000", False),
        ("http://[2001:db8::1]:8000", False),
    ],
)
def test_local_urls_are_the_loopback_ones(url, local):
    assert is_local_url(url) is local


@pytest.mark.parametrize(
    ("status", "body", "error", "param"),
    [
        (
            400,
            {"detail": "episode_rewards has 3 entries", "type": "episode_rewards"},
            InvalidRequestError,
            "episode_rewards",
        ),
        (404, {"detail": "No such evaluation: eval_x", "type": "about:blank"}, InvalidRequestError, None),
        (401, {"detail": "Invalid API key", "type": "about:blank"}, AuthenticationError, None),
        (403, {"detail": "not yours", "type": "about:blank"}, APIError, None),
    ],
)
def test_4xx_is_not_retried_and_maps_to_the_2017_errors(scripted_server, status, body, error, param):
    scripted_server.on("GET", "/v1/evaluations/eval_x", Reply(status, body, {"request-id": "req_123"}))
    sleeps: list[float] = []
    with make_client(scripted_server, sleeps) as client, pytest.raises(APIError) as info:
        client.retrieve_evaluation("eval_x")
    assert type(info.value) is error
    assert str(info.value).startswith("Request req_123: " + body["detail"])
    assert "(while requesting GET /v1/evaluations/eval_x)" in str(info.value)
    assert info.value.http_status == status and info.value.request_id == "req_123"
    if isinstance(info.value, InvalidRequestError):
        assert info.value.param == param
    if status == 401:
        assert "palaestra login" in str(info.value)
    assert sleeps == [] and len(scripted_server.requests) == 1


def test_rate_limit_error_after_retries_keeps_the_429(scripted_server):
    scripted_server.on("GET", "/v1/files/file_1", Reply(429, {"detail": "too many", "type": "about:blank"}))
    with make_client(scripted_server, []) as client, pytest.raises(RetriesExceededError) as info:
        client.retrieve_file("file_1")
    assert isinstance(info.value.__cause__, RateLimitError)


def test_invalid_json_answer_is_an_api_error(scripted_server):
    scripted_server.on(
        "GET", "/v1/evaluations/eval_1", Reply(200, b"<html>proxy</html>", {"Content-Type": "text/html"})
    )
    with make_client(scripted_server, []) as client, pytest.raises(APIError, match="Invalid response body"):
        client.retrieve_evaluation("eval_1")


def test_an_answer_that_is_not_the_schema_is_an_api_error(scripted_server):
    scripted_server.on("GET", "/v1/evaluations/eval_1", Reply(200, {"object": "evaluation"}))
    with (
        make_client(scripted_server, []) as client,
        pytest.raises(APIError, match="not a valid EvaluationObject"),
    ):
        client.retrieve_evaluation("eval_1")


def test_bodies_are_json_with_nulls_stripped_and_empty_algorithm_kept(scripted_server):
    scripted_server.on(
        "POST", "/v1/evaluations", Reply(200, {"object": "evaluation", "id": "eval_1", "env": "X-v0"})
    )
    body = protocol.EvaluationCreate(
        training_episode_batch="file_1", env="X-v0", algorithm=protocol.AlgorithmRef(), gym_version="1.0"
    )
    with make_client(scripted_server, []) as client:
        client.create_evaluation(body, idempotency_key="k1")
    [seen] = scripted_server.seen("POST", "/v1/evaluations")
    assert json.loads(seen.body) == {
        "training_episode_batch": "file_1",
        "env": "X-v0",
        "algorithm": {},
        "gym_version": "1.0",
    }
    assert seen.headers["Content-Type"] == "application/json"


def test_benchmark_run_tags_go_as_a_json_string(scripted_server):
    scripted_server.on(
        "POST",
        "/v1/benchmark_runs",
        Reply(200, {"object": "benchmark_run", "id": "brun_1", "benchmark_id": "B"}),
    )
    body = protocol.BenchmarkRunCreate(benchmark_id="B", algorithm_id="a", tags={"lr": 0.1})
    with make_client(scripted_server, []) as client:
        client.create_benchmark_run(body, idempotency_key="k")
    [seen] = scripted_server.seen("POST", "/v1/benchmark_runs")
    doc = json.loads(seen.body)
    assert doc["tags"] == '{"lr": 0.1}' and doc["benchmark_id"] == "B"


def test_file_form_upload_is_multipart_without_api_headers(scripted_server):
    scripted_server.on("POST", "/upload/file_1", Reply(204))
    file = protocol.FileObject.model_validate(file_object(scripted_server.url))
    with make_client(scripted_server, []) as client:
        client.put_file(file, b'{"episode_lengths": []}')
    [seen] = scripted_server.seen("POST", "/upload/file_1")
    assert "Authorization" not in seen.headers and "Idempotency-Key" not in seen.headers
    assert seen.headers["Content-Type"].startswith("multipart/form-data; boundary=")
    assert b'name="signature"\r\n\r\nsig-file_1' in seen.body
    assert b'name="file"; filename="upload"' in seen.body and b'{"episode_lengths": []}' in seen.body


def test_file_form_upload_failure_names_the_upload(scripted_server):
    scripted_server.on(
        "POST", "/upload/file_1", Reply(400, {"detail": "signature expired", "type": "about:blank"})
    )
    file = protocol.FileObject.model_validate(file_object(scripted_server.url))
    with make_client(scripted_server, []) as client, pytest.raises(InvalidRequestError) as info:
        client.put_file(file, b"{}")
    assert "signature expired" in str(info.value) and "uploading the episode_batch of file file_1" in str(
        info.value
    )


class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def _big_file(tmp_path: Path, size: int = 3 << 20) -> Path:
    path = tmp_path / "archive.tar.gz"
    path.write_bytes(random.Random(1).randbytes(size))
    return path


@pytest.mark.parametrize("tty", [False, True])
def test_large_uploads_stream_from_disk_with_progress_only_on_a_terminal(scripted_server, tmp_path, tty):
    path = _big_file(tmp_path)
    scripted_server.on("POST", "/upload/file_v", Reply(503, b"try again"), Reply(204))
    file = protocol.FileObject.model_validate(file_object(scripted_server.url, "video", "file_v"))
    stream = FakeTTY() if tty else io.StringIO()
    with make_client(scripted_server, [], progress_stream=stream) as client:
        client.put_file(file, path)
    first, second = scripted_server.seen("POST", "/upload/file_v")
    assert len(first.body) == len(second.body) > path.stat().st_size  # the retry sent the whole file again
    assert path.read_bytes() in second.body
    assert second.headers["Content-Type"].startswith("multipart/form-data")
    if tty:
        assert "Uploading video" in stream.getvalue() and "3.00M" in stream.getvalue()
    else:
        assert stream.getvalue() == ""


def test_small_uploads_get_no_progress_bar_even_on_a_terminal(scripted_server, tmp_path):
    path = _big_file(tmp_path, 1000)
    scripted_server.on("POST", "/upload/file_v", Reply(204))
    file = protocol.FileObject.model_validate(file_object(scripted_server.url, "video", "file_v"))
    stream = FakeTTY()
    with make_client(scripted_server, [], progress_stream=stream) as client:
        client.put_file(file, path)
    assert stream.getvalue() == ""


def test_a_used_up_upload_form_of_a_pending_file_is_renewed(scripted_server):
    """A rerun after a crash may get back a file whose single-use form was spent; the client asks for
    a new file under a key derived from the old one, and uploads there."""
    url = scripted_server.url
    scripted_server.on(
        "POST",
        "/v1/files",
        Reply(200, file_object(url, file_id="file_old")),
        Reply(200, file_object(url, file_id="file_new")),
    )
    used = Reply(409, {"detail": "form already used", "type": "about:blank"})
    scripted_server.on("POST", "/upload/file_old", used)
    scripted_server.on("GET", "/v1/files/file_old", Reply(200, file_object(url, file_id="file_old")))
    scripted_server.on("POST", "/upload/file_new", Reply(204))
    with make_client(scripted_server, []) as client:
        file = client.upload_content("episode_batch", "pal-file-k", lambda: contextlib.nullcontext(b"{}"))
    assert file.id == "file_new" and file.status == "uploaded"
    keys = [s.headers["Idempotency-Key"] for s in scripted_server.seen("POST", "/v1/files")]
    assert keys == ["pal-file-k", "pal-file-k.renew.file_old"]


def test_an_expired_upload_form_is_renewed(scripted_server):
    url = scripted_server.url
    past = "2001-01-01T00:00:00+00:00"
    scripted_server.on(
        "POST",
        "/v1/files",
        Reply(200, file_object(url, file_id="file_old", expires_at=past)),
        Reply(200, file_object(url, file_id="file_new")),
    )
    expired = Reply(400, {"detail": "The upload URL of file_old expired", "type": "expires"})
    scripted_server.on("POST", "/upload/file_old", expired)
    scripted_server.on(
        "GET", "/v1/files/file_old", Reply(200, file_object(url, file_id="file_old", expires_at=past))
    )
    scripted_server.on("POST", "/upload/file_new", Reply(204))
    with make_client(scripted_server, []) as client:
        file = client.upload_content("video", "pal-file-v", lambda: contextlib.nullcontext(b"{}"))
    assert file.id == "file_new"


def test_a_form_refused_for_a_file_that_did_arrive_counts_as_uploaded(scripted_server):
    url = scripted_server.url
    scripted_server.on("POST", "/v1/files", Reply(200, file_object(url)))
    scripted_server.on(
        "POST", "/upload/file_1", Reply(409, {"detail": "already uploaded", "type": "about:blank"})
    )
    scripted_server.on("GET", "/v1/files/file_1", Reply(200, file_object(url, status="uploaded")))
    with make_client(scripted_server, []) as client:
        file = client.upload_content("episode_batch", "k", lambda: contextlib.nullcontext(b"{}"))
    assert file.id == "file_1" and file.status == "uploaded"
    assert len(scripted_server.seen("POST", "/v1/files")) == 1


def test_a_bad_upload_is_not_renewed_forever(scripted_server):
    url = scripted_server.url
    scripted_server.on("POST", "/v1/files", Reply(200, file_object(url)))
    scripted_server.on("POST", "/upload/file_1", Reply(400, {"detail": "not JSON", "type": "file"}))
    scripted_server.on("GET", "/v1/files/file_1", Reply(200, file_object(url)))
    with make_client(scripted_server, []) as client, pytest.raises(InvalidRequestError, match="not JSON"):
        client.upload_content("episode_batch", "k", lambda: contextlib.nullcontext(b"{}"))
    assert len(scripted_server.seen("POST", "/v1/files")) == 1


def test_a_file_uploaded_by_an_earlier_run_is_not_sent_again(scripted_server):
    url = scripted_server.url
    scripted_server.on("POST", "/v1/files", Reply(200, file_object(url, status="uploaded")))
    opened = []
    with make_client(scripted_server, []) as client:
        file = client.upload_content("episode_batch", "k", lambda: opened.append(1))  # type: ignore[arg-type,return-value]
    assert file.status == "uploaded" and opened == []
    assert scripted_server.seen("POST", "/upload/file_1") == []


def test_idempotency_keys_depend_only_on_their_parts():
    a = idempotency_key("evaluation", {"env": "X", "algorithm": {}}, None)
    assert a == idempotency_key("evaluation", {"algorithm": {}, "env": "X"}, None)
    assert a != idempotency_key("evaluation", {"env": "X", "algorithm": {"id": "a"}}, None)
    assert a != idempotency_key("file", {"env": "X", "algorithm": {}}, None)
    assert a.startswith("pal-evaluation-") and len(a) < 100


class SimulatedClock:
    """A clock that only the client's sleeps move: the retry budget measured without waiting."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds

    def __call__(self) -> float:
        return self.now


def test_503_is_retried_for_the_whole_budget_and_no_longer(scripted_server):
    scripted_server.on("POST", "/v1/files", Reply(503, {"detail": "restarting", "type": "about:blank"}))
    clock = SimulatedClock()
    client = ScoreboardClient(
        scripted_server.url, "key_secret", retry=RetryPolicy(budget_s=60), sleep=clock.sleep, clock=clock
    )
    with client, pytest.raises(RetriesExceededError) as info:
        client.create_file("episode_batch")
    waited = sum(clock.sleeps)
    # a minute of retrying, longer than a server's restart under load (12-19 s), never past the budget
    assert 30 < waited <= 60 and max(clock.sleeps) <= RetryPolicy().max_delay
    assert len(scripted_server.seen("POST", "/v1/files")) == len(clock.sleeps) + 1
    assert "retry budget 60 s" in str(info.value) and "PALAESTRA_RETRY_BUDGET" in str(info.value)
    assert "restarting" in str(info.value)


def test_a_retry_after_past_the_budget_gives_up_without_waiting(scripted_server):
    scripted_server.on(
        "POST",
        "/v1/files",
        Reply(503, {"detail": "down for maintenance", "type": "about:blank"}, {"Retry-After": "90"}),
    )
    clock = SimulatedClock()
    client = ScoreboardClient(
        scripted_server.url, "key_secret", retry=RetryPolicy(budget_s=60), sleep=clock.sleep, clock=clock
    )
    with client, pytest.raises(RetriesExceededError) as info:
        client.create_file("episode_batch")
    assert clock.sleeps == [] and "down for maintenance" in str(info.value)


def test_the_retry_budget_comes_from_the_environment(scripted_server, monkeypatch):
    monkeypatch.setenv("PALAESTRA_RETRY_BUDGET", "5")
    with ScoreboardClient.from_config(scripted_server.url, "key_secret") as client:
        assert client.http.retry.budget_s == 5
    with ScoreboardClient.from_config(scripted_server.url, "key_secret", retry_budget=0) as client:
        assert client.http.retry.budget_s == 0
    monkeypatch.setenv("PALAESTRA_RETRY_BUDGET", "a minute")
    with pytest.raises(ConfigurationError, match="PALAESTRA_RETRY_BUDGET"):
        ScoreboardClient.from_config(scripted_server.url, "key_secret")


def test_507_storage_full_is_reported_at_once_and_not_retried(scripted_server):
    scripted_server.on("POST", "/v1/files", Reply(201, file_object(scripted_server.url)))
    scripted_server.on(
        "POST",
        "/upload/file_1",
        Reply(507, {"detail": "No space left on the blob store", "type": "about:blank", "status": 507}),
    )
    sleeps: list[float] = []
    with make_client(scripted_server, sleeps) as client, pytest.raises(StorageFullError) as info:
        client.upload_content("episode_batch", "k", lambda: contextlib.nullcontext(b"{}"))
    assert "The server's storage is full" in str(info.value) and "No space left" in str(info.value)
    assert info.value.http_status == 507
    assert sleeps == [] and len(scripted_server.seen("POST", "/upload/file_1")) == 1
    # nothing else was asked: a full disk is no reason to look the file up or renew its form
    assert [s.path for s in scripted_server.requests] == ["/v1/files", "/upload/file_1"]


def test_a_tls_handshake_with_a_plain_http_server_fails_at_once_with_a_hint(scoreboard_server):
    sleeps: list[float] = []
    https_url = scoreboard_server.url.replace("http://", "https://")
    with make_client(https_url, sleeps) as client, pytest.raises(APIConnectionError) as info:
        client.retrieve_evaluation("eval_1")
    message = str(info.value)
    assert message.startswith(f"TLS handshake with {https_url} failed")
    assert f"is the server plain HTTP? try {scoreboard_server.url}" in message
    assert "\n" not in message and sleeps == []


@pytest.mark.parametrize("suffix", ["/v1", "/v1/"])
def test_a_server_url_ending_in_v1_gets_a_hint(suffix):
    with pytest.raises(ConfigurationError) as info:
        ScoreboardClient("http://127.0.0.1:8000" + suffix, "key_secret")
    assert "drop the trailing /v1 (use 'http://127.0.0.1:8000')" in str(info.value)
