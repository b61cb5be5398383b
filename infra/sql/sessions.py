"""Dashboard sessions signed out before they expire, shared by every API process."""

from __future__ import annotations

from sqlalchemy import delete, insert, select

from core import clock
from core.errors import Duplicate
from infra.sql.base import StoreBase
from infra.sql.schema import revoked_sessions


class SqlSessions(StoreBase):
    """`core.ports.SessionStore` in SQL."""

    def revoke_session(self, session_id: str, expires_at: str) -> None:
        """Refuse this session from now on; revocations of sessions that have expired anyway
        are dropped on the way, so the table holds at most a day's sign-outs."""
        try:
            with self.write() as (conn, _):
                conn.execute(
                    delete(revoked_sessions).where(revoked_sessions.c.expires_at < clock.now())
                )
                conn.execute(insert(revoked_sessions).values(id=session_id, expires_at=expires_at))
        except Duplicate:
            pass  # signed out twice: revoked already

    def session_revoked(self, session_id: str) -> bool:
        with self.read() as conn:
            found = conn.execute(
                select(revoked_sessions.c.id).where(revoked_sessions.c.id == session_id)
            ).first()
            return found is not None
