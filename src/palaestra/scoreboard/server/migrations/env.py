"""Alembic environment of the scoreboard (run programmatically by ``palaestra.scoreboard.server.core.migrate``).

The caller passes an open connection in ``config.attributes["connection"]``; with none (the
``alembic`` command line), ``sqlalchemy.url`` from the config is used.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import context

from palaestra.scoreboard.server.tables import (
    accounts as account_tables,
)
from palaestra.scoreboard.server.tables import (
    agents as agent_tables,
)
from palaestra.scoreboard.server.tables import (
    ladders as ladder_db,
)
from palaestra.scoreboard.server.tables import (
    live as live_tables,
)
from palaestra.scoreboard.server.tables import (
    scores as db,
)
from palaestra.scoreboard.server.tables import (
    service as service_tables,
)
from palaestra.scoreboard.server.tables.base import Base

#: every module that defines tables: importing them puts their tables in ``Base.metadata``
TABLE_MODULES = (account_tables, agent_tables, db, ladder_db, live_tables, service_tables)

config = context.config
target_metadata = Base.metadata


def _run(connection: sa.Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    engine = sa.create_engine(config.get_main_option("sqlalchemy.url") or "")
    with engine.connect() as conn:
        _run(conn)


if context.is_offline_mode():
    context.configure(
        url=config.get_main_option("sqlalchemy.url"), target_metadata=target_metadata, literal_binds=True
    )
    with context.begin_transaction():
        context.run_migrations()
else:
    run_migrations_online()
