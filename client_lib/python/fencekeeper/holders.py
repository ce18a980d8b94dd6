"""Holder watches and leader election, over fk_watch_holder and the lock queue.

    with client.watch_holder("jobs/leader") as watch:
        for change in watch:                       # the holder now, then each change
            print(change.state, change.holder)

    election = client.election("jobs/leader", owner="worker-7")
    with election.campaign() as leadership:        # blocks until this process leads
        run(fence_token=leadership.token)          # loss is fatal, as for any lease
"""
from __future__ import annotations

import asyncio
import ctypes
import enum
import queue
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, AsyncIterator, Callable, Iterator, Optional

from . import _native
from .client import HolderInfo, Lease, Seconds, _c_text, _check, _holder_info
from .errors import InvalidName

if TYPE_CHECKING:
    from .client import Client

# A blocking read of a watch waits in slices this long, so that Python runs a signal handler.
_WAIT_SLICE_S = 0.05
# waitMs 4294967295: a campaign with no deadline keeps its place in the queue.
_WAIT_FOREVER_S = 0xFFFFFFFF / 1000


class HolderState(enum.Enum):
    HELD = 0     #: ``holder`` names the holder
    FREE = 1     #: nobody holds the lock
    UNKNOWN = 2  #: the sidecar cannot vouch for its session, or the connection is down: ``detail``


@dataclass(frozen=True)
class HolderChange:
    """One report of a holder watch."""

    state: HolderState
    holder: Optional[HolderInfo]  #: the holder when HELD, else None
    detail: str  #: why, when UNKNOWN


class _Watch:
    """One fk_watch_holder registration calling ``deliver`` on the client's I/O thread."""

    def __init__(self, client: "Client", name: str,
                 deliver: Callable[[HolderChange], None]) -> None:
        self._lib = client._lib
        encoded = _c_text(name, "lock name", InvalidName)

        def trampoline(_user: Optional[int], state: int, info: "ctypes._Pointer",
                       detail: Optional[bytes]) -> None:
            try:
                st = HolderState(state)
            except ValueError:  # a state newer than this package
                st = HolderState.UNKNOWN
            deliver(HolderChange(st, _holder_info(info.contents) if st is HolderState.HELD
                                 else None, (detail or b"").decode("utf-8", "replace")))

        self._callback = _native.HolderFn(trampoline)  # kept alive as long as the watch
        self._handle = ctypes.c_void_p()
        err = _native.Error()
        with client._in_call() as handle:
            code = self._lib.fk_watch_holder(handle, encoded, self._callback, None,
                                             ctypes.byref(self._handle), ctypes.byref(err))
        _check(code, err)

    def close(self) -> None:
        handle, self._handle = self._handle, ctypes.c_void_p()
        if handle:
            self._lib.fk_holder_watch_free(handle)  # no call begins after it returns


class HolderWatch:
    """A holder watch (:meth:`Client.watch_holder`): an iterator of :class:`HolderChange`, the
    holder now first, ending when closed. ``get(timeout)`` reads one with a bound."""

    def __init__(self, client: "Client", name: str) -> None:
        self.name = name
        self._changes: "queue.Queue[Optional[HolderChange]]" = queue.Queue()
        self._closed = threading.Event()
        self._watch = _Watch(client, name, self._changes.put)

    def get(self, timeout: Optional[float] = None) -> Optional[HolderChange]:
        """The next change; None when ``timeout`` (seconds) passed first or the watch is closed."""
        remaining = timeout
        while not self._closed.is_set():
            slice_s = _WAIT_SLICE_S if remaining is None else min(_WAIT_SLICE_S, remaining)
            try:
                change = self._changes.get(timeout=max(slice_s, 0))
            except queue.Empty:
                if remaining is not None:
                    remaining -= slice_s
                    if remaining <= 0:
                        return None
                continue
            return change
        return None

    def __iter__(self) -> Iterator[HolderChange]:
        while True:
            change = self.get()
            if change is None:
                return
            yield change

    def close(self) -> None:
        self._closed.set()
        self._watch.close()
        self._changes.put(None)  # wakes a reader

    def __enter__(self) -> "HolderWatch":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.close()

    def __del__(self) -> None:
        if hasattr(self, "_watch"):
            self._watch.close()


class AsyncHolderWatch:
    """:class:`HolderWatch` for asyncio (:meth:`AsyncClient.watch_holder`): ``async for change in
    watch``; the changes are handed to the event loop, no thread waits for them."""

    def __init__(self, client: "Client", name: str) -> None:
        self.name = name
        loop = asyncio.get_running_loop()
        self._changes: "asyncio.Queue[Optional[HolderChange]]" = asyncio.Queue()
        self._watch = _Watch(client, name,
                             lambda c: loop.call_soon_threadsafe(self._changes.put_nowait, c))

    async def get(self) -> Optional[HolderChange]:
        return await self._changes.get()

    def __aiter__(self) -> AsyncIterator[HolderChange]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[HolderChange]:
        while True:
            change = await self._changes.get()
            if change is None:
                return
            yield change

    def close(self) -> None:
        self._watch.close()
        self._changes.put_nowait(None)

    async def __aenter__(self) -> "AsyncHolderWatch":
        return self

    async def __aexit__(self, exc_type, exc, tb) -> None:
        self.close()


class Election:
    """Leader election on a lock's queue (:meth:`Client.election`): the leader is the lease
    holder, its fencing token the lease's; a kazoo ``Election`` on the same path takes its turn
    in the same queue. Leadership is a lease: bounded by its TTL (kept alive by the client) and
    by the sidecar's vouching; losing it is fatal to the leader's work, as for any lease."""

    def __init__(self, client: "Client", name: str, owner: str, ttl: Seconds = 30) -> None:
        self._client = client
        self.name = name
        self.owner = owner
        self._ttl = ttl
        self._leadership: Optional[Lease] = None

    def campaign(self, wait: Optional[Seconds] = None, on_lost=None) -> Lease:
        """Blocks until this process leads (or ``wait`` seconds passed: ``TimedOut``); returns
        the leadership, a :class:`~fencekeeper.Lease` (``token`` is the leader's fencing token).
        Its ``with`` block, or :meth:`resign`, gives it up."""
        self._leadership = self._client.acquire(
            self.name, ttl=self._ttl, owner=self.owner, on_lost=on_lost,
            wait=_WAIT_FOREVER_S if wait is None else wait)
        return self._leadership

    def resign(self) -> None:
        """Gives leadership up (releases it); the next in the queue leads."""
        lease, self._leadership = self._leadership, None
        if lease is not None:
            lease.release()

    @property
    def leader(self) -> Optional[HolderInfo]:
        """Who leads now (owner label, token), or None."""
        info = self._client.holder(self.name)
        return info if info.held else None

    def observe(self) -> HolderWatch:
        """The leader now, then each change (:meth:`Client.watch_holder`)."""
        return HolderWatch(self._client, self.name)
