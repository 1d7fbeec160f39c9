"""Work handed to helper threads whose failures the caller must see: the first one is
raised at the caller's next step (`raise_failed`) or when it waits for all (`wait`)."""

from __future__ import annotations

from concurrent.futures import Future


class WatchedFutures:
    """The futures of work submitted in order, not yet waited for."""

    def __init__(self) -> None:
        self._futures: list[Future] = []

    def add(self, future: Future) -> None:
        self._futures.append(future)

    def raise_failed(self) -> None:
        """The first failure among the finished ones, raised (a failure is not kept waiting)."""
        for future in self._futures:
            if future.done() and future.exception() is not None:
                raise future.exception()  # type: ignore[misc]

    def wait(self) -> None:
        """Every one finished; the first failure raised."""
        for future in self._futures:
            future.result()
        self._futures.clear()

    def clear(self) -> None:
        self._futures.clear()
