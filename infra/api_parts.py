"""What an API process serves with, as the composition root (`infra.compose.api_parts`) builds
it; `api.services.Services` adds the per-process caches."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

from core.intake import Intake
from core.log_signing import LogSigner
from core.ports import (
    ApiStore,
    BlobStore,
    ClicsReads,
    QueueProbe,
    RejudgeRuns,
    SubmissionStore,
    TeamNews,
    TransparencyLogs,
)
from core.reports import Reports
from infra.queues import queue_depths
from infra.ratelimit import Limiter
from infra.replication import ReplicationReads
from infra.settings import Settings
from infra.sql.dashboard import DashboardReads

if TYPE_CHECKING:
    from celery import Celery


@dataclass
class ApiParts:
    """What an API process serves with; `api.services.Services` adds the per-process caches."""

    settings: Settings
    store: ApiStore
    rejudges: RejudgeRuns
    dashboard: DashboardReads
    blobs: BlobStore
    intake: Intake
    limiter: Limiter  # uploads per team
    report_reads: Limiter  # per caller
    login_failures: Limiter  # failed sign-ins per client address
    admin_token: str
    reports: Reports  # stored, or made when first read (`core.reports`)
    submissions: SubmissionStore  # the sweeper's
    logs: TransparencyLogs  # the sequencer's
    backlog: QueueProbe = field(default=lambda: None)
    # Asks the broker to forget its copies of a deleted team's uploads (by submission id).
    forget_copies: Callable[[Sequence[str]], None] = field(default=lambda _: None)
    # Signs the contests' transparency logs (None: a process that serves them unsigned).
    log_signer: LogSigner | None = None
    # The Contest API's reads (None: a process that does not serve it).
    clics: ClicsReads | None = None
    # Which database and Redis node is primary, for the dashboard, /metrics and /readyz.
    replication: ReplicationReads | None = None
    # The Celery app the dashboard hears the workers' heartbeats through (None: no Redis).
    worker_events: Celery | None = None
    # News of team tokens to every API process (None: no Redis, so this process alone).
    team_news: TeamNews | None = None
    # The broker's queue depths for the dashboard (`infra.queues.queue_depths`).
    queue_depths: Callable[[], dict[str, Any]] = field(default=partial(queue_depths, None))
    # Closes the clients built for these parts that hold connections (Redis's).
    close_clients: Callable[[], None] = field(default=lambda: None)
