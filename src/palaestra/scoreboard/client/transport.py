"""HTTP with one scoreboard: the API key, JSON in and out, retries, and the 2017 error mapping.

- :class:`Transport`: one ``httpx.Client``; :meth:`Transport.request` sends JSON with the API key
  (nulls stripped, as the 2017 client did) and reads JSON back; :meth:`Transport.post_form` posts an
  upload form to a ``post_url`` (no API headers). Both retry through :meth:`Transport.send`.
- :class:`RetryPolicy`: connection errors, timeouts, 429 (honouring ``Retry-After``) and 5xx are
  retried with exponential backoff and full jitter; other 4xx are answers.
- :func:`error_from_response`: a non-2xx answer as the palaestra error the 2017 client raised
  (``InvalidRequestError`` with ``param``, ``AuthenticationError``, ``RateLimitError``...).
"""

from __future__ import annotations

import contextlib
import email.utils
import json
import logging
import random
import time
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
)
from palaestra.scoreboard import protocol
from palaestra.scoreboard.client.config import ENV_API_KEY

__all__ = [
    "RETRYABLE_EXCEPTIONS",
    "USER_AGENT",
    "RetryPolicy",
    "Transport",
    "error_from_response",
    "is_retryable_status",
    "parse_retry_after",
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


def is_retryable_status(status: int) -> bool:
    """429 and every 5xx are retried; other statuses are answers."""
    return status == 429 or status >= 500


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with full jitter: before retry ``n`` (0-based) sleep a uniform random time in
    ``[0, min(max_delay, base_delay * 2**n)]``, or the server's ``Retry-After`` (capped) when it sent one."""

    max_retries: int = 6
    base_delay: float = 0.5
    max_delay: float = 30.0
    max_retry_after: float = 120.0

    def delay(self, retry: int, retry_after: float | None = None, rng: random.Random | None = None) -> float:
        if retry_after is not None:
            return max(0.0, min(retry_after, self.max_retry_after))
        ceiling = min(self.max_delay, self.base_delay * (2**retry))
        return (rng or random).uniform(0.0, ceiling)


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
    return APIError(message, **kwargs)


class Transport:
    """HTTP with the scoreboard at ``server`` (a base URL), as the user of ``api_key``.

    ``transport`` is an httpx transport (tests inject faults with it); ``sleep`` waits between retries.
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
    ) -> None:
        self.server = server
        self.api_key = api_key
        self.retry = retry or RetryPolicy()
        self._sleep = sleep
        self._http = httpx.Client(
            timeout=timeout, transport=transport, headers={"User-Agent": USER_AGENT}, follow_redirects=False
        )

    def close(self) -> None:
        self._http.close()

    def send(self, describe: str, send: Callable[[], httpx.Response]) -> httpx.Response:
        """Call ``send`` until it gets a 2xx answer; retry network errors, 429 and 5xx per :attr:`retry`."""
        errors: list[APIError] = []
        for attempt in range(self.retry.max_retries + 1):
            retry_after = None
            try:
                response = send()
            except RETRYABLE_EXCEPTIONS as e:
                error: APIError = APIConnectionError(
                    f"Could not reach the scoreboard while requesting {describe} "
                    f"(network error: {type(e).__name__}: {e or 'no answer'})"
                )
            else:
                if response.is_success:
                    return response
                error = error_from_response(response, describe)
                if not is_retryable_status(response.status_code):
                    raise error
                retry_after = parse_retry_after(response.headers.get("Retry-After"))
            errors.append(error)
            if attempt == self.retry.max_retries:
                break
            delay = self.retry.delay(attempt, retry_after)
            logger.warning(
                "%s; retrying in %.1f s (retry %d of %d)", error, delay, attempt + 1, self.retry.max_retries
            )
            self._sleep(delay)
        failure = RetriesExceededError(
            f"Gave up on {describe} after {len(errors)} attempts. The last error was: {errors[-1]}"
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

    def post_form(self, describe: str, url: str, fields: Mapping[str, str], files: Mapping[str, Any]) -> None:
        """POST a multipart form (an upload's ``post_fields`` + ``file``) to ``url``, without API headers."""
        self.send(describe, lambda: self._http.post(url, data=fields, files=files))


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
