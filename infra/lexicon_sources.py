"""The known word lists and where each comes from upstream: a pinned download, or a recipe that
builds it from pinned sources. docs/lexicons.md states the same sources, recipes and digests.

Every list is checked against its sha256 whatever its origin; a download is read up to a bound,
so a wrong or hostile answer cannot fill memory.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from hashlib import sha256
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import urllib.error

# At most this much of any download is read (the SCOWL release is about 3 MiB, the lists 4 MiB).
MAX_DOWNLOAD_BYTES = 64 * 1024 * 1024
DOWNLOAD_TIMEOUT_S = 60

ENABLE_URL = (
    "https://raw.githubusercontent.com/dolph/dictionary/"
    "c65f04b0b5b27a981f437b940cf62fe71320d5ec/enable1.txt"
)
ENABLE_SHA256 = "3f16130220645692ed49c7134e24a18504c2ca55b3c012f7290e3e77c63b1a89"
# SCOWL 2020.12.07, version 1 final lists: the release archive, or the same files installed by
# Debian's and Ubuntu's `scowl` package (apt-get install scowl), which is tried first.
SCOWL_URL = (
    "https://downloads.sourceforge.net/project/wordlist/SCOWL/2020.12.07/scowl-2020.12.07.tar.gz"
)
SCOWL_PACKAGE_DIR = Path("/usr/share/dict/scowl")
SCOWL_KINDS = ("british", "british_z", "british_variant_1", "british_variant_2")
SCOWL_SIZES = (10, 20, 35, 40, 50, 55, 60, 70, 80)
_PLAIN_WORD = re.compile(rb"[a-z]{2,16}")

Download = Callable[[str], bytes]


class SourceUnavailable(RuntimeError):
    """An upstream source could not be had; the message says which and why, in a few words."""


@dataclass(frozen=True)
class KnownList:
    file: str
    sha256: str  # of the file as stored: LF line endings, each line ending in "\n"
    lexicon_id: str  # sha256 of its sorted unique words (LC_ALL=C sort -u), the judge's id
    words: int
    origin: str  # where it comes from upstream, for messages
    build: Callable[[Download], bytes]  # the list's bytes, from upstream through `download`


def download(url: str) -> bytes:
    """The body at `url`, at most MAX_DOWNLOAD_BYTES of it."""
    import urllib.error  # here: http.client and email cost every command ~35 ms to import
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT_S) as response:
            data: bytes = response.read(MAX_DOWNLOAD_BYTES + 1)
    except urllib.error.URLError as exc:
        raise SourceUnavailable(f"downloading {url} failed ({_reason(exc)})") from exc
    except OSError as exc:
        raise SourceUnavailable(f"downloading {url} failed ({exc})") from exc
    if len(data) > MAX_DOWNLOAD_BYTES:
        raise SourceUnavailable(f"{url} is larger than {MAX_DOWNLOAD_BYTES} bytes")
    return data


def _reason(exc: urllib.error.URLError) -> str:
    reason = exc.reason
    return getattr(reason, "strerror", None) or str(reason)


def normalise(data: bytes) -> bytes:
    """Upstream stores CRLF, the old list without a final line ending; the cache holds LF."""
    data = data.replace(b"\r\n", b"\n")
    return data if data.endswith(b"\n") else data + b"\n"


def _pinned_download(url: str) -> Callable[[Download], bytes]:
    return lambda fetch: normalise(fetch(url))


def enable_words(enable1: bytes) -> set[bytes]:
    """ENABLE's words of 2 to 16 letters."""
    return {word for word in enable1.split() if 2 <= len(word) <= 16}


def sorted_list(words: Iterable[bytes]) -> bytes:
    """One word per line in byte order, each line ending in "\n" (LC_ALL=C sort -u)."""
    return b"".join(word + b"\n" for word in sorted(set(words)))


def crosstiles_words(enable1: bytes, scowl_lists: Iterable[bytes]) -> bytes:
    """ENABLE's 2- to 16-letter words with every SCOWL word that matches ^[a-z]{2,16}$ (which
    drops names, possessives, contractions, accented and upper-case words)."""
    words = enable_words(enable1)
    for listing in scowl_lists:
        for line in listing.split(b"\n"):
            word = line.rstrip(b"\r")
            if _PLAIN_WORD.fullmatch(word):
                words.add(word)
    return sorted_list(words)


def scowl_file_names() -> list[str]:
    return [f"{kind}-words.{size}" for kind in SCOWL_KINDS for size in SCOWL_SIZES]


def scowl_from_folder(folder: Path) -> list[bytes] | None:
    """The SCOWL lists in `folder` (a `final/` directory or the package's), None if it has none."""
    found = [folder / name for name in scowl_file_names() if (folder / name).is_file()]
    return [path.read_bytes() for path in found] or None


def scowl_from_archive(archive: bytes) -> list[bytes]:
    """The SCOWL lists inside the release archive (`scowl-*/final/<kind>-words.<size>`)."""
    wanted = set(scowl_file_names())
    lists: list[bytes] = []
    import tarfile  # here, like urllib: only a fetch reads an archive

    try:
        with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
            for member in tar:
                folder, _, name = member.name.rpartition("/")
                if member.isfile() and name in wanted and folder.endswith("final"):
                    extracted = tar.extractfile(member)
                    if extracted is not None:
                        lists.append(extracted.read(MAX_DOWNLOAD_BYTES))
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise SourceUnavailable(f"the SCOWL archive could not be read ({exc})") from exc
    if not lists:
        raise SourceUnavailable("the SCOWL archive holds none of the final lists")
    return lists


def _enable(fetch: Download) -> bytes:
    data = fetch(ENABLE_URL)
    if sha256(data).hexdigest() != ENABLE_SHA256:
        raise SourceUnavailable(f"{ENABLE_URL} is not the pinned ENABLE (sha256 differs)")
    return data


def _scowl(fetch: Download) -> list[bytes]:
    return scowl_from_folder(SCOWL_PACKAGE_DIR) or scowl_from_archive(fetch(SCOWL_URL))


def _build_enable(fetch: Download) -> bytes:
    return sorted_list(enable_words(_enable(fetch)))


def _build_crosstiles(fetch: Download) -> bytes:
    return crosstiles_words(_enable(fetch), _scowl(fetch))


JUDGE_LIST = KnownList(
    "words_alpha.txt",
    "643c7f71d5caee9806be56f5ed83ba36e2246a06a04bcf4aaa0576790bb90d66",
    "1198a3786bed510b4f8127f73a74c38596088a220d318d962e689dc6f0792599",
    370_105,
    "dwyl/english-words at 8179fe6",
    _pinned_download(
        "https://raw.githubusercontent.com/dwyl/english-words/"
        "8179fe68775df3f553ef19520db065228e65d1d3/words_alpha.txt"
    ),
)
BEFORE_FIX = KnownList(
    "words_alpha_2020-08-24.txt",
    "8f1f818cf4f153a24b39e7a566f588247784fb26848f7557d4e0e78ca8c79d28",
    "18bf7fa77ad399859806316ead36fb38c0896db2aebc50d36349f555c3890f23",
    370_103,
    "dwyl/english-words at 7cb484d",
    _pinned_download(
        "https://raw.githubusercontent.com/dwyl/english-words/"
        "7cb484da5de560c11109c8f3925565966015e5a9/words_alpha.txt"
    ),
)
CROSSTILES_LIST = KnownList(
    "crosstiles.txt",
    "c4fd1daf9c16aa3084157afc2f04744dd5c8a112176409722663478e1764b618",
    "c4fd1daf9c16aa3084157afc2f04744dd5c8a112176409722663478e1764b618",
    178_569,
    "built from ENABLE (dolph/dictionary at c65f04b) and SCOWL 2020.12.07",
    _build_crosstiles,
)
ENABLE_LIST = KnownList(  # the Crosstiles list before British spellings were added
    "enable_2-16.txt",
    "86f928e42c4b7b45b780811db2d98528c5a8a14549c8d9cb3edbbba3a59315e9",
    "86f928e42c4b7b45b780811db2d98528c5a8a14549c8d9cb3edbbba3a59315e9",
    170_494,
    "built from ENABLE (dolph/dictionary at c65f04b)",
    _build_enable,
)
KNOWN_LISTS = (JUDGE_LIST, BEFORE_FIX, CROSSTILES_LIST, ENABLE_LIST)
