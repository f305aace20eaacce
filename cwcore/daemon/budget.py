"""Byte budgets shared by the coroutines of one event loop (input and output reservations).

A :class:`Budget` never blocks the loop: :meth:`Budget.acquire` suspends the calling coroutine
until enough bytes are released (or its timeout passes), which is how the server turns memory
limits into backpressure instead of buffering. All methods must be called on the loop thread.
"""

from __future__ import annotations

import asyncio
from collections import deque

from cwcore.errors import Busy, LimitExceeded


class Budget:
    """``capacity`` bytes; reservations are taken with :meth:`acquire` and given back with
    :meth:`release`. Waiters are woken together on every release and re-check (few waiters)."""

    def __init__(self, capacity: int, name: str) -> None:
        self.capacity = capacity
        self.name = name
        self.used = 0
        self._waiters: deque[asyncio.Future[None]] = deque()

    @property
    def waiting(self) -> int:
        """How many coroutines are waiting for bytes of this budget now."""
        return len(self._waiters)

    async def acquire(self, n: int, timeout: float | None = None) -> None:
        """Reserve ``n`` bytes, waiting at most ``timeout`` seconds (None: until released).

        Raises :class:`LimitExceeded` when ``n`` can never fit and :class:`Busy` on timeout.
        """
        if n > self.capacity:
            raise LimitExceeded(
                f"{n} bytes exceed the {self.name} limit of {self.capacity} bytes",
                bytes=n,
                limit=self.capacity,
            )
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while self.used + n > self.capacity:
            waiter: asyncio.Future[None] = loop.create_future()
            self._waiters.append(waiter)
            try:
                remaining = None if deadline is None else max(0.0, deadline - loop.time())
                await asyncio.wait_for(waiter, remaining)
            except TimeoutError:
                raise Busy(
                    f"the daemon's {self.name} budget stayed full for {timeout:g} s; retry later"
                ) from None
            finally:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)
        self.used += n

    def release(self, n: int) -> None:
        """Give back ``n`` bytes and wake every waiter to re-check."""
        self.used -= n
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)


class Reservation:
    """Bytes held together in a connection's budget and the daemon-wide budget of the same kind.

    :meth:`take` reserves from the connection first, so a connection waits for its own traffic
    before it competes with others; :meth:`shrink` gives back what a materialized answer turned
    out not to need; :meth:`release` gives back the rest.
    """

    def __init__(self, local: Budget, shared: Budget) -> None:
        self.local = local
        self.shared = shared
        self.bytes = 0

    async def take(self, n: int, timeout: float | None = None) -> None:
        await self.local.acquire(n)
        try:
            await self.shared.acquire(n, timeout)
        except BaseException:
            self.local.release(n)
            raise
        self.bytes += n

    def shrink(self, n: int) -> None:
        """Keep at most ``n`` bytes reserved."""
        if n < self.bytes:
            extra = self.bytes - n
            self.bytes = n
            self.shared.release(extra)
            self.local.release(extra)

    def release(self) -> None:
        self.shrink(0)
