"""The organiser's orders to rejudge runs: start one under another word list (and rules data),
apply it, cancel it. A run's own rules are the store's (`core.ports.RejudgeRuns`: one
transaction each); these add what goes around them, from finding what an order names to
having the standings it changes shown at once. How a run is judged: `core.rejudging`."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from core.errors import Invalid, NotFound, PublishFailed
from core.games import game
from core.ports import Caches, ContestStore, Publisher, RejudgeRuns, RulesetStore
from core.records import Run
from core.states import RejudgeMode


@dataclass(frozen=True)
class RejudgeStarted:
    run: Run
    created: bool  # False: the open run for the same ruleset, as it is


def start_rejudge(
    contest_id: str,
    *,
    lexicon: str,
    rules: str | None,
    mode: RejudgeMode,
    by: str,
    contests: ContestStore,
    rulesets: RulesetStore,
    runs: RejudgeRuns,
    publisher: Publisher,
) -> RejudgeStarted:
    """A run judging the contest again under the word list named (an id or a name) and the
    rules data named, or the contest's own (None); asking again for the same ruleset returns
    the open run. A new run's producer is published; with the broker down, the sweeper
    restarts the producers of runs that make no progress."""
    contest = contests.get_contest(contest_id)
    if contest is None:
        raise NotFound(f"no contest {contest_id[:64]!r}")
    found = rulesets.find_lexicon(lexicon)
    if found is None:
        raise Invalid(f"no lexicon with id or name {lexicon!r}")
    rules_id = contest.rules_id
    if rules is not None:
        row = rulesets.find_rules(rules, contest.game)
        if row is None:
            noun = game(contest.game).rules_noun
            raise Invalid(f"no {noun} with id or name {rules!r} for a {contest.game} contest")
        rules_id = row.id
    run, created = runs.start(contest_id, found.id, rules_id, mode, by=by)
    if created:
        with contextlib.suppress(PublishFailed):
            publisher.start_rejudge(run.id)
    return RejudgeStarted(run, created)


def apply_rejudge(run_id: str, *, by: str, runs: RejudgeRuns, caches: Caches) -> Run:
    """Switch the contest to the run's ruleset (RejudgeRefused unless the run is ready and
    the contest's ruleset unchanged since it started), and have its standings read afresh."""
    run = runs.apply(run_id, by)
    caches.forget_standings(run.contest_id)
    return run


def cancel_rejudge(run_id: str, *, by: str, runs: RejudgeRuns) -> Run:
    """Close the run; its queued batches find it closed and stop. Nothing visible changed
    while it ran, so nothing shown needs reading afresh."""
    return runs.cancel(run_id, by)
