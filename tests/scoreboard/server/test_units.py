"""In-process checks of the scoreboard's parts: wire schemas, migrations, config, storage, `palaestra users`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sqlalchemy as sa

from palaestra.cli import main
from palaestra.errors import ConfigurationError
from palaestra.scoreboard import protocol
from palaestra.scoreboard.server.core import migrate
from palaestra.scoreboard.server.core.config import resolve_config
from palaestra.scoreboard.server.core.storage import FileStore, S3Store, check_key, open_store
from palaestra.scoreboard.server.tables.base import Base


def test_episode_batch_validation_names_the_field() -> None:
    good = {"episode_lengths": [1, 2], "episode_rewards": [0.5, 1.0], "timestamps": [1.0, 2.0]}
    batch = protocol.parse_episode_batch(json.dumps(good))
    assert batch.enriched("X")["episode_types"] == ["t", "t"] and batch.first_reset_timestamp == 1.0
    cases = {
        "episode_rewards": {**good, "episode_rewards": [1.0]},
        "episode_types": {**good, "episode_types": ["t", "train"]},
        "timestamps": {**good, "timestamps": [1.0, float("inf")]},
        "data_sources": {**good, "data_sources": [0, 1], "initial_reset_timestamps": [0.0]},
        "env_index": {**good, "env_index": [0, 1, 2]},
    }
    for field, doc in cases.items():
        with pytest.raises(protocol.EpisodeBatchError) as info:
            protocol.parse_episode_batch(json.dumps(doc))
        assert info.value.field == field, (field, str(info.value))
    with pytest.raises(protocol.EpisodeBatchError, match="limit"):
        protocol.parse_episode_batch(json.dumps(good), max_bytes=10)
    with pytest.raises(protocol.EpisodeBatchError, match="not valid JSON"):
        protocol.parse_episode_batch(b"{")


def test_an_episode_batch_carries_each_episodes_sub_environment_when_the_client_sends_it() -> None:
    old_client = {"episode_lengths": [1, 2], "episode_rewards": [0.5, 1.0], "timestamps": [1.0, 2.0]}
    assert "env_index" not in protocol.parse_episode_batch(json.dumps(old_client)).enriched("X")
    vector_run = {**old_client, "env_index": [3, 0]}
    assert protocol.parse_episode_batch(json.dumps(vector_run)).enriched("X")["env_index"] == [3, 0]
    with pytest.raises(protocol.EpisodeBatchError, match="env_index has 1 entries but episode_lengths has 2"):
        protocol.parse_episode_batch(json.dumps({**old_client, "env_index": [0]}))
    with pytest.raises(protocol.EpisodeBatchError, match="env_index"):
        protocol.parse_episode_batch(json.dumps({**old_client, "env_index": [0, -1]}))


def test_wire_models_match_the_2017_shapes() -> None:
    run = protocol.BenchmarkRunCreate.model_validate({"benchmark_id": "B", "tags": '{"a": 1}'})
    assert run.tags == {"a": 1}
    with pytest.raises(ValueError, match="content_type"):
        protocol.FileCreate(purpose="episode_batch", content_type=protocol.VIDEO_ARCHIVE_CONTENT_TYPE)
    ev = protocol.EvaluationCreate.model_validate({"env": "CartPole-v0", "algorithm": {}})
    assert ev.algorithm is not None and ev.algorithm.id is None
    with pytest.raises(ValueError, match="appears twice"):
        protocol.VideoArchiveManifest.model_validate(
            {"videos": [["a.json", "a.meta.json"], ["a.json", "b.meta.json"]]}
        )
    assert protocol.MAX_VIDEOS == 100


def test_migrations_match_the_models(tmp_path: Path) -> None:
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    assert migrate.head_revision() == migrate.SCHEMA_HEAD
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'db.sqlite3'}")
    migrate.upgrade(engine)
    migrate.upgrade(engine)  # a second start is a no-op
    assert migrate.current_revision(engine) == migrate.SCHEMA_HEAD
    # Alembic cannot compare indexes with ordered (DESC) columns; those are checked by name below.
    ordered = {ix.name for t in Base.metadata.tables.values() for ix in t.indexes
               if any(isinstance(e, sa.TextClause) for e in ix.expressions)}

    def include_object(obj: object, name: str | None, type_: str, reflected: bool, compare_to: object) -> bool:
        return not (type_ == "index" and name in ordered)

    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True, "include_object": include_object})
        diff = compare_metadata(context, Base.metadata)
        existing = {ix["name"] for ix in sa.inspect(conn).get_indexes("evaluations")}
    assert diff == []
    assert ordered and ordered <= existing
    engine.dispose()


def test_config_precedence(tmp_path: Path) -> None:
    env = {"PALAESTRA_DATA_DIR": str(tmp_path), "PALAESTRA_UPLOAD_TTL_S": "5"}
    cfg = resolve_config(environ=env)
    assert cfg.database_url == f"sqlite:///{tmp_path / 'scoreboard.sqlite3'}"
    assert cfg.storage_url == str(tmp_path / "blobs") and cfg.upload_ttl_s == 5 and cfg.public_url is None
    cfg = resolve_config(
        database_url="postgresql://u@h/db", environ={**env, "PALAESTRA_PUBLIC_URL": "https://x/"}
    )
    assert cfg.database_url == "postgresql+psycopg://u@h/db" and cfg.public_url == "https://x"
    with pytest.raises(ConfigurationError, match="Unsupported database URL"):
        resolve_config(database_url="mysql://x", environ=env)
    with pytest.raises(ConfigurationError, match="whole number"):
        resolve_config(environ={**env, "PALAESTRA_UPLOAD_TTL_S": "soon"})


def test_storage_urls_and_keys(tmp_path: Path) -> None:
    assert isinstance(open_store(str(tmp_path)), FileStore)
    store = open_store(tmp_path.as_uri())
    assert isinstance(store, FileStore) and store.root == tmp_path
    store.check()
    store.put_bytes("a/b.json", b"{}")
    assert store.get_bytes("a/b.json") == b"{}" and store.size("a/b.json") == 2 and store.size("nope") is None
    for bad in ("../x", "/abs", "a//b", "a/./b", "a\\b", ""):
        with pytest.raises(ValueError):
            check_key(bad)
    s3 = open_store("s3://bucket/some/prefix", "http://127.0.0.1:9")
    assert isinstance(s3, S3Store) and s3.bucket == "bucket" and s3.prefix == "some/prefix"
    with pytest.raises(ConfigurationError):
        open_store("ftp://host/x")


def test_users_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    flags = ["--data-dir", str(tmp_path)]
    assert main(["users", *flags, "create", "alice"]) == 0
    key = capsys.readouterr().out.strip().splitlines()[-1]
    assert key.startswith("pal_") and len(key) > 40
    assert main(["users", "create", "bob", *flags]) == 0  # flags after the action work too
    capsys.readouterr()
    assert main(["users", *flags, "list"]) == 0
    listed = capsys.readouterr().out
    assert "alice" in listed and "bob" in listed and key not in listed and "active" in listed
    assert main(["users", *flags, "revoke", key]) == 0
    assert "Revoked key_" in capsys.readouterr().out
    assert main(["users", *flags, "revoke", "alice"]) == 1  # nothing active left
    assert "No active API key" in capsys.readouterr().err
    assert main(["users", *flags, "create", "two words"]) == 1
    assert main(["server", "migrate", *flags]) == 0


def test_sqlite_writers_of_two_databases_queue_on_the_lock_file(tmp_path: Path) -> None:
    """Two Database objects on one file stand for two server processes: every write lands."""
    from concurrent.futures import ThreadPoolExecutor

    from palaestra.scoreboard.server.core.database import Database
    from palaestra.scoreboard.server.core.state import migrate_database
    from palaestra.scoreboard.server.tables.service import ServerSetting

    config = resolve_config(environ={"PALAESTRA_DATA_DIR": str(tmp_path)})
    migrate_database(config)
    first, second = Database(config.database_url), Database(config.database_url)
    insert = sa.insert(ServerSetting)

    def write(i: int) -> int:
        db = first if i % 2 else second
        if i % 3:
            return db.write_one(insert, {"key": f"k{i}", "value": "v"})
        with db.write() as session:  # a multi-statement transaction
            session.connection().execute(insert, {"key": f"k{i}", "value": "v"})
            session.connection().execute(sa.update(ServerSetting).where(ServerSetting.key == f"k{i}").values(value="w"))
        return 1

    try:
        with ThreadPoolExecutor(8) as pool:
            assert sum(pool.map(write, range(120))) == 120
        with first.read() as session:
            assert session.scalar(sa.select(sa.func.count()).select_from(ServerSetting).where(ServerSetting.key.like("k%"))) == 120
            assert session.scalar(sa.select(ServerSetting.value).where(ServerSetting.key == "k3")) == "w"
        assert Path(f"{sa.make_url(config.database_url).database}-writer.lock").exists()
    finally:
        first.dispose()
        second.dispose()


def test_handlers_run_inline_only_with_a_local_database(tmp_path: Path) -> None:
    """Handlers run on the event loop when nothing they wait on is across the network."""
    env = {"PALAESTRA_DATA_DIR": str(tmp_path)}
    local = [
        None,  # SQLite
        "postgresql://u@127.0.0.1:5432/db",
        "postgresql://u@localhost/db",
        "postgresql://u@[::1]:5432/db",
        "postgresql:///db?host=/var/run/postgresql",  # a Unix socket
    ]
    for url in local:
        assert resolve_config(database_url=url, environ=env).database_is_local, url
    remote = resolve_config(database_url="postgresql://u@db.internal:5432/db", environ=env)
    assert not remote.database_is_local and remote.inline_handlers is None
    assert not resolve_config(database_url="postgresql:///db?host=db.internal", environ=env).database_is_local
    forced = {**env, "PALAESTRA_INLINE_HANDLERS": "1"}
    assert resolve_config(database_url="postgresql://u@db.internal/db", environ=forced).inline_handlers is True
    assert resolve_config(environ={**env, "PALAESTRA_INLINE_HANDLERS": "0"}).inline_handlers is False
    assert resolve_config(environ={**env, "PALAESTRA_INLINE_HANDLERS": "auto"}).inline_handlers is None
    with pytest.raises(ConfigurationError, match="PALAESTRA_INLINE_HANDLERS must be 1, 0 or auto"):
        resolve_config(environ={**env, "PALAESTRA_INLINE_HANDLERS": "yes"})


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_statements_run_at_commit(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """The env aggregates, updated with the COMMIT, count every concurrent evaluation once; a
    failure at the commit leaves nothing of its transaction behind."""
    from concurrent.futures import ThreadPoolExecutor
    from datetime import datetime, timezone

    from palaestra.scoreboard.server.core.database import Database, execute_at_commit
    from palaestra.scoreboard.server.core.state import migrate_database
    from palaestra.scoreboard.server.tables.scores import EnvStats, upsert_env_stats
    from palaestra.scoreboard.server.tables.service import ServerSetting

    url = request.getfixturevalue("postgres_url") if backend == "postgres" else None
    config = resolve_config(database_url=url, environ={"PALAESTRA_DATA_DIR": str(tmp_path)})
    migrate_database(config)
    db = Database(config.database_url)
    now = datetime.now(timezone.utc)

    def evaluate(i: int) -> None:
        with db.write() as session:
            session.connection().execute(sa.insert(ServerSetting), {"key": f"ev{i}", "value": "v"})
            upsert_env_stats(session, "CartPole-v1", "classic_control", True, float(i), i % 4 == 0, f"ev{i}", now)

    try:
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(evaluate, range(100)))
        with db.read() as session:
            stats = session.get(EnvStats, "CartPole-v1")
            assert stats is not None
            assert (stats.evaluation_count, stats.solved_count) == (100, 25)
            assert (stats.best_mean, stats.best_evaluation_id) == (99.0, "ev99")

        with pytest.raises(sa.exc.IntegrityError), db.write() as session:
            session.connection().execute(sa.insert(ServerSetting), {"key": "lost", "value": "v"})
            execute_at_commit(session, sa.insert(ServerSetting), {"key": "ev1", "value": "duplicate"})
        with db.read() as session:
            assert session.get(ServerSetting, "lost") is None
            assert session.get(ServerSetting, "ev1").value == "v"  # type: ignore[union-attr]
        evaluate(100)  # the connection went back to the pool in working order
        with db.read() as session:
            assert session.get(EnvStats, "CartPole-v1").evaluation_count == 101  # type: ignore[union-attr]
    finally:
        db.dispose()
