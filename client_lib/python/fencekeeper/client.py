"""Client and Lease over the C ABI (fencekeeper.h) of libfencekeeper.so."""
from __future__ import annotations

import asyncio
import atexit
import contextlib
import ctypes
import datetime
import enum
import json
import math
import os
import signal
import _thread
import threading
import weakref
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterator, Optional, Tuple, Union

from . import _native
from .errors import (ErrorCode, Expired, InternalError, InvalidArgument, InvalidName,
                     InvalidOwner, LossReason, Lost, NotHeld, SidecarUnavailable, error_for)

#: A duration: seconds (int or float) or a timedelta.
Seconds = Union[float, int, datetime.timedelta]
#: ``on_risk(token, at_risk, left_seconds)``: jeopardy, on the client's I/O thread.
RiskCallback = Callable[[int, bool, float], None]
#: ``on_lost(token, reason)``: called once, on the client's I/O thread, when a lease is lost.
LostCallback = Callable[[int, LossReason], None]

_UINT32_MAX = 0xFFFFFFFF
# A blocking acquire waits in slices this long, so that Python runs a signal handler in time.
_WAIT_SLICE_MS = 50


def _millis(value: Seconds, what: str, allow_zero: bool) -> int:
    """Seconds (or a timedelta) as the whole milliseconds of the C ABI."""
    if isinstance(value, datetime.timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = float(value)
    else:
        raise TypeError("%s must be seconds (int, float or timedelta), not %r" % (what, value))
    if not math.isfinite(seconds) or seconds < 0:
        raise InvalidArgument("%s must be a finite, non-negative duration, not %r" % (what, value))
    ms = round(seconds * 1000)
    if ms > _UINT32_MAX:
        raise InvalidArgument("%s must be at most %d ms, not %r s" % (what, _UINT32_MAX, value))
    if ms == 0 and not allow_zero:
        raise InvalidArgument("%s must be at least 1 ms, not %r s" % (what, value))
    return ms


def _c_text(value: str, what: str, error: type) -> bytes:
    """``value`` as the C string the library sends: refused if a NUL would cut it short."""
    if "\0" in value:
        raise error("%s %r holds a NUL byte" % (what, value))
    try:
        return value.encode("utf-8")
    except UnicodeEncodeError as e:  # a lone surrogate: no UTF-8 for it
        raise error("%s %r is not valid UTF-8: %s" % (what, value, e.reason)) from None


def _check(code: int, err: _native.Error) -> None:
    if code != ErrorCode.OK:
        raise error_for(code, err.message.decode("utf-8", "replace"))


def _loss_reason(reason: int) -> LossReason:
    try:
        return LossReason(reason)
    except ValueError:  # a reason newer than this package: still a loss
        return reason  # type: ignore[return-value]


class LockMode(enum.IntEnum):
    """How a lease shares its lock (the schema's LockMode)."""

    EXCLUSIVE = 0  #: alone (kazoo's Lock and WriteLock)
    SHARED = 1  #: with other shared holders, never with an exclusive one (kazoo's ReadLock)
    PERMITS = 2  #: one of at most N holders: a semaphore


@dataclass(frozen=True)
class Holder:
    """One of a lock's holders: a shared lock and a semaphore have several."""

    token: int
    owner: str
    since_unix_ms: int
    this_sidecar: bool
    mode: LockMode
    permits: int  #: ``LockMode.PERMITS``: the N its request asked for; else 0


@dataclass(frozen=True)
class HolderInfo:
    """Who holds a lock, through any sidecar or a kazoo client (see :meth:`Client.holder`)."""

    held: bool
    token: int  #: the holder's fencing token (its node's czxid); 0 when free
    owner: str  #: the holder's owner label
    since_unix_ms: int  #: grant time if this sidecar holds it, else the node's ctime
    waiters: int  #: contenders queued behind the holder, from any client
    this_sidecar: bool  #: held through this sidecar's ZooKeeper session
    #: every holder, oldest first (the fields above are the first one's); at most 16 listed
    holders: Tuple[Holder, ...] = ()
    holder_count: int = 0  #: every holder, listed or not

    @property
    def since(self) -> Optional[datetime.datetime]:
        """``since_unix_ms`` as an aware UTC datetime; None when the lock is free."""
        if not self.held:
            return None
        return datetime.datetime.fromtimestamp(self.since_unix_ms / 1000, datetime.timezone.utc)


def _holder_info(info: _native.HolderInfo) -> HolderInfo:
    return HolderInfo(held=bool(info.held), token=int(info.token),
                      owner=info.owner_label.decode("utf-8", "replace"),
                      since_unix_ms=int(info.since_unix_ms), waiters=int(info.waiters),
                      this_sidecar=bool(info.this_sidecar),
                      holders=tuple(_holder(info.holders[i]) for i in range(info.holders_listed)),
                      holder_count=int(info.holder_count))


def _holder(entry: _native.HolderEntry) -> Holder:
    return Holder(token=int(entry.token), owner=entry.owner_label.decode("utf-8", "replace"),
                  since_unix_ms=int(entry.since_unix_ms), this_sidecar=bool(entry.this_sidecar),
                  mode=LockMode(entry.mode), permits=int(entry.permits))


def _mode(shared: bool, permits: Optional[int]) -> Tuple[LockMode, int]:
    if shared and permits is not None:
        raise InvalidArgument("a lease is shared or one of N permits, not both")
    if permits is not None:
        if isinstance(permits, bool) or not isinstance(permits, int) or not 1 <= permits <= 10000:
            raise InvalidArgument("permits must be an int in [1, 10000], not %r" % (permits,))
        return LockMode.PERMITS, permits
    return (LockMode.SHARED if shared else LockMode.EXCLUSIVE), 0


class Lease:
    """A granted lease on a named lock. Get one from :meth:`Client.acquire` or
    :meth:`Client.lock`; do not construct it.

    Loss is fatal to the work in hand: when the lease is lost (``lost`` turns true, ``on_lost``
    is called, a call raises :class:`~fencekeeper.Lost` or :class:`~fencekeeper.Expired`),
    another process may already hold the lock with a larger token. Stop at once.

    As a context manager it releases the lease on exit. If the lease was lost meanwhile and the
    block raised nothing, the exit raises :class:`~fencekeeper.Lost` (or ``Expired``): the block's
    work was not covered by the lease all along.

    Every method is safe from any thread, except from an ``on_lost`` callback (calls that need
    the sidecar raise :class:`~fencekeeper.WrongThread` there). The lease keeps its client object
    alive; it is released when garbage collected, if still held.
    """

    def __init__(self, client: Client, handle: ctypes.c_void_p, name: str,
                 loss: _LossHook) -> None:
        # `handle` may be shared with the acquire that got it: whichever frees it clears it.
        self._lib = client._lib
        self._client = client
        self._handle = handle
        self._name = name
        # The C library calls its callback until the handle is freed: it must live as long.
        self._loss = loss
        self._token = int(self._lib.fk_lease_token(handle))

    @property
    def lost_event(self) -> threading.Event:
        """Set the moment the lease is lost (never when released): ``wait()`` on it from a
        thread that stops the work, or check ``is_set()`` between steps."""
        return self._loss.event

    @property
    def at_risk(self) -> bool:
        """True between the sidecar's "at risk" push and its "safe again" (see ``on_risk``)."""
        return bool(self._lib.fk_lease_at_risk(self._handle))

    @property
    def loss_fd(self) -> int:
        """A file descriptor readable once the lease is lost (never when released), for
        ``select``, ``selectors`` or an event loop's ``add_reader``. Never read or close it."""
        return int(self._lib.fk_lease_loss_fd(self._handle))

    def _loss_error(self) -> Lost:
        """The typed loss: :class:`Expired` or :class:`Lost`, with its ``reason``."""
        reason = self.loss_reason
        cls = Expired if reason == LossReason.TTL_EXPIRED else Lost
        error = cls("lease on %r (token %d) lost: %s" %
                    (self._name, self._token, "unknown" if reason is None else
                     getattr(reason, "name", str(reason)).lower().replace("_", " ")))
        error.reason = reason
        return error

    @property
    def name(self) -> str:
        """The lock's name."""
        return self._name

    @property
    def token(self) -> int:
        """The fencing token: send it with every request to storage, which rejects a token lower
        than the highest it has seen."""
        return self._token

    @property
    def valid_for(self) -> float:
        """Seconds the lease is valid from now; 0.0 once lost, released or past. Local: no
        round trip, read from the sidecar's shared-memory lease table where it can be mapped
        (:meth:`Client.uses_lease_table`), else counted from the sidecar's last answer."""
        return self._lib.fk_lease_valid_for_ms(self._handle) / 1000.0

    @property
    def lost(self) -> bool:
        """True once the lease was lost (not when released)."""
        return bool(self._lib.fk_lease_lost(self._handle))

    @property
    def loss_reason(self) -> Optional[LossReason]:
        """Why the lease was lost, once :attr:`lost`; None before (and once released)."""
        reason = self._lib.fk_lease_loss_reason(self._handle)
        return None if reason < 0 else _loss_reason(reason)

    def check(self) -> float:
        """Asks the sidecar whether the lease still holds; returns how many seconds it stays
        valid. Raises :class:`~fencekeeper.Lost`, ``Expired`` or ``NotHeld`` otherwise."""
        valid_ms = ctypes.c_int64()
        err = _native.Error()
        _check(self._lib.fk_lease_check(self._handle, None, ctypes.byref(valid_ms),
                                        ctypes.byref(err)), err)
        return valid_ms.value / 1000.0

    def renew(self, ttl: Optional[Seconds] = None) -> float:
        """Extends the lease to ``ttl`` seconds from now (None: the TTL it was acquired or last
        renewed with); returns the seconds it is now valid for."""
        ttl_ms = 0 if ttl is None else _millis(ttl, "ttl", allow_zero=False)
        err = _native.Error()
        _check(self._lib.fk_lease_renew(self._handle, ttl_ms, ctypes.byref(err)), err)
        return self.valid_for

    def check_in(self) -> None:
        """Tells keep-alive that the application is alive: with ``renew_only_if_checked_in``,
        keep-alive renews only if this was called since its previous renew."""
        self._lib.fk_lease_check_in(self._handle)

    def set_keep_alive(self, on: bool) -> None:
        """Starts or stops keep-alive: renewing the lease from the client's I/O thread."""
        err = _native.Error()
        _check(self._lib.fk_lease_set_keep_alive(self._handle, 1 if on else 0,
                                                 ctypes.byref(err)), err)

    def release(self) -> None:
        """Releases the lease: the next in line gets the lock. Raises ``NotHeld`` if released
        already, ``Lost``/``Expired`` if it was lost."""
        err = _native.Error()
        _check(self._lib.fk_lease_release(self._handle, ctypes.byref(err)), err)

    def __enter__(self) -> Lease:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            self.release()
        except NotHeld:
            pass  # released inside the block
        except Exception:
            if exc_type is None:
                raise
            # The block's own exception is the one to report, unless the loss interrupted it.
            if exc_type is KeyboardInterrupt and self._loss.interrupted:
                raise self._loss_error() from exc

    def __del__(self) -> None:
        handle = getattr(self, "_handle", None)
        if handle is not None:
            _free_lease(self._lib, handle)

    def __repr__(self) -> str:
        state = "lost" if self.lost else "valid for %.3f s" % self.valid_for
        return "<fencekeeper.Lease %r token=%d %s>" % (self._name, self._token, state)


def _free_lease(lib: ctypes.CDLL, handle: ctypes.c_void_p) -> None:
    """Frees (and so releases) the lease behind ``handle`` once, whoever shares the handle."""
    value, handle.value = handle.value, None
    if value:
        lib.fk_lease_free(value)


class _LossHook:
    """What a lease's loss does on the client's I/O thread: sets ``event``, interrupts the main
    thread if asked (``KeyboardInterrupt`` there, turned into the typed loss by the ``with``
    block), then calls the caller's ``on_lost``."""

    def __init__(self, on_lost: Optional[LostCallback], interrupt_main: bool,
                 on_risk: Optional[RiskCallback]) -> None:
        self.event = threading.Event()
        self.interrupted = False

        # (The C library calls these until the lease handle is freed: they live as long. No
        # on_risk, no trampoline: a jeopardy push then costs the I/O thread no trip into Python.)
        self.risk_callback = None
        if on_risk is not None:
            def risk(_user_data: Optional[int], token: int, at_risk: int, left_ms: int) -> None:
                on_risk(token, bool(at_risk), left_ms / 1000.0)
            self.risk_callback = _native.RiskFn(risk)

        def trampoline(_user_data: Optional[int], token: int, reason: int) -> None:
            self.event.set()
            if interrupt_main:
                self.interrupted = True
                _thread.interrupt_main()
            if on_lost is not None:
                on_lost(token, _loss_reason(reason))
        self.callback = _native.LostFn(trampoline)


class _Request:
    """An acquire under way (fk_acquire_start), used as a context manager: waited for and taken
    inside; an exception out of the block withdraws it, and leaving frees it. A grant is held in
    ``_lease`` (shared with the Lease it becomes) until taken, so an exception at any point leaves
    nothing held."""

    def __init__(self, client: Client, handle: ctypes.c_void_p, name: str,
                 loss: _LossHook) -> None:
        self._client = client
        self._lib = client._lib
        self._handle = handle
        self._name = name
        self._loss = loss
        self._lease = ctypes.c_void_p()

    @property
    def fd(self) -> int:
        return int(self._lib.fk_request_fd(self._handle))

    def wait(self, timeout_ms: int) -> bool:
        """True once granted (the lease is in hand), False while in progress; raises why it
        failed otherwise."""
        err = _native.Error()
        code = self._lib.fk_request_wait(self._handle, timeout_ms, ctypes.byref(self._lease),
                                         ctypes.byref(err))
        if code == ErrorCode.IN_PROGRESS:
            return False
        _check(code, err)
        return True

    def take(self) -> Lease:
        lease = Lease(self._client, self._lease, self._name, self._loss)
        self._lease = ctypes.c_void_p()  # the Lease owns it now
        return lease

    def __enter__(self) -> _Request:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None:  # withdraw, and release a grant it got but nobody took
            self._lib.fk_request_cancel(self._handle)
            _free_lease(self._lib, self._lease)
        handle, self._handle = self._handle, None
        self._lib.fk_request_free(handle)  # releases a grant no wait took


class Client:
    """A connection to the pod's fencekeeper sidecar, with its own I/O thread (which renews
    leases and runs ``on_lost`` callbacks).

    ``socket``: the sidecar's Unix socket; None: ``$FENCEKEEPER_SOCKET``, else
    ``/run/fencekeeper/fencekeeper.sock`` (in its subdirectory ``<name>.d/`` when the socket's
    directory is writable by others, as the sidecar does). Raises
    :class:`~fencekeeper.SidecarUnavailable` when it cannot connect, or when the process serving
    the socket fails the check of who it is (docs/security.md "Who may connect"): by default its
    uid must own the socket file, in a directory no one else can write, and where that directory
    sits in one others can write (a Kubernetes emptyDir, /tmp), be root or this process's uid.

    ``expect_uid``: the uid the sidecar must run as, checked instead (None:
    ``$FENCEKEEPER_EXPECT_UID`` if set, else the default rule).

    Use it as a context manager or call :meth:`close`. Every method is safe from any thread.
    """

    def __init__(self, socket: Union[str, os.PathLike, None] = None,
                 expect_uid: Optional[int] = None) -> None:
        self._lib = _native.lib()
        self._mutex = threading.Lock()
        self._calls = 0  # calls in progress: closing waits for none of them (see close)
        self._closed = False
        handle = ctypes.c_void_p()
        err = _native.Error()
        path = None if socket is None else os.fsencode(socket)
        options = _native.ConnectOptions()
        self._lib.fk_connect_options_init(ctypes.byref(options))
        if expect_uid is not None:
            if isinstance(expect_uid, bool) or not isinstance(expect_uid, int) or \
                    not 0 <= expect_uid < _UINT32_MAX:
                raise InvalidArgument("expect_uid must be a uid, not %r" % (expect_uid,))
            options.expect_uid = expect_uid
        _check(self._lib.fk_connect_with(path, ctypes.byref(options), ctypes.byref(handle),
                                         ctypes.byref(err)), err)
        self._handle = handle
        _open_clients.add(self)

    def acquire(self, name: str, ttl: Seconds = 30, wait: Seconds = 0, owner: Optional[str] = None,
                keep_alive: bool = True, renew_only_if_checked_in: bool = False,
                on_lost: Optional[LostCallback] = None, shared: bool = False,
                permits: Optional[int] = None, interrupt_main: bool = False,
                on_risk: Optional[RiskCallback] = None) -> Lease:
        """Queues for the lock ``name`` and blocks until it is granted (also available as
        :meth:`lock`, which reads best in a ``with`` statement).

        :param ttl: the lease's TTL in seconds.
        :param wait: how long to queue for the lock in seconds; 0 tries once. A grant lost or
            expired before it could be returned (the process was stopped, say) is dropped
            without ``on_lost`` and the lock queued for again within what is left of ``wait``.
        :param owner: a label that holder queries show (``fencectl holder``).
        :param keep_alive: renew from the client's I/O thread while the process lives, three
            times per validity granted (the TTL, or less when the sidecar can vouch for its
            ZooKeeper session for less).
        :param renew_only_if_checked_in: keep-alive renews only if :meth:`Lease.check_in` was
            called since its previous renew, so a hung application loses its lease.
        :param on_lost: ``on_lost(token, reason)``, called once on the client's I/O thread when
            the lease is lost (not when released). Keep it short; calling the client or the
            lease from it raises :class:`~fencekeeper.WrongThread`.
        :param shared: share the lock with other shared holders (a read lock; kazoo's
            ``ReadLock`` on the same path shares with it, a ``WriteLock`` excludes it).
        :param permits: hold one of at most ``permits`` leases on ``name`` (a semaphore; also
            :meth:`semaphore`). Each permit has its own token, TTL and loss.
        :param interrupt_main: on a loss, interrupt the main thread (``KeyboardInterrupt`` raised
            there, wherever it is in Python code), which the lease's ``with`` block turns into the
            typed loss (:class:`Lost` or :class:`Expired`, with its ``reason``). Without it, a
            loss shows in ``lost``, ``lost_event``, ``loss_fd`` and ``on_lost``.
        :param on_risk: ``on_risk(token, at_risk, left)``, called on the client's I/O thread
            when the sidecar's ZooKeeper connection is down (or its heartbeats overdue) while the
            lease still stands (``at_risk`` True, ``left`` the seconds it stands at most unless
            the connection returns: checkpoint now), and when it came back in time (False, 0).
        :raises TimedOut: not granted within ``wait`` (``wait=0``: someone holds it).
        :raises InvalidName: the name is malformed.
        :raises ModeConflict: ``name`` is used in another mode (a semaphore of another N, or a
            lock where a semaphore is asked for, or the reverse).

        An exception while it waits (Ctrl-C's ``KeyboardInterrupt`` lands within 100 ms)
        withdraws the request, and a grant that crossed it is released: nothing stays held.
        """
        with self._start(name, ttl, wait, owner, keep_alive, renew_only_if_checked_in,
                         on_lost, _mode(shared, permits), interrupt_main, on_risk) as request:
            # Short slices, so that a signal (Ctrl-C) is handled within 100 ms: a C call that
            # waits does not return to Python for the handler to run.
            while not request.wait(_WAIT_SLICE_MS):
                pass
            return request.take()

    async def acquire_async(self, name: str, ttl: Seconds = 30, wait: Seconds = 0,
                            owner: Optional[str] = None, keep_alive: bool = True,
                            renew_only_if_checked_in: bool = False,
                            on_lost: Optional[LostCallback] = None, shared: bool = False,
                            permits: Optional[int] = None, interrupt_main: bool = False,
                            on_risk: Optional[RiskCallback] = None) -> Lease:
        """:meth:`acquire` for asyncio: the event loop watches the request instead of a thread
        blocking on it. Cancelling the task (``asyncio.wait_for``, ``task.cancel()``) withdraws
        the request; a grant that crossed the cancel is released, never left held."""
        loop = asyncio.get_running_loop()
        done = loop.create_future()

        def ready() -> None:
            if not done.done():
                done.set_result(None)

        with self._start(name, ttl, wait, owner, keep_alive, renew_only_if_checked_in,
                         on_lost, _mode(shared, permits), interrupt_main, on_risk) as request:
            fd = request.fd
            loop.add_reader(fd, ready)
            try:
                await done
                if not request.wait(0):
                    raise InternalError("the acquire's fd was readable before it was done")
                return request.take()
            finally:
                loop.remove_reader(fd)  # before the request (and its fd) is freed

    def _start(self, name: str, ttl: Seconds, wait: Seconds, owner: Optional[str],
               keep_alive: bool, renew_only_if_checked_in: bool,
               on_lost: Optional[LostCallback], mode: Tuple[LockMode, int],
               interrupt_main: bool = False,
               on_risk: Optional[RiskCallback] = None) -> _Request:
        options = _native.AcquireOptions()
        self._lib.fk_acquire_options_init(ctypes.byref(options))
        options.ttl_ms = _millis(ttl, "ttl", allow_zero=False)
        options.wait_ms = _millis(wait, "wait", allow_zero=True)
        encoded_name = _c_text(name, "lock name", InvalidName)
        options.owner_label = None if owner is None else _c_text(owner, "owner", InvalidOwner)
        options.keep_alive = 1 if keep_alive else 0
        options.renew_only_if_checked_in = 1 if renew_only_if_checked_in else 0
        options.mode, options.permits = int(mode[0]), mode[1]
        if interrupt_main and not callable(signal.getsignal(signal.SIGINT)):
            # _thread.interrupt_main() does nothing then: the loss would interrupt nobody.
            raise InvalidArgument("interrupt_main needs SIGINT handled by Python; it is %s in "
                                  "this process (signal.signal(signal.SIGINT, "
                                  "signal.default_int_handler) restores it)" %
                                  ("ignored" if signal.getsignal(signal.SIGINT) == signal.SIG_IGN
                                   else "at its default"))
        loss = _LossHook(on_lost, interrupt_main, on_risk)
        options.on_lost = loss.callback
        if loss.risk_callback is not None:
            options.on_risk = loss.risk_callback
        handle = ctypes.c_void_p()
        err = _native.Error()
        with self._in_call() as client:
            code = self._lib.fk_acquire_start(client, encoded_name, ctypes.byref(options),
                                              ctypes.byref(handle), ctypes.byref(err))
        _check(code, err)
        return _Request(self, handle, name, loss)

    lock = acquire

    def semaphore(self, name: str, permits: int, **kwargs: Any) -> Lease:
        """One of at most ``permits`` leases on ``name``: :meth:`acquire` with ``permits``."""
        return self.acquire(name, permits=permits, **kwargs)

    def holder(self, name: str) -> HolderInfo:
        """Who holds the lock ``name`` (through any sidecar, or a kazoo client)."""
        encoded_name = _c_text(name, "lock name", InvalidName)
        info = _native.HolderInfo()
        info.size = ctypes.sizeof(info)
        err = _native.Error()
        with self._in_call() as handle:
            code = self._lib.fk_holder(handle, encoded_name, ctypes.byref(info),
                                       ctypes.byref(err))
        _check(code, err)
        return _holder_info(info)

    def watch_holder(self, name: str) -> "HolderWatch":
        """Who holds ``name`` now, then each change, pushed by the sidecar from its one ZooKeeper
        watch of the lock: iterate the returned :class:`~fencekeeper.HolderWatch` (``for change
        in client.watch_holder("x")``), and close it (or leave its ``with`` block) to stop.
        Changes may be coalesced; a token is never lower than one reported before.
        ``HolderState.UNKNOWN`` while the sidecar cannot vouch for its session or the connection
        is down (the watch resumes after a reconnect). Hints, never a fence."""
        from .holders import HolderWatch
        return HolderWatch(self, name)

    def election(self, name: str, owner: str, ttl: Seconds = 30) -> "Election":
        """Leader election on ``name``'s queue, as ``owner``: see :class:`~fencekeeper.Election`."""
        from .holders import Election
        return Election(self, name, owner, ttl)

    def status(self) -> Dict[str, Any]:
        """The sidecar's state: the document its status socket serves at ``GET /status``
        (Cap'n Proto's JSON of the schema's ``Status``, ipc/fencekeeper.capnp), parsed. Keys are
        the schema's field names (``zkState``, ``safeForMs``, ``leases``, ``waiterList``,
        ``ready``, ...); 64-bit numbers (tokens, ``uptimeMs``, ``grantsTotal``, ...) are
        strings, as the codec writes them: ``int(lease["token"])``."""
        text = ctypes.c_void_p()
        err = _native.Error()
        with self._in_call() as handle:
            code = self._lib.fk_status_json(handle, ctypes.byref(text), ctypes.byref(err))
        _check(code, err)
        try:
            return json.loads(ctypes.string_at(text).decode("utf-8"))
        finally:
            self._lib.fk_free(text)

    def uses_lease_table(self) -> Tuple[bool, str]:
        """Whether :meth:`Lease.valid_for` reads the sidecar's shared-memory lease table (no
        round trip, and a loss the sidecar decides shows at once), with the table's path or why
        it is not read."""
        detail = ctypes.create_string_buffer(512)
        with self._in_call() as handle:
            uses = self._lib.fk_client_uses_lease_table(handle, detail, len(detail))
        return bool(uses), detail.value.decode("utf-8", "replace")

    def table_shows_valid(self, name: str, token: int) -> bool:
        """Advisory, for a process without the lease: whether the sidecar's lease table shows
        ``name`` held with ``token`` and valid now. A check followed by a write can race a loss:
        the storage's token check is the fence. Raises ``NotHeld`` when there is no table."""
        encoded_name = _c_text(name, "lock name", InvalidName)
        valid = ctypes.c_int()
        err = _native.Error()
        with self._in_call() as handle:
            code = self._lib.fk_lease_table_shows_valid(handle, encoded_name, token,
                                                        ctypes.byref(valid), ctypes.byref(err))
        _check(code, err)
        return bool(valid.value)

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def connected(self) -> bool:
        """False from a drop of the connection to the sidecar (every lease of it is then lost,
        with ``LossReason.CONNECTION_LOST``) until the client reconnected by itself (it keeps
        trying; calls meanwhile raise ``SidecarUnavailable``), and once closed."""
        with self._mutex:
            if self._closed:
                return False
            return bool(self._lib.fk_client_connected(self._handle))

    def close(self) -> None:
        """Closes the connection; the leases still held through it are released (without
        ``on_lost``) and their objects then report a released lease. Does not wait for calls in
        progress on other threads: the last of them to return completes the close."""
        with self._mutex:
            if self._closed:
                return
            self._closed = True
            if self._calls:
                return
        self._close_handle()

    def _close_handle(self) -> None:
        handle, self._handle = self._handle, None
        self._lib.fk_client_close(handle)

    @contextlib.contextmanager
    def _in_call(self) -> Iterator[ctypes.c_void_p]:
        """Counts a call in progress (the handle must outlive it) and yields the handle."""
        with self._mutex:
            if self._closed:
                raise SidecarUnavailable("the client is closed")
            self._calls += 1
        try:
            yield self._handle
        finally:
            with self._mutex:
                self._calls -= 1
                last = self._closed and self._calls == 0
            if last:
                self._close_handle()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.close()

    def __del__(self) -> None:
        if getattr(self, "_handle", None):
            self.close()

    def __repr__(self) -> str:
        return "<fencekeeper.Client %s>" % ("closed" if self._closed else "open")


# Clients still open at exit are closed before the interpreter finalizes, so that no I/O thread
# calls into Python (on_lost) while it is being torn down.
_open_clients: "weakref.WeakSet[Client]" = weakref.WeakSet()


@atexit.register
def _close_open_clients() -> None:
    for client in list(_open_clients):
        client.close()
