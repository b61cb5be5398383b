"""How far a long wait has come, on stderr: on a terminal, a bar redrawn in place; anywhere
else (a pipe, a log file), where a redrawn line would pile up as `\\r` frames, a plain line at
each tenth of the way, at least every QUIET_S seconds, and at the end."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TextIO

BAR_WIDTH = 30
STEPS = 10  # plain lines: one each tenth of the way
QUIET_S = 30.0  # and one at least this often while the count does not move


class Progress:
    """`done` of `total`, with a detail (a rate, an ETA), shown on `err` as suits it: a bar
    when `terminal` (by default: whether `err` is one), else plain lines headed by `label`."""

    def __init__(
        self,
        err: TextIO,
        label: str,
        *,
        terminal: bool | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.err = err
        self.label = label
        self.terminal = err.isatty() if terminal is None else terminal
        self.clock = clock
        self._drawn = 0  # characters of the bar's last frame, to blank what a shorter one leaves
        self._step = -1  # the tenth of the way the last plain line was at
        self._line_at = 0.0
        self._line_done: int | None = None

    def show(self, done: int, total: int, detail: str) -> None:
        if self.terminal:
            self._draw(done, total, detail)
            return
        step = STEPS * done // max(1, total)
        if step > self._step or self.clock() - self._line_at >= QUIET_S:
            self._line(done, total, detail)
            self._step = step

    def finish(self, done: int, total: int, detail: str) -> None:
        """The last state: the bar's final frame and its newline, or a plain line unless the
        last one said as much."""
        if self.terminal:
            self._draw(done, total, detail)
            self.err.write("\n")
            self.err.flush()
        elif done != self._line_done:
            self._line(done, total, detail)

    def _draw(self, done: int, total: int, detail: str) -> None:
        filled = BAR_WIDTH * done // max(1, total)
        frame = f"[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {done}/{total}  {detail}"
        self.err.write(f"\r{frame.ljust(self._drawn)}")
        self.err.flush()
        self._drawn = len(frame)

    def _line(self, done: int, total: int, detail: str) -> None:
        percent = 100 * done // max(1, total)
        self.err.write(f"{self.label}: {done}/{total} ({percent} %)  {detail}\n")
        self.err.flush()
        self._line_at, self._line_done = self.clock(), done
