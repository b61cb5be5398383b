"""Put on PYTHONPATH by `benchmarks.log_cost` only: every Python process of the stack it starts
(API, workers, sweeper) then runs with the transparency log switched off, its entries unwritten
and its sequencer not started, so that the same code is measured with and without the log."""

from infra import compose
from infra.sql import base


def _no_entries(self: object, conn: object, pending: object) -> None:
    return None


base.Database._log_facts = _no_entries  # type: ignore[method-assign,assignment]
compose.log_sequencer = lambda parts: None  # type: ignore[assignment]
