"""The pipeline's tuning knobs, in one place, each with the reason for its value.

Settings an operator changes per deployment come from the environment (`infra.settings`);
these are the values the design rests on, changed only with a measurement behind the change
(`BENCHMARKS.md` names the command that measures each area).
"""

from __future__ import annotations

# -- messages -----------------------------------------------------------------------------
# Small uploads ride along in the message, saving the worker an S3 read; S3 stays the record
# (the worker checks the digest, and the sweeper republishes without bytes).
INLINE_LIMIT = 256 * 1024
# An upload above HEAVY_BYTES (tens of milliseconds of judging and more) goes in a message of
# its own at a lower priority than the light ones, lower again for each heavy upload its team
# sent within HEAVY_WINDOW_S (core.messages.heavy_priority), and judges only in one of a host's
# TILEJUDGE_WORKERS heavy slots: light uploads keep a process of their own and jump the queue.
HEAVY_BYTES = 64 * 1024
HEAVY_WINDOW_S = 60.0
HEAVY_TEAMS_KEPT = 10_000
# A group message carries at most this many uploads, and inline bytes up to GROUP_INLINE (the
# rest the worker reads from S3): a light upload judges in ~10-15 ms, so a message is a few
# tenths of a second of judging, and a few MiB in Redis. Each message costs a claim and a
# recording transaction, the worker parent's receive, ack and hand-over to its process, and
# the process's wait meanwhile: 16 rather than 8 took a drain's messages from ~55 to ~33 and
# its efficiency up ~0.03 (`benchmarks.cluster_failover --efficiency-only`).
GROUP_MOST = 16
GROUP_INLINE = 1024 * 1024
# Where the broker is Redis, a message's bytes wait beside it under keys of their own
# (`infra.broker_copies`) until judged, and at most this long: a worker finding them gone reads
# S3, so this bounds what a lost message leaves in Redis's memory, never what is judged.
KEPT_UPLOAD_TTL_S = 3600

# -- intake -------------------------------------------------------------------------------
# Uploads stored in one transaction at most: one commit (one fsync) for a burst, while a
# group's statements stay short enough not to hold SQLite's write lock for long.
COMMIT_MOST = 256
# Queued-marks alone wait this long for an upload to share their transaction.
MARK_LINGER_S = 0.02
# Behind a backlog the publisher waits this long for company, then sends full groups: fewer
# messages, claims and transactions, and no upload judged later for it (the backlog takes
# longer than this to drain). Long enough for an API process taking ~80 uploads a second to
# gather about half a group.
PUBLISH_LINGER_S = 0.1
# A team token's team and contest are remembered this long in each API process (an early
# close, and a team's right to upload game logs taken back, are enforced by the group commit's
# transaction, not by what a process remembers); at most UPLOADERS_KEPT tokens, then the
# memory starts over.
UPLOADER_TTL_S = 30.0
UPLOADERS_KEPT = 100_000

# -- rejudging ----------------------------------------------------------------------------
# The producer pages through a contest this many submissions at a time (one query each).
REJUDGE_PAGE = 512  # whole batches of REJUDGE_BATCH_MOST: each page's last is full too
# Submissions per bulk message. A full rejudge's first batches hold REJUDGE_BATCH_MOST, which
# pays for a task, its look-ups and its recording transaction once per 64 submissions rather
# than per 16. Towards the run's end the size halves whenever fewer than REJUDGE_SPREAD batches
# of it are left to publish, down to REJUDGE_BATCH, so the last batches still spread over up to
# REJUDGE_SPREAD processes and none finishes long after the others (guided self-scheduling).
# Against batches of 16 throughout, alternating in one stack: a full rejudge against live
# judging 1.00, 1.04 and 1.01 against 0.96, 0.98 and 0.98 (measured 2026-12-05; in the git
# history of BENCHMARKS.md). An affected-only run's few submissions go in batches of
# REJUDGE_BATCH, spread over every process. A live upload
# never waits behind a batch: a standby process takes it, or judge_batch hands the rest of the
# batch back. Each size is REJUDGE_BATCH times a power of two, and divides REJUDGE_PAGE.
REJUDGE_BATCH = 16
REJUDGE_BATCH_MOST = 64
REJUDGE_SPREAD = 32
# A batch also ends once its uploads reach this many bytes: a batch of the largest uploads
# (2 MiB of one-letter lines takes about 4 s, `benchmarks.hostile_bench`) then holds two or
# three, about 10 s of judging, far inside the task's time limit (16 of them took a minute).
REJUDGE_BATCH_BYTES = 4 * 1024 * 1024
# CPU niceness of bulk judging, so live uploads on the same cores go first.
BULK_NICENESS = 10
# A bulk batch waits this long for a bulk slot, then goes back to the queue rather than hold
# its message longer.
BULK_SLOT_WAIT_S = 30.0
# Pairs of word lists whose difference a worker keeps (an affected-only rejudge asks for one).
LEXICON_DIFFS_KEPT = 4

# -- the transparency log's sequencer (infra.sql.transparency) ----------------------------
# Leaves a round of the sequencer hashes into a contest's tree at most: a round, and the write
# transaction it holds, stays short however far a contest's log has run ahead; the rest waits
# for the next round.
SEQUENCE_AT_MOST = 20_000

# -- the Contest API's event feed (api.clics_feed) ----------------------------------------
# One poller per API process reads the event log this often for every follower: a follower
# hears of a judgement within about this long, and the log costs a query per interval however
# many follow.
CLICS_POLL_S = 0.5
# Events read and rendered at a time (by the poller, or a follower catching up): one page's
# lines are what a step holds in memory.
CLICS_PAGE = 1000
# Lines the poller keeps for followers a little behind; one further behind catches up from
# the store. A few MiB.
CLICS_LINES_KEPT = 20_000
# A newline after this long without an event (the spec asks for one within 120 s).
CLICS_KEEPALIVE_S = 60.0
# Event-feed followers an API process serves at once; beyond, 503 with Retry-After.
CLICS_FOLLOWERS_MOST = 500
# Of them, one client address holds at most this share (two at least), so a few addresses cannot
# take all of them; a trusted proxy's address is not capped (docs/deploy.md).
CLICS_FOLLOWERS_PER_ADDRESS_SHARE = 0.05
# Room kept: anonymous followers take at most this share of the process's followers, team
# followers this share, and the organiser's tools (the admin token) the rest too, so a flood of
# anonymous followers never refuses a team's feed or the organiser's.
CLICS_PUBLIC_FOLLOWERS_SHARE = 0.6
CLICS_TEAM_FOLLOWERS_SHARE = 0.9

# -- connections and strangers (api.connection_book, api.strangers) ----------------------
# Of an API process's connection limit (devstack.children.CONNECTIONS_MOST), one client address
# holds at most this share once CONNECTIONS_CROWDED_SHARE of it is open: past it, that address's
# longest idle connection is closed. Below, many clients behind one address (a campus's NAT, a
# load test's 200 clients) take what they need.
CONNECTIONS_PER_ADDRESS_SHARE = 0.1
CONNECTIONS_CROWDED_SHARE = 0.5
# Once this share of the limit is open, a new connection closes the longest idle one, so the
# rest stays free for requests under way (uvicorn answers 503 at the limit, idle or not).
CONNECTIONS_IDLE_SHARE = 0.8
# A token no team holds is remembered as unknown this long (at most UNKNOWN_TOKENS_KEPT, then
# the memory starts over), so a client retrying one costs no query. Short because that memory
# is not told of a team's creation: a new team's token is generated by the API and shown only
# then, so no one can have sent it before; only a store restored from a backup brings a token
# back, and this is how long such a team waits.
UNKNOWN_TOKEN_TTL_S = 30.0
UNKNOWN_TOKENS_KEPT = 10_000
# Failed authentications (a token no team holds) per client address: an address that failed
# has its next look-ups paced at this many a second (a second's worth at once), all failing
# addresses together at STRANGER_LOOKUPS_PER_S per API process, on the public threads; a
# request that would wait over STRANGER_QUEUE_S is refused with 429. A team's remembered token
# is never paced, and an address that never failed looks up freely.
AUTH_FAILURES_PER_S = 5.0
STRANGER_LOOKUPS_PER_S = 50.0
STRANGER_QUEUE_S = 2.0
STRANGER_ADDRESSES_KEPT = 10_000
