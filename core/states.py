"""The states a submission and a rejudge run move through, and a rejudge's modes."""

from __future__ import annotations

from enum import StrEnum


class SubmissionState(StrEnum):
    STORED = "stored"
    QUEUED = "queued"
    JUDGING = "judging"
    JUDGED = "judged"
    FAILED = "failed"


class RejudgeState(StrEnum):
    RUNNING = "running"
    READY = "ready"
    APPLIED = "applied"
    CANCELLED = "cancelled"


# A run still open: judging (running) or waiting to be applied or cancelled (ready).
OPEN_REJUDGE_STATES = (RejudgeState.RUNNING, RejudgeState.READY)


class RejudgeMode(StrEnum):
    FULL = "full"  # every submission judged again
    AFFECTED = "affected"  # only those that looked up an added or removed word
