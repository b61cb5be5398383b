"""A pooled PostgreSQL connection is pinged before use only when it has been idle a while."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError

from infra.sql import engine as engines
from tests.integration.conftest import POSTGRES_ONLY, POSTGRES_URL


@pytest.fixture
def pinged(sql_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Engine, list[Any]]]:
    """An engine with one pooled connection, and the connections it pinged."""
    engine = engines.make_engine(sql_url)
    pings: list[Any] = []
    real = engine.dialect.do_ping

    def counted(dbapi_connection: Any) -> bool:
        pings.append(dbapi_connection)
        return real(dbapi_connection)

    monkeypatch.setattr(engine.dialect, "do_ping", counted)
    yield engine, pings
    engine.dispose()


def backend(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(text("SELECT pg_backend_pid()")).scalar_one())


def terminate(pid: int) -> None:
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        conn.execute("SELECT pg_terminate_backend(%s)", [pid])


@POSTGRES_ONLY
def test_a_connection_used_just_now_is_handed_out_again_without_a_ping(
    pinged: tuple[Engine, list[Any]],
) -> None:
    engine, pings = pinged
    first = backend(engine)  # a new connection: no ping

    assert [backend(engine) for _ in range(3)] == [first] * 3
    assert pings == []


@POSTGRES_ONLY
def test_a_connection_idle_longer_is_pinged_and_replaced_when_its_server_end_is_gone(
    pinged: tuple[Engine, list[Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    engine, pings = pinged
    first = backend(engine)
    terminate(first)
    monkeypatch.setattr(engines, "FRESH_S", 0.0)  # every connection has been idle long enough

    second = backend(engine)

    assert len(pings) == 2  # the dead one, then its replacement
    assert second != first


@POSTGRES_ONLY
def test_a_connection_that_died_just_after_use_fails_one_statement_and_the_pool_starts_over(
    pinged: tuple[Engine, list[Any]],
) -> None:
    engine, pings = pinged
    terminate(backend(engine))

    with pytest.raises(DBAPIError) as failed:
        backend(engine)

    assert failed.value.connection_invalidated  # SQLAlchemy saw a disconnect
    assert backend(engine) > 0
    assert pings == []
