"""Tables of the results store. Times are ISO 8601 UTC text (fixed width, so they sort)."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    false,
)

from core.games import DEFAULT as DEFAULT_GAME

metadata = MetaData()

ID = String(64)
TIME = String(32)

lexicons = Table(
    "lexicons",
    metadata,
    Column("id", ID, primary_key=True),
    Column("name", String(200), nullable=False, index=True),
    Column("words", Integer, nullable=False),
    Column("size", BigInteger, nullable=False),
    Column("blob_key", String(300), nullable=False),
    Column("source", String(300), nullable=False),
    Column("created_by", String(100), nullable=False),
    Column("created_at", TIME, nullable=False),
)

# Names are labels: one word list may carry several (the same bytes registered as "fixed" and
# "words_alpha"), and a name may move to a newer list; by name means the latest label.
lexicon_names = Table(
    "lexicon_names",
    metadata,
    Column("name", String(200), primary_key=True),
    Column("lexicon_id", ID, ForeignKey("lexicons.id"), primary_key=True),
    Column("created_at", TIME, nullable=False),
)

# Wordytaire layouts and Crosstiles boards alike: the rules data a contest is judged with
# beside its word list, content-addressed; `game` says which game's data a row holds.
layouts = Table(
    "layouts",
    metadata,
    Column("id", ID, primary_key=True),
    Column("name", String(200), nullable=False, index=True),
    Column("content", Text, nullable=False),
    Column("created_by", String(100), nullable=False),
    Column("created_at", TIME, nullable=False),
    Column("game", String(16), nullable=False, server_default=DEFAULT_GAME),
)

contests = Table(
    "contests",
    metadata,
    Column("id", ID, primary_key=True),
    Column("title", String(300), nullable=False),
    Column("opens_at", TIME, nullable=False),
    Column("closes_at", TIME, nullable=False),
    Column("lexicon_id", ID, ForeignKey("lexicons.id"), nullable=False),
    Column("layout_id", ID, ForeignKey("layouts.id"), nullable=False),
    Column("created_at", TIME, nullable=False),
    Column("game", String(16), nullable=False, server_default=DEFAULT_GAME),  # fixed at creation
    # The scoreboard freeze (`core.freeze`): when it starts, when the organiser thawed it, and
    # the ruleset the public standings keep while frozen (set by a rejudge applied meanwhile).
    Column("freeze_at", TIME),
    Column("thawed_at", TIME),
    Column("frozen_lexicon_id", ID),
    Column("frozen_layout_id", ID),
    # The options its game took at creation, as JSON (`Game.contest_options`); NULL: defaults.
    Column("options", Text),
)

teams = Table(
    "teams",
    metadata,
    Column("id", ID, primary_key=True),
    Column("contest_id", ID, ForeignKey("contests.id"), nullable=False),
    Column("name", String(200), nullable=False),
    Column("token_hash", String(64), nullable=False, unique=True),
    Column("created_at", TIME, nullable=False),
    # A right the organiser grants: upload game logs, which name other players.
    Column("uploads_logs", Boolean, nullable=False, server_default=false()),
    UniqueConstraint("contest_id", "name", name="uq_teams_contest_name"),
)

submissions = Table(
    "submissions",
    metadata,
    Column("id", ID, primary_key=True),
    Column("contest_id", ID, ForeignKey("contests.id"), nullable=False),
    Column("team_id", ID, ForeignKey("teams.id"), nullable=False),
    Column("sha256", String(64), nullable=False),
    Column("size", BigInteger, nullable=False),
    Column("blob_key", String(300), nullable=False),
    Column("received_at", TIME, nullable=False),
    Column("receipt", String(64), nullable=False),
    Column("state", String(16), nullable=False),
    Column("state_at", TIME, nullable=False),
    Column("attempts", Integer, nullable=False, default=0),
    Column("judged_at", TIME),
    Column("failure", Text),
    # Where uploads from any team are one submission (a game that names its players): the
    # game's identity (`core.game.Identity.key`), and its seed and players (`match`), which
    # rival logs of one game share: all are kept, and the standings count one (`core.disputes`).
    # NULL otherwise, and NULLs never clash.
    Column("game_key", String(64)),
    Column("match_key", String(64)),
    # The worker host whose upload cache holds the bytes (`infra.upload_cache.host_id`): the
    # last to judge them. A rejudge sends a batch to that host's queue (`core.rejudging`).
    Column("held_on", String(64)),
    UniqueConstraint("contest_id", "team_id", "sha256", name="uq_submissions_same_bytes"),
    Index("uq_submissions_game", "contest_id", "game_key", unique=True),
    Index("ix_submissions_match", "contest_id", "match_key"),
    Index("ix_submissions_state", "state", "state_at"),
    Index("ix_submissions_contest", "contest_id", "team_id"),
    # A rejudge pages through a contest in id order: read in index order, no sort, so the
    # first batch goes out after a few rows instead of after the whole page.
    Index("ix_submissions_contest_id", "contest_id", "id"),
)

# The organiser's settlements of disputed games (`core.disputes`): each row a log passed over,
# with the rival log of the same seed and players chosen over it. A log counts when it is valid
# and every other valid log of its game is passed over in its favour; settling again replaces
# the rows of the game's logs. No foreign key to the submissions: a row of a deleted one is
# never joined again.
dispute_settlements = Table(
    "dispute_settlements",
    metadata,
    Column("submission_id", ID, primary_key=True),  # the log passed over
    Column("chosen_id", ID, nullable=False),
    Column("contest_id", ID, nullable=False),
    Column("match_key", String(64), nullable=False),
    Column("settled_at", TIME, nullable=False),
    Column("settled_by", String(100), nullable=False),
    Index("ix_dispute_settlements_match", "contest_id", "match_key"),
)

# Every other team's upload of a shared submission (a game another club uploaded first), with
# its own bytes: deleting a team removes its copies, and a game whose first uploader is deleted
# passes to the earliest copy left.
submission_copies = Table(
    "submission_copies",
    metadata,
    Column("submission_id", ID, ForeignKey("submissions.id"), primary_key=True),
    Column("team_id", ID, ForeignKey("teams.id"), primary_key=True),
    Column("sha256", String(64), nullable=False),
    Column("size", BigInteger, nullable=False),
    Column("blob_key", String(300), nullable=False),
    Column("received_at", TIME, nullable=False),
    Index("ix_submission_copies_team", "team_id"),
)

results = Table(
    "results",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("submission_id", ID, ForeignKey("submissions.id"), nullable=False),
    Column("lexicon_id", ID, nullable=False),
    Column("layout_id", ID, nullable=False),
    Column("judge_version", String(32), nullable=False),
    Column("score", BigInteger, nullable=False),  # what the game ranks by
    Column("report_key", String(300), nullable=False),
    Column("judged_at", TIME, nullable=False),
    # 1 when an affected-only rejudge copied the result over instead of judging again
    Column("carried", Integer, nullable=False, server_default="0"),
    UniqueConstraint("submission_id", "lexicon_id", "layout_id", name="uq_results_ruleset"),
)

# The distinct words a submission looks up in the lexicon, as a signature (core.word_hashes),
# so a word-list fix can only change submissions that use its words. A Wordytaire
# submission's are the same under every ruleset (they depend on checks 1-5 only); a game log
# stops at its first failing line, so its words grow with a list that lets it go further:
# the signature is the union over every judging.
word_hashes = Table(
    "word_hashes",
    metadata,
    Column("submission_id", ID, ForeignKey("submissions.id"), primary_key=True),
    Column("hashes", LargeBinary, nullable=False),  # CRC-32s, 4 bytes little-endian, any order
)

rejudge_runs = Table(
    "rejudge_runs",
    metadata,
    Column("id", ID, primary_key=True),
    Column("contest_id", ID, ForeignKey("contests.id"), nullable=False),
    Column("lexicon_id", ID, nullable=False),
    Column("layout_id", ID, nullable=False),
    Column("from_lexicon_id", ID, nullable=False),
    Column("from_layout_id", ID, nullable=False),
    Column("mode", String(16), nullable=False),
    Column("state", String(16), nullable=False),
    Column("total", Integer, nullable=False),
    Column("done", Integer, nullable=False),
    Column("carried", Integer, nullable=False),
    Column("cursor", ID, nullable=False),  # the producer has published every id up to this one
    Column("created_by", String(100), nullable=False),
    Column("created_at", TIME, nullable=False),
    Column("updated_at", TIME, nullable=False),
    Column("finished_at", TIME),
    Index("ix_rejudge_runs_contest", "contest_id", "state"),
)

# What an applied run changed, recorded by `apply` in the transaction that switches the
# contest: a preview is computed from the results under both rulesets, which later uploads
# (judged under the new one only), deletions and later runs go on changing. A run applied
# before this table existed has no row: its summary was not recorded.
rejudge_summaries = Table(
    "rejudge_summaries",
    metadata,
    Column("run_id", ID, ForeignKey("rejudge_runs.id"), primary_key=True),
    Column("frozen_at", TIME, nullable=False),
    Column("scores", Integer, nullable=False),  # how many rows `changed` holds
    Column("ranks", Integer, nullable=False),  # and `rank_changes`
    # The preview's two lists in the game's own rows (`RunSummary`), as JSON.
    Column("changed", Text, nullable=False),
    Column("rank_changes", Text, nullable=False),
)

# The submissions a rejudge run could not judge (the upload's object gone, its bytes damaged,
# its report over the cap), each with its reason code (`core.errors.FailureReason`): counted as
# done, so one broken upload never keeps a run from being applied, and listed in its preview.
# No foreign key to the submission: deleting a team deletes its rows here first.
rejudge_failures = Table(
    "rejudge_failures",
    metadata,
    Column("run_id", ID, ForeignKey("rejudge_runs.id"), primary_key=True),
    Column("submission_id", ID, primary_key=True),
    Column("reason", String(32), nullable=False),
    Column("failed_at", TIME, nullable=False),
)

events = Table(
    "events",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("ts", TIME, nullable=False),
    Column("type", String(64), nullable=False),
    Column("contest_id", ID),
    Column("team_id", ID),
    Column("submission_id", ID),
    Column("data", Text, nullable=False),
)

# Dashboard sessions signed out before they expire: the cookie itself is signed and carries its
# expiry, so only a revocation needs a row, kept until the session would have expired anyway.
# Every API process reads it, so a signed-out cookie is refused by all of them.
revoked_sessions = Table(
    "revoked_sessions",
    metadata,
    Column("id", ID, primary_key=True),
    Column("expires_at", TIME, nullable=False, index=True),
)

# -- the transparency log (core.transparency, docs/transparency.md) ------------------------------

# Each contest's log entries, numbered per contest in the transaction that commits their fact:
# writers number them under the lock that orders event ids (`infra.sql.base`), so leaf order is
# commit order. `sealed`: a verdict the public may not read while the contest is frozen.
log_entries = Table(
    "log_entries",
    metadata,
    Column("contest_id", ID, primary_key=True),
    Column("leaf", BigInteger, primary_key=True, autoincrement=False),
    Column("entry", LargeBinary, nullable=False),
    Column("sealed", Boolean, nullable=False, server_default=false()),
    Column("submission_id", ID),  # the submission an entry is about, for its team's proofs
    Index("ix_log_entries_submission", "submission_id"),
)

# Per contest, what writers keep: the next leaf to number, and whether the close is logged.
log_heads = Table(
    "log_heads",
    metadata,
    Column("contest_id", ID, primary_key=True),
    Column("next_leaf", BigInteger, nullable=False),
    Column("closed", Boolean, nullable=False, server_default=false()),
)

# Per contest, what the sequencer has hashed and signed: the tree's size and root and the
# checkpoint note over them (a row of its own, so writers never wait on a signing).
logs = Table(
    "logs",
    metadata,
    Column("contest_id", ID, primary_key=True),
    Column("size", BigInteger, nullable=False),
    Column("root", LargeBinary, nullable=False),
    Column("checkpoint", Text, nullable=False),
    Column("signed_at", TIME, nullable=False),
)

# The tree's hashes in Go tlog's "stored hash" order (every level, each hash once), written
# by the sequencer: tiles, roots and proofs are read from them.
log_hashes = Table(
    "log_hashes",
    metadata,
    Column("contest_id", ID, primary_key=True),
    Column("n", BigInteger, primary_key=True, autoincrement=False),
    Column("hash", LargeBinary, nullable=False),
)
