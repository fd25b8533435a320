"""The ``/v1`` API's answers, made by the routes and by the services that create objects:

- :func:`answer`: a protocol model as the JSON answer, serialised once;
- :class:`Idempotency`: creating POSTs with an ``Idempotency-Key``: the same key from the same user gets
  the stored answer (``Idempotent-Replayed: true``), never a second object; the key reused for another
  request is a 409.

A route (or the service it calls) builds an :class:`Idempotency` from its request and either calls :meth:`Idempotency.answer`
(replay, else create) or, when it has work to do before the transaction, asks
:meth:`~Idempotency.stored_answer` first and :meth:`~Idempotency.create` after.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import sqlalchemy as sa
from fastapi import Request, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from sqlalchemy.orm import Session

from palaestra.scoreboard import protocol
from palaestra.scoreboard.server.core.database import Database, RawJSON
from palaestra.scoreboard.server.problems import Problem
from palaestra.scoreboard.server.tables.base import from_row, utcnow
from palaestra.scoreboard.server.tables.service import IdempotencyKey

if TYPE_CHECKING:  # the answers stand below the accounts: a principal is only read here
    from palaestra.scoreboard.server.accounts.auth import Principal

__all__ = ["JSON", "REPLAYED_HEADER", "Create", "Idempotency", "answer"]

logger = logging.getLogger("palaestra.scoreboard.api")

JSON = "application/json"


def answer(model: BaseModel, status: int = 200) -> Response:
    """``model`` as the JSON answer: every ``/v1`` answer is its protocol model, serialised once (by
    pydantic-core, without FastAPI validating it a second time against the route's response model)."""
    return Response(model.model_dump_json(), status_code=status, media_type=JSON)


REPLAYED_HEADER = "Idempotent-Replayed"
#: Attempts of a creating transaction that conflicts with a concurrent one (a unique constraint).
ATTEMPTS = 3

#: What a creating route runs inside the write transaction: ``session -> (status, answer)``.
Create = Callable[[Session], tuple[int, BaseModel]]

_KEYS = IdempotencyKey.__table__
_STORED = sa.select(_KEYS).where(
    _KEYS.c.user_seq == sa.bindparam("user_seq"), _KEYS.c.key == sa.bindparam("key")
)
_REMEMBER = sa.insert(IdempotencyKey)


@dataclass(frozen=True)
class Idempotency:
    """The ``Idempotency-Key`` of one creating request (``key`` None: the request sent none)."""

    key: str | None
    user_seq: int
    #: ``"POST /v1/evaluations"``: a key names one request, on one path
    signature: str
    #: sha256 of the request body, to refuse a key reused with another body
    digest: str

    @classmethod
    def of(cls, request: Request, principal: Principal, body: protocol.Request | None) -> Idempotency:
        key = request.headers.get(protocol.IDEMPOTENCY_HEADER)
        if key is not None and not 0 < len(key) <= 255:
            raise Problem(400, "The Idempotency-Key header must be 1-255 characters.", "Idempotency-Key")
        digest = ""
        if key is not None:  # without a key nothing is stored, so nothing to compare later
            text = body.model_dump_json(exclude_none=True) if body is not None else ""
            digest = hashlib.sha256(text.encode()).hexdigest()
        return cls(key, principal.user_seq, f"{request.method} {request.url.path}", digest)

    def stored_answer(self, db: Database) -> Response | None:
        """The answer stored under this key, or None (no key, or not used yet)."""
        if self.key is None:
            return None
        with db.connect() as conn:
            row = conn.execute(_STORED, {"user_seq": self.user_seq, "key": self.key}).first()
        return None if row is None else self._replay(from_row(IdempotencyKey, row))

    def create(self, db: Database, create: Create) -> Response:
        """Run ``create`` in one write transaction, storing its answer under the key (if any) in the same
        transaction; a concurrent twin of this request that committed first gets its answer replayed."""
        for attempt in range(ATTEMPTS):
            try:
                with db.write() as session:
                    status, model = create(session)
                    body = model.model_dump_json()
                    if self.key is not None:
                        # Last in the transaction: a twin that committed first makes this insert fail.
                        session.connection().execute(_REMEMBER, self._remembered(status, body))
                return Response(body, status_code=status, media_type=JSON)
            except sa.exc.IntegrityError as e:
                if (stored := self.stored_answer(db)) is not None:
                    return stored
                logger.info("Retrying %s after a conflict: %s", self.signature, e.orig)
                if attempt == ATTEMPTS - 1:
                    raise Problem(409, "The request conflicted with a concurrent one; retry it.") from None
        raise AssertionError("unreachable")

    def answer(self, db: Database, create: Create) -> Response:
        """The stored answer if this key was used before, else :meth:`create`'s."""
        stored = self.stored_answer(db)
        return stored if stored is not None else self.create(db, create)

    def _remembered(self, status: int, body: str) -> dict[str, object]:
        return {
            "user_seq": self.user_seq,
            "key": self.key,
            "request": self.signature,
            "request_hash": self.digest,
            "status_code": status,
            "response": RawJSON(body),  # the answer's JSON as sent, not serialised a second time
            "created": utcnow(),
        }

    def _replay(self, stored: IdempotencyKey) -> Response:
        if stored.request != self.signature or stored.request_hash != self.digest:
            raise Problem(
                409,
                f"This Idempotency-Key was already used for a different request ({stored.request}); "
                "send a new key for a new request.",
                "Idempotency-Key",
            )
        return JSONResponse(
            stored.response, status_code=stored.status_code, headers={REPLAYED_HEADER: "true"}
        )
