"""Where word lists come from on disk: an explicit path, $TILEJUDGE_LEXICON, or the cache.

The cache is filled by `make lexicon` (`tilejudge lexicon fetch`): copied from ../shared/lexicons
when the project sits beside it, otherwise downloaded from upstream at the pinned commit and
checked against the digest in the MANIFEST.
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
    url: str
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
KNOWN_LISTS = (JUDGE_LIST, BEFORE_FIX)


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


def resolve(path: str | None, settings: ClientSettings) -> Path:
    """The word list to judge with: --lexicon, else $TILEJUDGE_LEXICON, else the cache."""
    if path:
        chosen = Path(path)
    elif settings.lexicon is not None:
        chosen = settings.lexicon
    else:
        chosen = settings.lexicon_cache / JUDGE_LIST.file
        if not chosen.is_file():
            raise LexiconNotFound(
                f"no lexicon: {chosen} does not exist. Run `make lexicon` to fetch the judge's "
                "word list, or pass --lexicon PATH, or set TILEJUDGE_LEXICON."
            )
    if not chosen.is_file():
        raise LexiconNotFound(f"no lexicon at {chosen}")
    return chosen


def load(path: Path) -> Lexicon:
    return Lexicon.from_bytes(path.read_bytes())


def fetch(target: Path) -> list[Path]:
    """Fill the cache directory `target` with the known lists, verifying each digest; return
    their paths."""
    target.mkdir(parents=True, exist_ok=True)
    shared = shared_lexicons()
    done = []
    for known in KNOWN_LISTS:
        destination = target / known.file
        if destination.is_file() and _sha256(destination.read_bytes()) == known.sha256:
            done.append(destination)
            continue
        if shared is not None and (shared / known.file).is_file():
            data = (shared / known.file).read_bytes()
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
    return done


def _normalise(data: bytes) -> bytes:
    """Upstream stores CRLF, the old list without a final line ending; the cache holds LF."""
    data = data.replace(b"\r\n", b"\n")
    return data if data.endswith(b"\n") else data + b"\n"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
