"""What an export and an import may be trusted with: an import brings no API key the operator did not
ask for and reads nothing through a symbolic link; a re-export hashes again what it keeps of the
folder; and a log made before version 2 (its entries hash fewer fields) still verifies, and goes on."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from palaestra.scoreboard.server.evaluations import scorelog
from palaestra.scoreboard.server.evaluations.coverage import CURRENT_VERSION
from palaestra.scoreboard.server.tables.scores import Evaluation
from palaestra.scoreboard.server.tables.service import ScoreLogEntry
from tests.scoreboard.server.archive.test_export_import import board_env, palaestra, small_board
from tests.scoreboard.server_helpers import ScoreboardServer, make_batch, upload_evaluation


def _api_keys(data_dir: Path) -> int:
    with sqlite3.connect(data_dir / "scoreboard.sqlite3") as db:
        return int(db.execute("SELECT count(*) FROM api_keys").fetchone()[0])


def test_an_import_leaves_the_exports_api_keys_out_unless_the_operator_asks(
    fresh_scoreboard_server: ScoreboardServer, tmp_path: Path
) -> None:
    server = fresh_scoreboard_server
    small_board(server, 1)
    dest = tmp_path / "export"
    server.palaestra("server", "export", str(dest), "--include-keys")
    assert (dest / "records" / "api_keys.jsonl").exists(), "the export holds them"

    plain = palaestra(board_env(server.env, tmp_path / "plain"), "server", "import", str(dest))
    assert plain.returncode == 0, plain.stderr
    assert "left out its api_keys (import with --include-keys" in plain.stdout
    assert _api_keys(tmp_path / "plain") == 0

    asked = palaestra(board_env(server.env, tmp_path / "asked"), "server", "import", str(dest), "--include-keys")
    assert asked.returncode == 0, asked.stderr
    assert _api_keys(tmp_path / "asked") == 1


def test_an_export_folder_with_a_symbolic_link_is_refused_by_import_and_verify_naming_it(
    fresh_scoreboard_server: ScoreboardServer, tmp_path: Path
) -> None:
    server = fresh_scoreboard_server
    small_board(server, 1)
    dest = tmp_path / "export"
    server.palaestra("server", "export", str(dest))
    outside = tmp_path / "outside.jsonl"
    outside.write_bytes((dest / "records" / "users.jsonl").read_bytes())  # the same bytes: the hashes match
    (dest / "records" / "users.jsonl").unlink()
    os.symlink(outside, dest / "records" / "users.jsonl")
    target = tmp_path / "target"
    for action in ("import", "verify"):
        refused = palaestra(board_env(server.env, target), "server", action, str(dest))
        assert refused.returncode == 1, refused.stdout + refused.stderr
        named = f"{dest / 'records' / 'users.jsonl'} is a symbolic link (to {outside})"
        assert named in refused.stderr + refused.stdout
    assert not (target / "scoreboard.sqlite3").exists() and not (target / "blobs").exists(), "nothing written"


def test_a_re_export_hashes_again_what_it_keeps_and_mends_an_edited_folder(
    fresh_scoreboard_server: ScoreboardServer, tmp_path: Path
) -> None:
    server = fresh_scoreboard_server
    small_board(server, 2)
    dest = tmp_path / "export"
    server.palaestra("server", "export", str(dest))
    records = dest / "records" / "evaluations.jsonl"
    records.write_text(records.read_text().replace('"mean": ', '"mean": 1'))  # a forged mean, same name
    blob = sorted(p for p in (dest / "blobs").rglob("*") if p.is_file())[0]
    blob.write_bytes(blob.read_bytes() + b"forged")
    assert server.palaestra("server", "verify", str(dest), check=False).returncode == 1

    again = server.palaestra("server", "export", str(dest)).stdout
    assert "2 files written" in again, again  # the records file and the blob, and nothing else
    assert server.palaestra("server", "verify", str(dest)).returncode == 0


def _as_version_1(data_dir: Path) -> None:
    """Rewrite the board's log as palaestra wrote it before version 2: each entry hashes the version-1
    document of its record, with no version and no field digests (what a running board holds)."""
    engine = sa.create_engine(f"sqlite:///{data_dir / 'scoreboard.sqlite3'}")
    log: Any = ScoreLogEntry.__table__
    evaluations: Any = Evaluation.__table__
    with engine.begin() as conn:
        previous = scorelog.GENESIS
        for entry in conn.execute(sa.select(log).order_by(log.c.seq)).all():
            row = conn.execute(sa.select(evaluations).where(evaluations.c.id == entry.record_id)).one()
            document = scorelog.record_document("evaluation", row._mapping)
            record_sha256 = scorelog.sha256_hex(scorelog.canonical_json(document))
            digest = scorelog.entry_hash(entry.seq, "evaluation", entry.record_id, record_sha256, entry.blobs,
                                         previous, entry.created)  # fmt: skip
            values = {"version": 1, "fields": None, "record_sha256": record_sha256, "previous_sha256": previous,
                      "entry_sha256": digest}  # fmt: skip
            conn.execute(sa.update(log).where(log.c.seq == entry.seq).values(**values))
            previous = digest
    engine.dispose()


def test_a_log_of_version_1_entries_still_verifies_and_goes_on_in_the_current_version(
    fresh_scoreboard_server: ScoreboardServer,
) -> None:
    server = fresh_scoreboard_server
    small_board(server, 2)
    server.stop()
    _as_version_1(server.data_dir)
    server.start()
    assert "Verified 2 log entries" in server.palaestra("server", "verify").stdout
    with server.client() as c:
        upload_evaluation(c, batch=make_batch(9))
        entries = c.get("/v1/log").json()["data"]
    assert [e["version"] for e in entries] == [1, 1, CURRENT_VERSION]
    for where in ((), (server.url,)):
        assert "Verified 3 log entries" in server.palaestra("server", "verify", *where).stdout
