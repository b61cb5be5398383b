"""A measurement taken every few milliseconds on a thread of its own while a benchmark runs."""

from __future__ import annotations

import threading
from typing import Self


class Sampler:
    """Calls `sample` every `interval` seconds between entering and leaving the `with`
    block, the first time at once."""

    def __init__(self, interval: float = 0.02) -> None:
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def sample(self) -> None:
        raise NotImplementedError

    def _run(self) -> None:
        while True:
            self.sample()
            if self._stop.wait(self._interval):
                return

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()
