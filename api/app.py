"""The FastAPI application factory (`uvicorn api.app:create_app --factory`)."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from api import errors
from api.middleware import RequestLimits
from api.openapi import document_errors
from api.routes import (
    contests,
    dashboard,
    disputes,
    docs,
    health,
    privacy,
    public_pages,
    rejudges,
    rulesets,
    standings,
    submissions,
    team_results,
    transparency,
)
from api.routes.clics import clics_app
from api.routes.games import game_routers
from api.services import Services
from api.team_pages.routes import router as team_page_router
from infra import compose
from infra.logging import configure_logging
from infra.settings import Settings

# Long enough for a sweep pass to end and the sweeper lock to be let go, so another process
# takes over at once instead of after the lock's expiry.
SWEEPER_STOP_S = 5.0
ROUTERS = (
    rulesets.router,
    contests.router,
    submissions.router,
    standings.router,
    rejudges.router,
    disputes.router,
    health.router,
    dashboard.router,
    privacy.router,
    docs.router,
    transparency.router,
    team_results.router,
    public_pages.router,
    team_page_router,
)


def settle_heap() -> None:
    """Take what the process built to serve (its modules, the services, their clients, about
    180,000 objects) out of the cyclic collector's sight: a full collection then walks only
    what serving made since, about 20 ms instead of 100 with the GIL held, which every request
    in the process waits out. Only in a process that serves (not in a test's, where it would
    keep every earlier test's garbage for good)."""
    gc.collect()
    gc.freeze()


def build_services(settings: Settings) -> Services:
    return Services(**vars(compose.api_parts(settings)))


def create_app(services: Services | None = None, sweeper: bool = True) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        configure_logging()
        svc = services or build_services(Settings.from_env())
        app.state.services = svc
        thread = compose.sweeper(svc) if sweeper and services is None else None
        if thread is not None:
            thread.start()
        sequencer = compose.log_sequencer(svc) if services is None else None
        if sequencer is not None:
            sequencer.start()
        if services is None:
            settle_heap()
        svc.token_news.start()
        yield
        svc.token_news.stop()
        if sequencer is not None:
            sequencer.stop()
        if thread is not None:
            thread.stop()
            await asyncio.to_thread(thread.join, SWEEPER_STOP_S)
        if services is None:
            svc.intake.commits.close()

    app = FastAPI(
        title="tilejudge",
        version="0.1.0",
        description="Intake, results and standings of word-tile contests. "
        "Admin calls take `Authorization: Bearer <admin token>`, team calls the team's token.",
        lifespan=lifespan,
        # Served by api.routes.docs from packaged files instead of FastAPI's CDN-loaded pages.
        docs_url=None,
        redoc_url=None,
    )
    routers = (*ROUTERS, rulesets.rules_router(), *game_routers())
    app.add_middleware(RequestLimits, routes=[r for router in routers for r in router.routes])
    errors.install(app)
    document_errors(app)
    for router in routers:
        app.include_router(router)
    app.mount("/clics", clics_app(app))  # the CLICS Contest API, errors in its own shape
    return app
