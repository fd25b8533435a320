"""Migration 0012_ladder_trust on a database that already holds ladder games, on SQLite and PostgreSQL:
each game gets its content's digest, a second copy of a game and a one-move resignation are marked
unrated, the names go to their first uploader (the anchors' to nobody), the ratings are derived again
from the rated games, and the downgrade gives 0011's schema back."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command

from palaestra.ladder.match import play_match, read_match, rules_of_env
from palaestra.ladder.players import parse_player
from palaestra.ladder.records import GameRecord, load_record, to_sgf
from palaestra.scoreboard.server.core import migrate

_USERS = "INSERT INTO users (name, created) VALUES ('first', '2024-01-01 00:00:00'), ('second', '2024-01-01 00:00:00')"
_MATCH = (
    "INSERT INTO ladder_matches (id, user_seq, ladder, game, board_size, komi, players, digest, created) "
    "VALUES (:id, :user, 'Go9x9-komi7.5', 'Go', 9, 7.5, '[]', :id, '2024-01-01 00:00:00')"
)
_GAME = (
    "INSERT INTO ladder_games (id, match_seq, ladder, number, file_name, black, white, winner, reason, result, "
    "score, moves, record) VALUES (:id, :match, 'Go9x9-komi7.5', 1, 'game-0001.sgf', :black, :white, :winner, "
    ":reason, '', NULL, '[]', :record)"
)
_RATING = (
    "INSERT INTO ladder_ratings (ladder, player, rating, low, high, games, points, anchored, is_anchor) "
    "VALUES ('Go9x9-komi7.5', :player, 9999, 0, 0, 1, 1, false, false)"
)


def _games(folder: Path) -> list[str]:
    play_match(rules_of_env("Go9x9-v0", komi=7.5), parse_player("old-a=random"), parse_player("random"), 2, folder)
    return [(folder / g["file"]).read_text() for g in read_match(folder)["games"]]


def _upgrade_and_downgrade(url: str, folder: Path) -> None:
    played = _games(folder)
    forged = to_sgf(GameRecord("Go", 9, "old-a", "random", ["E5"], "black", "resignation", komi=7.5))
    # (game id, match id, uploader, record): two real games, the first again by the second user, a forgery
    stored = [("g1", "m1", 1, played[0]), ("g2", "m1", 1, played[1]), ("g3", "m2", 2, played[0]), ("g4", "m2", 2, forged)]
    engine = sa.create_engine(url)
    try:
        migrate.upgrade(engine, "0011_nulls_last_indexes")
        with engine.begin() as conn:
            conn.execute(sa.text(_USERS))
            for match, user in (("m1", 1), ("m2", 2)):
                conn.execute(sa.text(_MATCH), {"id": match, "user": user})
            for game, match, _, text in stored:
                record = load_record("game-0001.sgf", text.encode())
                conn.execute(sa.text(_GAME), {
                    "id": game, "match": 1 if match == "m1" else 2, "black": record.black, "white": record.white,
                    "winner": record.winner, "reason": record.reason, "record": text,
                })  # fmt: skip
            conn.execute(sa.text(_RATING), {"player": "old-a"})
        migrate.upgrade(engine, "0012_ladder_trust")
        with engine.connect() as conn:
            games = {i: (d, u) for i, d, u in conn.execute(sa.text("SELECT id, digest, unrated FROM ladder_games"))}
            owners = dict(conn.execute(sa.text("SELECT name, user_seq FROM ladder_players")).all())
            ratings = {p: g for p, g in conn.execute(sa.text("SELECT player, games FROM ladder_ratings"))}
            operator = conn.execute(sa.text("SELECT operator FROM users WHERE name = 'first'")).scalar()
        assert games["g1"][1] is None and games["g2"][1] is None
        assert games["g3"][0] == games["g1"][0] and games["g3"][1].startswith("the same game")
        assert games["g4"][1].startswith("1 stones placed")
        assert owners == {"old-a": 1}  # 'random' is an anchor's name: nobody's
        assert ratings == {"old-a": 2, "random": 2}  # derived again from the two rated games
        assert not operator
        with engine.connect() as conn:
            cfg = migrate.alembic_config(url)
            cfg.attributes["connection"] = conn
            command.downgrade(cfg, "0011_nulls_last_indexes")
            conn.commit()
        with engine.connect() as conn:
            inspector = sa.inspect(conn)
            assert "digest" not in {c["name"] for c in inspector.get_columns("ladder_games")}
            assert "operator" not in {c["name"] for c in inspector.get_columns("users")}
            assert "ladder_players" not in inspector.get_table_names()
            assert conn.execute(sa.text("SELECT count(*) FROM ladder_games")).scalar() == 4
    finally:
        engine.dispose()


def test_0012_on_sqlite_marks_copies_and_short_games_and_rates_again(tmp_path: Path) -> None:
    _upgrade_and_downgrade(f"sqlite:///{tmp_path / 'old.sqlite3'}", tmp_path / "match")


@pytest.mark.postgres
def test_0012_on_postgresql_marks_copies_and_short_games_and_rates_again(postgres_url: str, tmp_path: Path) -> None:
    _upgrade_and_downgrade(postgres_url, tmp_path / "match")

