"""Repeats: an upload of episodes that the uploader already made into an evaluation.

The rule (docs/upload.md, "Uploading the same run again"), asked by
:func:`palaestra.scoreboard.server.evaluations.create.create_evaluation`:

- an upload is a *repeat* when its episode batch has the sha256 of the batch of an evaluation of the
  same user on the same env (the client encodes a directory's episodes the same way every time, so
  the same folder uploaded again is the same batch; the stored ``episode_batch_sha256`` is compared);
- a repeat with the same details (:class:`Details`: the algorithm and the writeup, what the uploader
  claims about the run) answers that evaluation, ``200`` with ``already_uploaded``, and stores
  nothing: the board keeps one row per run. Videos and provenance are what the directory carries, not
  claims: a repeat that sends them where the first upload skipped them (``--skip-videos``,
  ``--no-provenance``) gets the evaluation as it was made, as the sealed twin of a live run does;
- a repeat with another algorithm or writeup is refused (409) with the evaluation's URL: an
  evaluation's details stay as first uploaded (the board has no edit or delete of an evaluation), and
  the second set would otherwise be a second, identical leaderboard row under another name;
- a request replayed under its ``Idempotency-Key`` is a repeat too (:func:`replayed`).

Only *self-reported, stand-alone* evaluations take part, on both sides:

- the board's own (verified) evaluations, made by ``palaestra worker`` from an uploaded agent, are
  never repeats and never make an upload one: a verified run that reproduces a self-reported one
  exactly is the verification working, and a self-reported upload says something else than the
  board's own run of the same episodes (the pages tell them apart);
- evaluations of a benchmark run are not either: a run may hold equal episodes in two of its slots
  (:meth:`palaestra.scoreboard.client.session.ScoreboardClient.upload_prepared`), and an upload again of
  the whole run gets the same run through its idempotency keys;
- another user's evaluation of the same episodes does not make an upload a repeat: each user's
  evaluations are their own claims (a copied run is a matter for the pages and operators).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import sqlalchemy as sa
from fastapi import Response
from sqlalchemy.orm import Session

from palaestra.scoreboard import protocol
from palaestra.scoreboard.server.core.answers import JSON
from palaestra.scoreboard.server.evaluations.records import (
    EvaluationRecord,
    evaluation_record,
    evaluation_select,
)
from palaestra.scoreboard.server.problems import Problem
from palaestra.scoreboard.server.tables.scores import Evaluation

__all__ = ["Details", "find_repeat", "repeat_of", "replayed"]


@dataclass(frozen=True)
class Details:
    """What an uploader claims about the run besides its episodes, compared between an upload and the
    evaluation it repeats: the algorithm (its id; a name new to the board stays a name, which no id
    equals) and the writeup."""

    algorithm: str | None
    writeup: str | None
    #: how the algorithm is named in a message (its name; the request's words for a new one)
    algorithm_label: str | None = None

    @classmethod
    def of(cls, evaluation: protocol.EvaluationObject) -> Details:
        algorithm = evaluation.algorithm
        return cls(
            algorithm.id if algorithm else None,
            evaluation.writeup,
            algorithm.name if algorithm else None,
        )

    def differences(self, asked: Details) -> list[tuple[str, str, str]]:
        """``(param, as stored, as asked)`` of each detail in which ``asked`` differs from these."""
        found = []
        if self.algorithm != asked.algorithm:
            found.append(("algorithm", _named(self.algorithm_label), _named(asked.algorithm_label)))
        if self.writeup != asked.writeup:
            found.append(("writeup", _named(self.writeup), _named(asked.writeup)))
        return found


def find_repeat(session: Session, user_seq: int, env_id: str, batch_sha256: str | None) -> EvaluationRecord | None:
    """The user's first self-reported, stand-alone evaluation on ``env_id`` whose episode batch has
    ``batch_sha256``, else None. Asked inside the creating transaction, which holds SQLite's write lock,
    so two equal uploads at once make one evaluation there (PostgreSQL: a window of one commit)."""
    if batch_sha256 is None:
        return None
    query = (
        evaluation_select()
        .where(
            Evaluation.user_seq == user_seq,
            Evaluation.env_id == env_id,
            Evaluation.episode_batch_sha256 == batch_sha256,
            Evaluation.benchmark_run_seq.is_(None),
            Evaluation.verified == sa.false(),
        )
        .order_by(Evaluation.seq)
        .limit(1)
    )
    row = session.execute(query).first()
    return None if row is None else evaluation_record(row)


def repeat_of(existing: protocol.EvaluationObject, asked: Details) -> protocol.EvaluationCreated:
    """The answer to an upload that repeats ``existing``: it, ``already_uploaded``; a 409 naming it when
    ``asked`` differs from its details."""
    differences = Details.of(existing).differences(asked)
    if differences:
        stored = " and ".join(f"{param} {value}" for param, value, _ in differences)
        other = " and ".join(f"{param} {value}" for param, _, value in differences)
        raise Problem(
            409,
            f"You uploaded these episodes of {existing.env} before: they are evaluation {existing.id} "
            f"({existing.web_url}), with {stored}; this upload asks for {other}. An evaluation keeps the "
            "details it was uploaded with (the board does not edit or delete evaluations), so the same "
            "episodes make one evaluation: upload with the first details to get it, or upload another run "
            "(other episodes) for a new evaluation.",
            differences[0][0],
        )
    return protocol.EvaluationCreated.of(existing, already_uploaded=True)


def replayed(stored: Response) -> Response:
    """The stored answer of a ``POST /v1/evaluations`` sent again with its ``Idempotency-Key``: the
    evaluation that request made, now a repeat (200, ``already_uploaded``), with the replay's headers."""
    document = json.loads(bytes(stored.body))
    document["already_uploaded"] = True
    headers = {k: v for k, v in stored.headers.items() if k.lower() not in ("content-length", "content-type")}
    return Response(json.dumps(document), status_code=200, media_type=JSON, headers=headers)


def _named(value: str | None) -> str:
    return repr(value) if value is not None else "none"

