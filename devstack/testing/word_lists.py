"""The real word lists, from the cache `make lexicon` fills (`tilejudge lexicon fetch`)."""

from __future__ import annotations

from pathlib import Path

from infra.settings import ClientSettings

# The cache as the project's own commands find it ($TILEJUDGE_LEXICON_CACHE, else the user's).
LISTS = ClientSettings.from_env().lexicon_cache


def cached_list(name: str) -> Path:
    """A known word list from the cache; a missing one says how to fetch it."""
    path = LISTS / name
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} is missing: run `make lexicon` (tilejudge lexicon fetch) first"
        )
    return path
