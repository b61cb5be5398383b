"""A contest's scoreboard freeze: what the public may see of its results, and when.

A contest with a `freeze_at` is frozen from that moment until the organiser thaws it (its
`thawed_at`). While frozen, the public (anyone without the admin token or the uploading team's
own token) sees only the verdicts of uploads received before `freeze_at`; later uploads show
as pending, submitted but not scored. The public standings also keep the ruleset they had when
a rejudge was first applied during the freeze (`frozen_lexicon_id`, `frozen_rules_id`), so a
rejudge changes nothing public until the thaw. The thaw reveals everything at once. Times are
the fixed-width UTC text of `core.clock`, so they compare as strings."""

from __future__ import annotations

from core.records import Contest


def frozen(contest: Contest, now: str) -> bool:
    """Whether the contest's public standings are frozen at `now`: it has a freeze time, that
    time has come, and the organiser has not thawed it."""
    return contest.freeze_at is not None and contest.freeze_at <= now and contest.thawed_at is None


def public_ruleset(contest: Contest, now: str) -> tuple[str, str]:
    """The (lexicon id, rules id) the public standings are computed under: while frozen, the
    ruleset a rejudge applied during the freeze replaced (if one was), else the live one."""
    if frozen(contest, now) and contest.frozen_lexicon_id and contest.frozen_rules_id:
        return contest.frozen_lexicon_id, contest.frozen_rules_id
    return contest.lexicon_id, contest.rules_id


def hidden(contest: Contest, received_at: str, now: str) -> bool:
    """Whether the public sees an upload received at `received_at` as pending at `now`: the
    contest is frozen and the upload came at or after the freeze."""
    return frozen(contest, now) and received_at >= (contest.freeze_at or "")


def public_cut(contest: Contest, now: str) -> tuple[tuple[str, str], str] | None:
    """What the public standings are computed with at `now`: the ruleset (`public_ruleset`)
    and the receipt time every upload counted came before; None when they count everything
    under the live ruleset (no freeze, or thawed). Before the freeze time the cut is `now`
    itself, so standings computed as the freeze time passes hold nothing received after it,
    and the ruleset is named, not read again, so a rejudge applied meanwhile shows nothing."""
    if contest.freeze_at is None or contest.thawed_at is not None:
        return None
    return public_ruleset(contest, now), min(contest.freeze_at, now)


def live_verdict_hidden(contest: Contest, received_at: str, now: str) -> bool:
    """Whether the public may not see an upload's verdict under the contest's live ruleset at
    `now`: it was received during the freeze, or a rejudge applied during the freeze judged
    it again (the public keeps the ruleset that rejudge replaced)."""
    live = (contest.lexicon_id, contest.rules_id)
    return hidden(contest, received_at, now) or public_ruleset(contest, now) != live


def freeze_pending(contest: Contest) -> bool:
    """A freeze is set and not thawed: it holds now, or will once its time comes."""
    return contest.freeze_at is not None and contest.thawed_at is None


def sealed(contest: Contest, received_at: str | None) -> bool:
    """Whether a live verdict is one the frozen standings hide, decided from the contest's
    row and the upload's receipt time alone, never from a host's clock (a worker whose clock
    runs behind would publish what an API host already freezes): its upload came at or after
    the freeze time, or a rejudge applied during the freeze moved the contest to the ruleset
    it is judged under. The transparency log seals such verdicts (docs/transparency.md)."""
    if not freeze_pending(contest) or received_at is None:
        return False
    live = (contest.lexicon_id, contest.rules_id)
    kept = (contest.frozen_lexicon_id, contest.frozen_rules_id)
    return received_at >= (contest.freeze_at or "") or (kept[0] is not None and kept != live)
