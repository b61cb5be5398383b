"""Where word lists come from on disk: an explicit path, $TILEJUDGE_LEXICON (the Wordytaire
list only), or the cache.

The cache is filled by `make lexicon` (`tilejudge lexicon fetch`). Each known list is taken from
the first place that has it: the cache itself, the folder $TILEJUDGE_LEXICON_SOURCE names (for
machines without internet), ../shared/lexicons beside the project (development and CI), or
upstream (infra/lexicon_sources.py: a pinned download or a recipe over pinned sources). Whatever
the origin, its sha256 is checked before it enters the cache.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from infra import lexicon_sources
from infra.lexicon_sources import (
    BEFORE_FIX,
    CROSSTILES_LIST,
    ENABLE_LIST,
    JUDGE_LIST,
    KNOWN_LISTS,
    Download,
    KnownList,
    SourceUnavailable,
)
from infra.settings import ClientSettings
from judge import Lexicon

__all__ = [
    "BEFORE_FIX",
    "CROSSTILES_LIST",
    "ENABLE_LIST",
    "JUDGE_LIST",
    "KNOWN_LISTS",
    "KnownList",
    "LexiconNotFound",
    "fetch",
    "load",
    "resolve",
]

PROJECT_ROOT = Path(__file__).resolve().parents[1]
SOURCE_VARIABLE = "TILEJUDGE_LEXICON_SOURCE"


class LexiconNotFound(RuntimeError):
    """No word list where one was asked for or expected."""


@dataclass(frozen=True)
class Fetched:
    known: KnownList
    path: Path
    origin: str  # "cache", the folder it was copied from, or "upstream"


@dataclass(frozen=True)
class Missing:
    known: KnownList
    tried: tuple[str, ...]  # each place tried and why it did not serve, in a few words

    def sentence(self) -> str:
        """One sentence: which list, where it was looked for, and how to supply it."""
        return (
            f"{self.known.file} could not be had: {'; '.join(self.tried)}. Put a copy of it in "
            f"a folder and set {SOURCE_VARIABLE} to that folder (docs/lexicons.md gives its "
            f"source and sha256), then run `make lexicon` again."
        )


def beside_project() -> Path | None:
    """../shared/lexicons beside the project, where development and CI keep the lists."""
    candidate = PROJECT_ROOT.parent / "shared" / "lexicons"
    return candidate if candidate.is_dir() else None


def resolve(path: str | None, settings: ClientSettings, known: KnownList = JUDGE_LIST) -> Path:
    """The word list to judge with: --lexicon, else (for the Wordytaire judge's list only)
    $TILEJUDGE_LEXICON, else the cache's copy of `known`."""
    # $TILEJUDGE_LEXICON names a Wordytaire list: judging a Crosstiles log with it would
    # silently give other verdicts.
    from_environment = settings.lexicon if known is JUDGE_LIST else None
    if path:
        chosen = Path(path)
    elif from_environment is not None:
        chosen = from_environment
    else:
        chosen = settings.lexicon_cache / known.file
        if not chosen.is_file():
            or_environment = ", or set TILEJUDGE_LEXICON" if known is JUDGE_LIST else ""
            raise LexiconNotFound(
                f"no lexicon: {chosen} does not exist. Run `make lexicon` (`tilejudge lexicon "
                f"fetch`) to fill the cache, or pass --lexicon PATH{or_environment}."
            )
    if not chosen.is_file():
        raise LexiconNotFound(f"no lexicon at {chosen}")
    return chosen


def load(path: Path) -> Lexicon:
    return Lexicon.from_bytes(path.read_bytes())


def fetch(
    target: Path, source: Path | None = None, upstream: Download | None = None
) -> tuple[list[Fetched], list[Missing]]:
    """Fill the cache directory `target` with the known lists, each checked against its digest:
    the lists it now holds, and those no place could supply."""
    target.mkdir(parents=True, exist_ok=True)
    folders = [folder for folder in (source, beside_project()) if folder is not None]
    remembered = _Remembered(upstream or lexicon_sources.download)
    fetched: list[Fetched] = []
    missing: list[Missing] = []
    for known in KNOWN_LISTS:
        destination = target / known.file
        if destination.is_file() and _sha256(destination.read_bytes()) == known.sha256:
            fetched.append(Fetched(known, destination, "cache"))
            continue
        found = _first_source(known, folders, remembered)
        if isinstance(found, Missing):
            missing.append(found)
            continue
        data, origin = found
        partial = destination.with_suffix(".partial")
        partial.write_bytes(data)
        partial.replace(destination)
        fetched.append(Fetched(known, destination, origin))
    return fetched, missing


def _first_source(
    known: KnownList, folders: Sequence[Path], upstream: Download
) -> tuple[bytes, str] | Missing:
    tried: list[str] = []
    for folder in folders:
        path = folder / known.file
        if not path.is_file():
            tried.append(f"not in {folder}")
            continue
        data = path.read_bytes()
        if _sha256(data) == known.sha256:
            return data, str(folder)
        tried.append(f"{path} has sha256 {_sha256(data)[:16]}…, not the pinned one")
    try:
        data = known.build(upstream)
    except SourceUnavailable as exc:
        tried.append(str(exc))
        return Missing(known, tuple(tried))
    if _sha256(data) != known.sha256:
        tried.append(
            f"the list {known.origin} has sha256 {_sha256(data)[:16]}…, not the pinned one"
        )
        return Missing(known, tuple(tried))
    return data, "upstream"


class _Remembered:
    """Each upstream source downloaded once per fetch, and a failure not tried again."""

    def __init__(self, upstream: Download) -> None:
        self._upstream = upstream
        self._answers: dict[str, bytes | SourceUnavailable] = {}

    def __call__(self, url: str) -> bytes:
        if url not in self._answers:
            try:
                self._answers[url] = self._upstream(url)
            except SourceUnavailable as exc:
                self._answers[url] = exc
        answer = self._answers[url]
        if isinstance(answer, SourceUnavailable):
            raise answer
        return answer


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
