"""HTTP with one scoreboard: the API key, JSON in and out, retries, and the 2017 error mapping.

- :class:`Transport`: one ``httpx.Client``; :meth:`Transport.request` sends JSON with the API key
  (nulls stripped, as the 2017 client did) and reads JSON back; :meth:`Transport.post_form` posts an
  upload form to a ``post_url`` (no API headers). Both retry through :meth:`Transport.send`.
- :class:`RetryPolicy`: connection errors, timeouts, 429 (honouring ``Retry-After``) and 5xx are
  retried with exponential backoff and full jitter for a budget of time (a minute by default: longer
  than a server's restart under load); other 4xx are answers. What can never succeed is not retried:
  a TLS failure (one line: is the server plain HTTP?), 501/505, 507 (the server's storage is
  full, :class:`~palaestra.errors.StorageFullError`), and a refused connection to a server on this
  machine that has not answered yet (no server is running there: start it with ``palaestra server``).
- :func:`error_from_response`: a non-2xx answer as the palaestra error the 2017 client raised
  (``InvalidRequestError`` with ``param``, ``AuthenticationError``, ``RateLimitError``...).
"""

from __future__ import annotations

import contextlib
import email.utils
import ipaddress
import json
import logging
import random
import ssl
import time
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel, ValidationError

from palaestra._version import __version__
from palaestra.errors import (
    APIConnectionError,
    APIError,
    AuthenticationError,
    InvalidRequestError,
    RateLimitError,
    RetriesExceededError,
    StorageFullError,
)
from palaestra.scoreboard import protocol
from palaestra.scoreboard.client.config import ENV_API_KEY, ENV_RETRY_BUDGET

__all__ = [
    "DEFAULT_RETRY_BUDGET_S",
    "RETRYABLE_EXCEPTIONS",
    "USER_AGENT",
    "RetryPolicy",
    "Transport",
    "error_from_response",
    "is_local_url",
    "is_retryable_status",
    "parse_retry_after",
    "permanent_connection_problem",
    "short_error",
]

logger = logging.getLogger("palaestra.upload")

USER_AGENT = f"palaestra/{__version__} httpx/{httpx.__version__}"
ModelT = TypeVar("ModelT", bound=BaseModel)

#: Exceptions of httpx that mean "no (complete) answer": retried.
RETRYABLE_EXCEPTIONS: tuple[type[Exception], ...] = (
    httpx.TimeoutException,
    httpx.NetworkError,
    httpx.RemoteProtocolError,
)


#: Server errors that no retry can fix: not implemented, HTTP version not supported, storage full.
PERMANENT_SERVER_STATUSES = frozenset({501, 505, 507})
#: Seconds of retrying before giving up: a server restart under load took 12-19 s (issue 15), and a
#: budget of 16 s made 2-10 % of the uploads of that test give up.
DEFAULT_RETRY_BUDGET_S = 60.0


def is_retryable_status(status: int) -> bool:
    """429 and the 5xx that may pass (503, 502, 500...) are retried; other statuses are answers."""
    return status == 429 or (status >= 500 and status not in PERMANENT_SERVER_STATUSES)


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with full jitter: before retry ``n`` (0-based) sleep a uniform random time in
    ``[0, min(max_delay, base_delay * 2**n)]``, or the server's ``Retry-After`` (capped) when it sent one.

    Retries stop when ``budget_s`` seconds have passed since the first attempt (a wait that would end
    past the budget is not started), or after ``max_retries`` retries when that is set.

    A connection refused by a server on this machine (``localhost``, 127.0.0.0/8, ``::1``) before it
    ever answered means that no server runs there: it fails at once, naming ``palaestra server``
    (issue 36: a minute of retries hid that). Once the server has answered, a refused connection is a
    restart and is retried. ``wait_for_local_server`` retries it from the first request too (a caller
    that knows the server is starting).
    """

    budget_s: float = DEFAULT_RETRY_BUDGET_S
    wait_for_local_server: bool = False
    max_retries: int | None = None
    base_delay: float = 0.5
    max_delay: float = 10.0
    max_retry_after: float = 120.0

    def delay(self, retry: int, retry_after: float | None = None, rng: random.Random | None = None) -> float:
        if retry_after is not None:
            return max(0.0, min(retry_after, self.max_retry_after))
        ceiling = min(self.max_delay, self.base_delay * (2 ** min(retry, 32)))
        return (rng or random).uniform(0.0, ceiling)

    def allows(self, retry: int, resumes_at: float) -> bool:
        """Whether retry ``retry`` (1-based), which would start ``resumes_at`` seconds after the first
        attempt, is within the policy."""
        if self.max_retries is not None and retry > self.max_retries:
            return False
        return resumes_at <= self.budget_s


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header (delta-seconds or an HTTP date); ``None`` if absent or bad."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())


def error_from_response(response: httpx.Response, describe: str) -> APIError:
    """The palaestra error for a non-2xx answer (spec §4.3 mapping; ``request-id`` shown in ``str()``)."""
    status = response.status_code
    text = response.text
    json_body: Any = None
    detail: str | None = None
    param: str | None = None
    with contextlib.suppress(ValueError):
        json_body = response.json()
    if isinstance(json_body, dict):
        try:
            body = protocol.ErrorBody.model_validate(json_body)
        except ValidationError:
            pass
        else:
            detail = body.detail
            param = None if body.type == protocol.NO_PARAM else body.type
    if detail is None:
        detail = f"HTTP {status} {response.reason_phrase}: {text[:500]}".rstrip(": ")
    message = f"{detail} (while requesting {describe})"
    dev_info = json_body.get("dev_info") if isinstance(json_body, dict) else None
    if isinstance(dev_info, dict) and dev_info.get("traceback"):
        message += f"\n\n<dev_info>\n{dev_info['traceback']}\n</dev_info>"
    kwargs: dict[str, Any] = {
        "http_body": text,
        "http_status": status,
        "json_body": json_body,
        "headers": dict(response.headers),
    }
    if status in (400, 404, 409, 410, 413, 422):
        return InvalidRequestError(message, param=param, **kwargs)
    if status == 401:
        return AuthenticationError(
            f"{message}. (HINT: check the API key in ${ENV_API_KEY} or run 'palaestra login' again.)",
            **kwargs,
        )
    if status == 429:
        return RateLimitError(message, **kwargs)
    if status == 507:
        return StorageFullError(
            f"The server's storage is full, so nothing was stored: {message}. Ask the server's operator "
            "to free space, then run the same upload again (what was already stored is kept).",
            **kwargs,
        )
    return APIError(message, **kwargs)


class Transport:
    """HTTP with the scoreboard at ``server`` (a base URL), as the user of ``api_key``.

    ``transport`` is an httpx transport (tests inject faults with it); ``sleep`` waits between retries
    and ``clock`` measures the retry budget (tests pass a simulated pair).
    """

    def __init__(
        self,
        server: str,
        api_key: str,
        *,
        retry: RetryPolicy | None = None,
        timeout: float = 120.0,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.server = server
        self.api_key = api_key
        self.retry = retry or RetryPolicy()
        self._sleep = sleep
        self._clock = clock
        #: Whether the server has answered this client once: after that a refused connection is a restart.
        self._answered = False
        self._http = httpx.Client(
            timeout=timeout, transport=transport, headers={"User-Agent": USER_AGENT}, follow_redirects=False
        )

    def close(self) -> None:
        self._http.close()

    def send(self, describe: str, send: Callable[[], httpx.Response]) -> httpx.Response:
        """Call ``send`` until it gets a 2xx answer; retry network errors, 429 and 5xx per :attr:`retry`."""
        errors: list[APIError] = []
        started = self._clock()
        while True:
            retry_after = None
            try:
                response = send()
            except RETRYABLE_EXCEPTIONS as e:
                permanent = permanent_connection_problem(e, self.server)
                if permanent is None and not (self._answered or self.retry.wait_for_local_server):
                    permanent = _nothing_listens_locally(e, self.server)
                if permanent:
                    raise APIConnectionError(f"{permanent} (while requesting {describe})") from None
                error: APIError = APIConnectionError(
                    f"Could not reach the scoreboard while requesting {describe} "
                    f"(network error: {type(e).__name__}: {e or 'no answer'})"
                )
            else:
                self._answered = True
                if response.is_success:
                    return response
                error = error_from_response(response, describe)
                if not is_retryable_status(response.status_code):
                    raise error
                retry_after = parse_retry_after(response.headers.get("Retry-After"))
            errors.append(error)
            delay = self.retry.delay(len(errors) - 1, retry_after)
            if not self.retry.allows(len(errors), self._clock() - started + delay):
                break
            logger.warning("%s; retrying in %.1f s (retry %d)", error, delay, len(errors))
            self._sleep(delay)
        spent = self._clock() - started
        failure = RetriesExceededError(
            f"Gave up on {describe} after {len(errors)} attempts in {spent:.0f} s (retry budget "
            f"{self.retry.budget_s:.0f} s; ${ENV_RETRY_BUDGET} or --retry-budget sets it). "
            f"The last error was: {errors[-1]}"
        )
        failure.errors = errors  # type: ignore[attr-defined]
        raise failure from errors[-1]

    def request(
        self,
        method: str,
        path: str,
        body: BaseModel | dict[str, Any] | None = None,
        *,
        idempotency_key: str | None = None,
        params: dict[str, Any] | None = None,
    ) -> Any:
        """One API call: JSON in (nulls stripped), JSON out, with retries and the 2017 error mapping."""
        url = self.server + path
        headers = {protocol.AUTHORIZATION_HEADER: f"Bearer {self.api_key}", "Accept": "application/json"}
        content = None
        if body is not None:
            data = body.model_dump(mode="json", exclude_none=True) if isinstance(body, BaseModel) else body
            content = json.dumps(_strip_nulls(data)).encode("utf-8")
            headers["Content-Type"] = "application/json"
        if idempotency_key:
            headers[protocol.IDEMPOTENCY_HEADER] = idempotency_key
        describe = f"{method} {path}"
        response = self.send(
            describe, lambda: self._http.request(method, url, content=content, headers=headers, params=params)
        )
        return _decode(response, describe)

    def call(self, model: type[ModelT], method: str, path: str, **kwargs: Any) -> ModelT:
        """:meth:`request`, its answer read as ``model``."""
        data = self.request(method, path, **kwargs)
        try:
            return model.model_validate(data)
        except ValidationError as e:
            raise APIError(
                f"The server's answer to {method} {path} is not a valid {model.__name__}: {short_error(e)}"
            ) from None

    def post_multipart(
        self, path: str, fields: Mapping[str, str], files: Mapping[str, Any], idempotency_key: str | None = None
    ) -> Any:
        """An API call whose body is a multipart form (``POST /v1/agents``), with the API key; JSON back."""
        headers = {protocol.AUTHORIZATION_HEADER: f"Bearer {self.api_key}", "Accept": "application/json"}
        if idempotency_key:
            headers[protocol.IDEMPOTENCY_HEADER] = idempotency_key
        describe = f"POST {path}"
        response = self.send(
            describe, lambda: self._http.post(self.server + path, data=fields, files=files, headers=headers)
        )
        return _decode(response, describe)

    def open_download(self, path: str, params: Mapping[str, str] | None = None) -> httpx.Response:
        """``GET path`` as a streamed answer (read it with ``iter_bytes``, then close it), retried as
        :meth:`send` retries until its answer starts; the API key is sent where there is one."""
        headers = {protocol.AUTHORIZATION_HEADER: f"Bearer {self.api_key}"} if self.api_key else {}
        request = self._http.build_request("GET", self.server + path, params=params, headers=headers)

        def send() -> httpx.Response:
            response = self._http.send(request, stream=True)
            if not response.is_success:  # an error answer is read whole, for its problem document
                response.read()
                response.close()
            return response

        return self.send(f"GET {path}", send)

    def post_form(self, describe: str, url: str, fields: Mapping[str, str], files: Mapping[str, Any]) -> None:
        """POST a multipart form (an upload's ``post_fields`` + ``file``) to ``url``, without API headers."""
        self.send(describe, lambda: self._http.post(url, data=fields, files=files))


def permanent_connection_problem(error: Exception, server: str) -> str | None:
    """What makes ``error`` (a failed connection to ``server``) one that no retry can fix, in a line;
    ``None`` when it may pass (refused, reset, timed out: a server restarting)."""
    cause: BaseException | None = error
    while cause is not None and not isinstance(cause, ssl.SSLError):
        cause = cause.__cause__ or cause.__context__
    if cause is None:
        return None
    if isinstance(cause, ssl.SSLCertVerificationError):
        return (
            f"The TLS certificate of {server} is not trusted ({cause.verify_message or cause.reason}): "
            "check the server's certificate, or the URL's host name"
        )
    plain = "http://" + server.removeprefix("https://")
    return (
        f"TLS handshake with {server} failed ({cause.reason or cause}): is the server plain HTTP? try {plain}"
    )


def is_local_url(url: str) -> bool:
    """Whether ``url``'s host is this machine: ``localhost`` (and its subdomains), 127.0.0.0/8 or ``::1``."""
    host = (urllib.parse.urlsplit(url).hostname or "").rstrip(".").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _nothing_listens_locally(error: Exception, server: str) -> str | None:
    """The line for a connection refused by ``server`` on this machine (nothing listens on its port:
    no retry will start a server), else ``None``."""
    if not isinstance(error, httpx.ConnectError) or not is_local_url(server):
        return None
    cause: BaseException | None = error
    while cause is not None and not isinstance(cause, ConnectionRefusedError):
        cause = cause.__cause__ or cause.__context__
    if cause is None:
        return None
    return (
        f"No scoreboard server is running at {server} (connection refused): start one with "
        "'palaestra server' (in another terminal), or name the running one with --server URL or $PALAESTRA_SERVER"
    )


def short_error(e: Exception) -> str:
    """The first line (or three) of an exception's message."""
    text = str(e).strip().splitlines()
    return text[0] if len(text) == 1 else "; ".join(line.strip() for line in text[:3])


def _strip_nulls(value: Any) -> Any:
    """The 2017 ``_strip_nulls``: drop ``None`` values recursively (an empty dict survives)."""
    if isinstance(value, dict):
        return {k: _strip_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_strip_nulls(v) for v in value]
    return value


def _decode(response: httpx.Response, describe: str) -> Any:
    if response.status_code == 204 or not response.content:
        return None
    if response.headers.get("Content-Type", "").startswith("text/plain"):
        return response.text
    try:
        return response.json()
    except ValueError:
        raise APIError(
            f"Invalid response body from API: {response.text[:300]!r} (HTTP response code was "
            f"{response.status_code}; while requesting {describe})",
            http_body=response.text,
            http_status=response.status_code,
            headers=dict(response.headers),
        ) from None
