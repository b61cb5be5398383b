"""Where word lists come from on disk: an explicit path, $TILEJUDGE_LEXICON (the Wordytaire
list only), or the cache.

The cache is filled by `make lexicon` (`tilejudge lexicon fetch`): copied from ../shared/lexicons
when the project sits beside it, otherwise downloaded from upstream at the pinned commit; either
way checked against the digest in the MANIFEST. The Crosstiles lists are built by a recipe (the
MANIFEST states it) and have no single download: only a copy beside the project fills them.
"""

from __future__ import annotations

import hashlib
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from infra.settings import ClientSettings
from judge import Lexicon

PROJECT_ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class KnownList:
    file: str
    url: str | None  # None: no single download (built by the MANIFEST's recipe)
    sha256: str  # of the file as stored: LF line endings, each line ending in "\n"


JUDGE_LIST = KnownList(
    "words_alpha.txt",
    "https://raw.githubusercontent.com/dwyl/english-words/"
    "8179fe68775df3f553ef19520db065228e65d1d3/words_alpha.txt",
    "643c7f71d5caee9806be56f5ed83ba36e2246a06a04bcf4aaa0576790bb90d66",
)
BEFORE_FIX = KnownList(
    "words_alpha_2020-08-24.txt",
    "https://raw.githubusercontent.com/dwyl/english-words/"
    "7cb484da5de560c11109c8f3925565966015e5a9/words_alpha.txt",
    "8f1f818cf4f153a24b39e7a566f588247784fb26848f7557d4e0e78ca8c79d28",
)
CROSSTILES_LIST = KnownList(
    "crosstiles.txt", None, "c4fd1daf9c16aa3084157afc2f04744dd5c8a112176409722663478e1764b618"
)
ENABLE_LIST = KnownList(  # the Crosstiles list before British spellings were added
    "enable_2-16.txt", None, "86f928e42c4b7b45b780811db2d98528c5a8a14549c8d9cb3edbbba3a59315e9"
)
KNOWN_LISTS = (JUDGE_LIST, BEFORE_FIX, CROSSTILES_LIST, ENABLE_LIST)


# Where a list with no download comes from.
_ONLY_BESIDE = " (this one is only copied from ../shared/lexicons beside the project)"


class LexiconNotFound(RuntimeError):
    """No word list where one was asked for or expected."""


def shared_lexicons() -> Path | None:
    for candidate in (
        PROJECT_ROOT.parent / "shared" / "lexicons",
        Path.cwd().parent / "shared" / "lexicons",
    ):
        if (candidate / JUDGE_LIST.file).is_file():
            return candidate
    return None


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
                f"no lexicon: {chosen} does not exist. Run `make lexicon` to fetch the judge's "
                f"word list{_ONLY_BESIDE if known.url is None else ''}, or pass --lexicon "
                f"PATH{or_environment}."
            )
    if not chosen.is_file():
        raise LexiconNotFound(f"no lexicon at {chosen}")
    return chosen


def load(path: Path) -> Lexicon:
    return Lexicon.from_bytes(path.read_bytes())


def fetch(target: Path) -> tuple[list[Path], list[KnownList]]:
    """Fill the cache directory `target` with the known lists, verifying each digest; return
    their paths, and the lists with no download that no copy beside the project supplied."""
    target.mkdir(parents=True, exist_ok=True)
    shared = shared_lexicons()
    done: list[Path] = []
    unavailable: list[KnownList] = []
    for known in KNOWN_LISTS:
        destination = target / known.file
        if destination.is_file() and _sha256(destination.read_bytes()) == known.sha256:
            done.append(destination)
            continue
        if shared is not None and (shared / known.file).is_file():
            data = (shared / known.file).read_bytes()
        elif known.url is None:
            unavailable.append(known)
            continue
        else:
            with urllib.request.urlopen(known.url, timeout=60) as response:
                data = _normalise(response.read())
        if _sha256(data) != known.sha256:
            raise RuntimeError(
                f"{known.file}: sha256 {_sha256(data)} is not the pinned {known.sha256}"
            )
        partial = destination.with_suffix(".partial")
        partial.write_bytes(data)
        partial.replace(destination)
        done.append(destination)
    return done, unavailable


def _normalise(data: bytes) -> bytes:
    """Upstream stores CRLF, the old list without a final line ending; the cache holds LF."""
    data = data.replace(b"\r\n", b"\n")
    return data if data.endswith(b"\n") else data + b"\n"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
