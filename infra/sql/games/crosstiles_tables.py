"""Crosstiles' own tables in SQL, hung off a result row, and the conditions its reads share:
results under a ruleset, and whether a rival valid log of the same game stands against one
(`core.disputes`)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    ForeignKey,
    Integer,
    String,
    Table,
    Text,
    and_,
    exists,
    true,
)
from sqlalchemy.sql.elements import ColumnElement

from infra.sql.schema import contests, dispute_settlements, metadata, results, submissions

# A judged Crosstiles game log's own result, hung off its result row (whose `score` is the
# winning score), so that a rejudge's results and their standings switch with `apply`, in one
# update.
crosstiles_results = Table(
    "crosstiles_results",
    metadata,
    Column("result_id", Integer, ForeignKey("results.id"), primary_key=True),
    Column("valid", Boolean, nullable=False),
    Column("turns", Integer, nullable=False),  # lines judged after the header, a failing one too
    # An invalid game's first failing line, its reason code and detail; NULL for a valid one.
    Column("line", Integer),
    Column("reason", String(32)),
    Column("detail", Text),
)

# Each player of a valid game log.
crosstiles_players = Table(
    "crosstiles_players",
    metadata,
    Column("result_id", Integer, ForeignKey("results.id"), primary_key=True),
    Column("seat", Integer, primary_key=True),
    Column("nick", String(32), nullable=False),
    Column("score", BigInteger, nullable=False),
    Column("removed", Boolean, nullable=False),
    Column("win_twelfths", Integer, nullable=False),  # 12 a sole win, 12/k a k-way tie, else 0
    Column("spread", BigInteger, nullable=False),  # score minus the best other player's
)


def under(
    ruleset: tuple[str, str] | None, of: Any = results
) -> tuple[ColumnElement[bool], ColumnElement[bool]]:
    """Results (`of`: the table or an alias of it) under the contest's live lexicon and
    layout, or under the (lexicon, layout) given (a rejudge preview's); the query joins
    `contests`, or, given a ruleset, need not."""
    if ruleset is None:
        return (
            of.c.lexicon_id == contests.c.lexicon_id,
            of.c.layout_id == contests.c.layout_id,
        )
    return of.c.lexicon_id == ruleset[0], of.c.layout_id == ruleset[1]


def rival(
    ruleset: tuple[str, str] | None, before: str | None = None, subject: Any = submissions
) -> ColumnElement[bool]:
    """Whether another valid log of the same game (seed and players) stands against the
    `subject` submission (the enclosing query's `submissions`, or an alias of it) under the
    ruleset (with `before`, among the logs received before then: a frozen board shows nothing
    received since): one that the organiser has not passed over in its favour. A query using
    it joins `subject` (and `contests` for the live ruleset)."""
    other, judged = submissions.alias(), results.alias()
    own = crosstiles_results.alias()
    # Correlated explicitly: SQLAlchemy correlates a nested EXISTS to the SELECT right around
    # it alone, so `subject` (and `contests`, two levels up inside `settled_for_another`)
    # would otherwise join in afresh, and any settlement of the other log would count.
    passed_over = (
        exists()
        .where(
            and_(
                dispute_settlements.c.submission_id == other.c.id,
                dispute_settlements.c.chosen_id == subject.c.id,
            )
        )
        .correlate_except(dispute_settlements)
    )
    return (
        exists()
        .where(
            and_(
                other.c.contest_id == subject.c.contest_id,
                other.c.match_key == subject.c.match_key,
                other.c.id != subject.c.id,
                *_valid_under(other, judged, own, ruleset, before),
                ~passed_over,
            )
        )
        .correlate_except(other, judged, own)
    )


def settled_for_another(ruleset: tuple[str, str] | None, before: str | None = None) -> Any:
    """Whether a log of the same game as the enclosing query's submission counts (valid, and
    no rival stands against it): the game is the other log's, and the submission passed over."""
    log, judged, own = submissions.alias(), results.alias(), crosstiles_results.alias()
    return exists().where(
        and_(
            log.c.contest_id == submissions.c.contest_id,
            log.c.match_key == submissions.c.match_key,
            log.c.id != submissions.c.id,
            *_valid_under(log, judged, own, ruleset, before),
            ~rival(ruleset, before, subject=log),
        )
    )


def passed_over_for_valid(ruleset: tuple[str, str] | None, before: str | None = None) -> Any:
    """Whether the enclosing query's submission was passed over by a settlement in favour of
    a log that is valid under the ruleset (one made invalid by a rejudge, or deleted, no
    longer holds it back)."""
    chosen, judged, own = submissions.alias(), results.alias(), crosstiles_results.alias()
    return exists().where(
        and_(
            dispute_settlements.c.submission_id == submissions.c.id,
            chosen.c.id == dispute_settlements.c.chosen_id,
            *_valid_under(chosen, judged, own, ruleset, before),
        )
    )


def _valid_under(
    log: Any, judged: Any, own: Any, ruleset: tuple[str, str] | None, before: str | None
) -> tuple[ColumnElement[bool], ...]:
    """`log` (an alias of `submissions`) is judged valid under the ruleset (`judged` and
    `own`: aliases of `results` and `crosstiles_results`), received before `before`."""
    received = () if before is None else (log.c.received_at < before,)
    return (
        judged.c.submission_id == log.c.id,
        *under(ruleset, judged),
        own.c.result_id == judged.c.id,
        own.c.valid == true(),
        *received,
    )
