"""What `tilejudge audit` compares with the contest state a transparency log implies: the
standings served to everyone, the results served to a team (or the organiser) submission by
submission, and a team's own files judged offline."""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

from cli.audit_log import Audit, Get, Snapshot, text
from cli.options import CliError
from core import transparency
from core.game import Game
from core.games import game
from core.tlog import leaf_hash
from infra.settings import ClientSettings

SERVED_PAGE = 500  # submissions a page of `GET /v1/contests/{id}/submissions`
MOST_SERVED_PAGES = 10_000  # a listing that never ends is refused after this many pages


def standings_differences(
    get: Get, base: str, implied: transparency.Implied, found: Audit
) -> list[str]:
    """How the standings served differ from those the entries imply (nothing: they match)."""
    from cli.client import join_pages

    contest = json.loads(text(get, base))
    played = game(contest["game"])
    found.game = played.name
    expected = played.log_standings(implied.live(), contest.get("options"))
    served = join_pages(lambda path: json.loads(text(get, path)), f"{base}/leaderboard?limit=1000")
    differences, matched = [], []
    for name, rows in expected.items():
        shown = served.get(name)
        if not isinstance(shown, list):
            differences.append(f"the standings served have no list {name!r}")
        elif len(shown) != len(rows):
            differences.append(
                f"the standings served list {len(shown)} {name}, the log implies {len(rows)}"
            )
        else:
            projected = [{key: row.get(key) for key in want} for row, want in zip(shown, rows)]
            wrong = [(row, want) for row, want in zip(projected, rows, strict=True) if row != want]
            if wrong:
                differences.append(
                    f"the standings served differ from the log's: {name} has {wrong[0][0]}, "
                    f"the log implies {wrong[0][1]}"
                )
            else:
                matched.append(f"the standings served match the log ({len(rows)} {name})")
    if not differences:  # once, however often a difference elsewhere has it asked again
        found.passed.extend(line for line in matched if line not in found.passed)
    return differences


def served_rows(get: Get, base: str) -> tuple[str | None, list[dict[str, Any]]]:
    """Every submission the token reads in the contest, as it is served (its own team's, or
    with the admin token all), and the team's id (None: the organiser)."""
    rows: list[dict[str, Any]] = []
    team: str | None = None
    after = ""
    for _ in range(MOST_SERVED_PAGES):
        page = json.loads(
            text(get, f"{base}/submissions?limit={SERVED_PAGE}&after={quote(after, safe='')}")
        )
        team = page.get("team")
        rows.extend(page["submissions"])
        if not page.get("next"):
            return team, rows
        after = str(page["next"])
    raise CliError(f"the submissions of {base} run past {MOST_SERVED_PAGES} pages")


def served_differences(get: Get, base: str, shot: Snapshot, found: Audit) -> list[str]:
    """How each result served to the token's holder differs from its latest outcome in the
    log (nothing: each matches), and which of its logged submissions are not served at all.
    The holder's own entries sealed while the contest is frozen are taken from the listing,
    each checked against its leaf hash in the signed tree, so a team audits its own verdicts
    during a freeze too."""
    team, rows = served_rows(get, base)
    implied, problems = _with_sealed(shot, rows)
    found.problems.extend(p for p in problems if p not in found.problems)
    differences = [d for row in rows if (d := served_difference(row, implied)) is not None]
    listed = {row["id"] for row in rows}
    for sid, logged in sorted(implied.live().items()):
        if (team is None or logged.team == team) and sid not in listed:
            differences.append(
                f"submission {sid} of team {logged.team} is in the log, but not served"
            )
    if not differences:
        whose = "every submission's" if team is None else f"team {team}'s"
        found.passed.append(
            f"the results served match the log's latest outcomes ({len(rows)}: {whose})"
        )
    return differences


def _with_sealed(
    shot: Snapshot, rows: list[dict[str, Any]]
) -> tuple[transparency.Implied, list[str]]:
    """What the entries imply with the listing's sealed entries filled in where the tree holds
    them withheld: each must hash to its leaf."""
    extra: dict[int, dict[str, Any]] = {}
    problems: list[str] = []
    for row in rows:
        for sealed in row.get("sealed") or []:
            leaf = int(sealed["leaf"])
            if not 0 <= leaf < len(shot.leaves):
                continue  # not in this checkpoint's tree yet
            try:
                entry = base64.b64decode(sealed["entry"], validate=True)
                fields = transparency.decode(entry)
            except (binascii.Error, ValueError) as exc:
                problems.append(f"the sealed entry {leaf} served with {row['id']}: {exc}")
                continue
            if leaf_hash(entry) != shot.leaves[leaf]:
                problems.append(
                    f"the sealed entry {leaf} served with {row['id']} does not hash to leaf "
                    f"{leaf} of the signed tree"
                )
            elif fields.get("submission") != row["id"]:
                problems.append(f"the sealed entry {leaf} served with {row['id']} is another's")
            elif shot.entries[leaf] is None:
                extra[leaf] = fields
    if not extra:
        return shot.implied, problems
    merged = sorted([*shot.decoded, *extra.items()], key=lambda pair: pair[0])
    implied = transparency.implied(merged)
    return implied, problems + implied.problems


def served_difference(row: Mapping[str, Any], implied: transparency.Implied) -> str | None:
    """How one served submission differs from its latest outcome in the log, as a sentence
    naming it, what is served and what the log says; None when they agree. Fields a game
    serves that its verdict entries do not hold (a Crosstiles log's winners) are not compared."""
    sid = row["id"]
    logged = implied.submissions.get(sid)
    result = row.get("result")
    served = _shown(result) if result is not None else f"no result ({row.get('state')})"
    if logged is None:
        return f"submission {sid} is served {served}, but the log has no upload of it"
    if logged.verdict is None:
        if result is None:
            reason = row.get("reason")
            if reason and logged.failed and reason != logged.failed:
                return (
                    f"submission {sid} is served failed ({reason}), the log says failed "
                    f"({logged.failed})"
                )
            return None
        said = f"failed ({logged.failed})" if logged.failed else "no verdict yet"
        return f"submission {sid} is served {served}, the log says {said}"
    if result is None:
        return f"submission {sid} is served {served}, its latest logged verdict is " + _shown(
            logged.verdict
        )
    wrong = sorted(
        k for k in result if k in logged.verdict and not _agree(result[k], logged.verdict[k])
    )
    if not wrong:
        return None
    return (
        f"submission {sid} is served {_shown({k: result[k] for k in wrong})}, its latest "
        f"logged verdict says {_shown({k: logged.verdict[k] for k in wrong})}"
    )


def _agree(served: Any, logged: Any) -> bool:
    """A served field against the logged one: an object on the fields the log holds (a
    Crosstiles error's line and reason, not its detail)."""
    if isinstance(served, dict) and isinstance(logged, dict):
        return all(served.get(key) == value for key, value in logged.items())
    return bool(served == logged)


def _shown(fields: Mapping[str, Any]) -> str:
    return json.dumps(fields, sort_keys=True, separators=(", ", ": "))[:300]


def check_uploads(
    found: Audit,
    folder: Path,
    lexicon_file: str | None,
    rules_file: str | None,
    environ: Mapping[str, str],
) -> None:
    """Each file of a team's own: logged as an upload, and judged here under the logged
    ruleset to the logged verdict."""
    if found.implied is None or not found.game:
        return
    played = game(found.game)
    try:
        files = sorted(p for p in folder.iterdir() if p.is_file())
    except OSError as exc:
        found.problems.append(f"cannot read {folder}: {exc.strerror}")
        return
    for path in files:
        data = path.read_bytes()
        sid = found.uploads.get(hashlib.sha256(data).hexdigest())
        if sid is None:
            found.problems.append(f"{path.name} is not in the log (no upload with its SHA-256)")
            continue
        logged = found.implied.submissions[sid]
        if logged.verdict is None or logged.ruleset is None:
            found.passed.append(f"{path.name} is logged as {sid}, with no verdict shown yet")
            continue
        try:
            mine = judged_here(played, data, logged.ruleset, lexicon_file, rules_file, environ)
        except RulesetMissing as exc:
            found.problems.append(f"{path.name}: {exc}")
            continue
        if mine != logged.verdict:
            found.problems.append(
                f"{path.name} ({sid}): the log's verdict is {logged.verdict}, judged here {mine}"
            )
        else:
            found.passed.append(f"{path.name} ({sid}) judges here to its logged verdict")


class RulesetMissing(Exception):
    """The word list or rules data a verdict names cannot be had here."""


def judged_here(
    played: Game,
    data: bytes,
    ruleset: tuple[str, str],
    lexicon_file: str | None,
    rules_file: str | None,
    environ: Mapping[str, str],
) -> dict[str, Any]:
    """The upload judged offline under the ruleset a verdict names, as its log fields: the word
    list from --lexicon or the cache (by its id), the rules from --rules or the game's own."""
    from infra import lexicon_files
    from infra.lexicon_sources import KNOWN_LISTS
    from judge import Lexicon

    lexicon_id, rules_id = ruleset
    if lexicon_file is not None:
        lexicon = Lexicon.from_bytes(Path(lexicon_file).read_bytes())
    else:
        cache = ClientSettings.from_env(environ).lexicon_cache
        known = [k for k in KNOWN_LISTS if k.lexicon_id == lexicon_id]
        if not known or not (cache / known[0].file).is_file():
            raise RulesetMissing(
                f"the verdict names word list {lexicon_id[:16]}…, which is not in the cache "
                "(`tilejudge lexicon fetch`); give it with --lexicon"
            )
        lexicon = lexicon_files.load(cache / known[0].file)
    if lexicon.id != lexicon_id:
        raise RulesetMissing(
            f"--lexicon is list {lexicon.id[:16]}…, the verdict names {lexicon_id[:16]}…"
        )
    rules = (
        played.parse_rules(Path(rules_file).read_text())
        if rules_file is not None
        else played.default_rules()
    )
    if rules.id != rules_id:
        raise RulesetMissing(
            f"the verdict names {played.rules_noun} {rules_id[:16]}…; give it with --rules"
        )
    return played.log_result(played.judge(data, lexicon, rules, "").result)
