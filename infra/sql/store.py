"""The results store as one object: `SqlStore`, the adapter of the union port
`core.ports.ApiStore`, which the API's routes and the suites use. Every state change and its
event are written in one transaction.

It is the per-port classes together, over one `Database` (`infra.sql.base`, with the
transparency log's hook: `infra.sql.database`): submissions (`infra.sql.submission_store`),
contests (`infra.sql.contests`), teams (`infra.sql.teams`), word lists and rules data
(`infra.sql.rulesets`), results as shown (`infra.sql.result_reads`), the transparency logs
(`infra.sql.transparency`), dashboard sessions (`infra.sql.sessions`) and disputes
(`infra.sql.disputes`). A consumer of one port is handed that port's class over the same
database instead (`infra.compose`). What a game keeps beyond the result row every game has is
its own (`infra.sql.games`).
"""

from __future__ import annotations

from sqlalchemy.engine import Engine

from infra.sql.contests import SqlContests
from infra.sql.database import open_database
from infra.sql.disputes import SqlDisputes
from infra.sql.engine import make_engine
from infra.sql.result_reads import SqlResultReads
from infra.sql.rulesets import SqlRulesets
from infra.sql.sessions import SqlSessions
from infra.sql.submission_store import SqlSubmissions
from infra.sql.teams import SqlTeams
from infra.sql.transparency import SqlTransparencyLogs


class SqlStore(
    SqlSubmissions,
    SqlContests,
    SqlTeams,
    SqlRulesets,
    SqlResultReads,
    SqlTransparencyLogs,
    SqlSessions,
    SqlDisputes,
):
    """`core.ports.ApiStore` in SQL: the per-port classes, inherited whole, over the one
    `Database` it opens on the engine (`database`, which the per-port classes a process
    builds beside it share); of its own only `ping`."""

    def __init__(self, engine: Engine) -> None:
        super().__init__(open_database(engine))

    @classmethod
    def from_url(cls, url: str) -> SqlStore:
        return cls(make_engine(url))

    def ping(self) -> None:
        self.database.ping()
