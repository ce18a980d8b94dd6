"""asyncio face of :class:`~fencekeeper.Client`: acquires wait on the event loop, not a thread.

    async with fencekeeper.AsyncClient() as client:
        async with client.lock("reconcile", ttl=30, wait=60) as lease:
            await store.write(data, fence_token=lease.token)

Cancelling the task that waits (``asyncio.wait_for``, ``task.cancel()``) withdraws the request
at the sidecar; a grant that crossed the cancel is released, never left held. Loss is
cancellation: when the lease is lost, the task running the ``async with`` body is cancelled at
its next ``await``, and the block raises the typed loss (:class:`~fencekeeper.Lost` or
``Expired``, with its ``reason``) instead of ``CancelledError``. The lease's own
calls (``check``, ``renew``, ``release``) are quick local round trips and stay synchronous.
"""
from __future__ import annotations

import asyncio
import os
from typing import Any, Dict, Generator, Optional, Union

from .client import Client, HolderInfo, Lease, LostCallback, RiskCallback, Seconds
from .errors import Lost
from .holders import AsyncHolderWatch


class _AsyncLock:
    """What :meth:`AsyncClient.lock` returns: ``async with`` it, or ``await`` it for the Lease."""

    def __init__(self, client: Client, name: str, kwargs: Dict[str, Any]) -> None:
        self._client = client
        self._name = name
        self._kwargs = kwargs
        self._lease: Optional[Lease] = None
        self._task: Optional[asyncio.Task] = None
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._fd = -1
        self._cancelled_by_loss = False

    def __await__(self) -> Generator[Any, None, Lease]:
        return self._client.acquire_async(self._name, **self._kwargs).__await__()

    async def __aenter__(self) -> Lease:
        self._lease = await self
        # Loss as cancellation: the task running the body is cancelled the moment the lease is
        # lost, and the block raises the typed loss instead of CancelledError.
        self._task = asyncio.current_task()
        self._loop = asyncio.get_running_loop()
        self._cancelled_by_loss = False
        self._fd = self._lease.loss_fd
        if self._fd >= 0:
            self._loop.add_reader(self._fd, self._on_loss)
        return self._lease

    def _on_loss(self) -> None:
        self._loop.remove_reader(self._fd)
        self._fd = -1
        if self._task is not None and not self._task.done():
            self._cancelled_by_loss = True
            self._task.cancel("fencekeeper: the lease on %r was lost" % self._name)

    async def __aexit__(self, exc_type, exc, tb) -> None:
        lease, self._lease = self._lease, None
        if self._fd >= 0:
            self._loop.remove_reader(self._fd)
            self._fd = -1
        if lease is None:
            return
        if self._cancelled_by_loss and exc_type is asyncio.CancelledError:
            self._task.uncancel()  # (ours, not the caller's: the task is not being cancelled)
            try:
                lease.__exit__(None, None, None)  # (a lost lease's release raises the loss)
            except Lost:
                pass
            raise lease._loss_error() from exc
        lease.__exit__(exc_type, exc, tb)


class AsyncClient:
    """A :class:`~fencekeeper.Client` for asyncio code; same arguments. ``sync`` is the
    underlying Client, for the calls without an async form."""

    def __init__(self, socket: Union[str, os.PathLike, None] = None,
                 expect_uid: Optional[int] = None) -> None:
        self.sync = Client(socket, expect_uid=expect_uid)

    def lock(self, name: str, ttl: Seconds = 30, wait: Seconds = 0, owner: Optional[str] = None,
             keep_alive: bool = True, renew_only_if_checked_in: bool = False,
             on_lost: Optional[LostCallback] = None, shared: bool = False,
             permits: Optional[int] = None,
             on_risk: Optional[RiskCallback] = None) -> _AsyncLock:
        """``async with client.lock(name, ...) as lease``: acquires on entry (arguments as in
        :meth:`Client.acquire`), releases on exit."""
        return _AsyncLock(self.sync, name, dict(
            ttl=ttl, wait=wait, owner=owner, keep_alive=keep_alive,
            renew_only_if_checked_in=renew_only_if_checked_in, on_lost=on_lost, shared=shared,
            permits=permits, on_risk=on_risk))

    def semaphore(self, name: str, permits: int, **kwargs: Any) -> _AsyncLock:
        """``async with client.semaphore(name, permits=N) as lease``: one of N permits."""
        return self.lock(name, permits=permits, **kwargs)

    async def acquire(self, name: str, **kwargs: Any) -> Lease:
        """:meth:`Client.acquire`, awaited."""
        return await self.sync.acquire_async(name, **kwargs)

    def watch_holder(self, name: str) -> AsyncHolderWatch:
        """:meth:`Client.watch_holder` as an async iterator: ``async for change in watch``."""
        return AsyncHolderWatch(self.sync, name)

    async def holder(self, name: str) -> HolderInfo:
        return await asyncio.to_thread(self.sync.holder, name)

    async def status(self) -> Dict[str, Any]:
        return await asyncio.to_thread(self.sync.status)

    @property
    def connected(self) -> bool:
        return self.sync.connected

    def close(self) -> None:
        self.sync.close()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, exc_type, exc, tb) -> None:
        self.close()
