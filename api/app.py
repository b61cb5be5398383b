"""The FastAPI application factory (`uvicorn api.app:create_app --factory`)."""

from __future__ import annotations

import html
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import HTMLResponse

from api import errors
from api.dashboard import router as dashboard_router
from api.intake import GroupCommit, Intake
from api.openapi import document_errors
from api.ratelimit import RateLimiter
from api.routes import router
from api.rulesets_routes import router as rulesets_router
from api.services import Services
from api.stats import live_backlog
from infra.bootstrap import make_blobs, make_celery, make_redis, make_store
from infra.logging import configure_logging
from infra.publisher import CeleryPublisher
from infra.settings import Settings
from infra.sweeper import SweeperThread

PRIVACY = Path(__file__).resolve().parents[1] / "docs" / "privacy.md"


def build_services(settings: Settings) -> Services:
    store = make_store(settings)
    blobs = make_blobs(settings, read_timeout=5.0)
    publisher = CeleryPublisher(make_celery(settings, publisher_only=True))
    client = make_redis(settings)
    return Services(
        settings=settings,
        store=store,
        blobs=blobs,
        redis=client,
        intake=Intake(
            store,
            blobs,
            publisher,
            settings.receipt_key_value(),
            # Uploads go to the broker a few to a message: spread over at least as many
            # messages as a worker machine has judging processes, or, behind a backlog,
            # GROUP_MOST to a message.
            commits=GroupCommit(
                store,
                publisher=publisher,
                spread=settings.workers,
                backlog=lambda: live_backlog(client),
            ),
        ),
        limiter=RateLimiter(client, settings.rate_limit_per_minute),
        admin_token=settings.admin_token_value(),
    )


def create_app(services: Services | None = None, sweeper: bool = True) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        configure_logging()
        svc = services or build_services(Settings.from_env())
        app.state.services = svc
        thread = None
        if sweeper and services is None:
            limit = svc.settings.task_time_limit
            thread = SweeperThread(
                svc.store,
                svc.intake.publisher,
                interval=5.0,
                stored_for=10.0,
                queued_for=svc.settings.requeue_after,
                judging_for=limit + 5,
                backlog=lambda: live_backlog(svc.redis),
            )
            thread.start()
        yield
        if thread is not None:
            thread.stop()
        if services is None and svc.intake.commits is not None:
            svc.intake.commits.close()

    app = FastAPI(
        title="tilejudge",
        version="0.1.0",
        description="Intake, results and leaderboard of Wordytaire contests. "
        "Admin calls take `Authorization: Bearer <admin token>`, team calls the team's token.",
        lifespan=lifespan,
    )
    errors.install(app)
    document_errors(app)
    app.include_router(router)
    app.include_router(dashboard_router)
    app.include_router(rulesets_router)

    @app.get("/privacy", response_class=HTMLResponse, tags=["public"])
    def privacy() -> str:
        """What tilejudge stores about teams and results, who reads it, how it is deleted."""
        text = PRIVACY.read_text() if PRIVACY.is_file() else "docs/privacy.md is missing"
        return f"<!doctype html><meta charset=utf-8><title>Privacy</title><pre>{html.escape(text)}</pre>"

    return app
