"""A client that vanishes inside a transaction holds the event log's lock, which every writer of
every host takes: the server ends its session after the idle limit, and the writers go on."""

from __future__ import annotations

import time

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from infra.sql import engine as engines
from tests.integration.conftest import POSTGRES_ONLY

LIMIT_S = engines.IDLE_IN_TRANSACTION_MS / 1000
WITHIN_S = 8.0


@POSTGRES_ONLY
def test_a_session_stopped_inside_a_transaction_lets_the_other_writers_through_within_seconds(
    sql_url: str,
) -> None:
    vanished = engines.make_engine(sql_url)
    writer = engines.make_engine(sql_url)
    lock = {"kind": engines.EVENT_LOCK}
    try:
        stopped = vanished.connect()
        stopped.begin()
        stopped.execute(text(engines.SCHEMA_LOCK), lock)  # then nothing: its host went away
        began = time.monotonic()
        with writer.begin() as conn:
            conn.execute(text("SET LOCAL lock_timeout = '60s'"))
            conn.execute(text(engines.SCHEMA_LOCK), lock)
        waited = time.monotonic() - began

        # The server's limit ended it, and soon enough that a vanished worker host stalls the
        # other writers for less than a claim's handover takes (the cluster suite's 14 s).
        assert LIMIT_S - 1 <= waited <= WITHIN_S, waited
        with pytest.raises(DBAPIError, match=r"idle-in-transaction"):
            stopped.execute(text("SELECT 1"))
        stopped.invalidate()
    finally:
        vanished.dispose()
        writer.dispose()
