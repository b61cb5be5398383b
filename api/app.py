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
from api.openapi import document_errors
from api.routes import router
from api.rulesets_routes import router as rulesets_router
from api.services import Services
from infra import compose
from infra.logging import configure_logging
from infra.settings import Settings

PRIVACY = Path(__file__).resolve().parents[1] / "docs" / "privacy.md"


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
        yield
        if thread is not None:
            thread.stop()
        if services is None:
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
