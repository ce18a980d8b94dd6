"""Error codes, loss reasons and the exceptions that mirror them (values as in fencekeeper.h)."""
from __future__ import annotations

import enum
from typing import Dict, Optional, Type, Union


class ErrorCode(enum.IntEnum):
    """Outcome of a call: the sidecar's schema (enum Error) plus the client's own (100 and up)."""

    OK = 0
    INVALID_NAME = 1
    INVALID_ARGUMENT = 2
    TIMED_OUT = 3
    NOT_HELD = 4
    EXPIRED = 5
    LOST = 6
    ZK_UNAVAILABLE = 7
    SHUTTING_DOWN = 8
    LIMIT_REACHED = 9
    INTERNAL = 10
    PERMISSION_DENIED = 11
    INVALID_OWNER = 12
    MODE_CONFLICT = 13
    SIDECAR_UNAVAILABLE = 100
    WRONG_THREAD = 101
    CANCELLED = 102
    IN_PROGRESS = 103


class LossReason(enum.IntEnum):
    """Why a lease was lost (the second argument of an ``on_lost`` callback)."""

    TTL_EXPIRED = 0  #: not renewed in time
    SESSION_LOST = 1  #: the sidecar's ZooKeeper session expired
    SESSION_UNCERTAIN = 2  #: the sidecar cannot prove its session is alive
    SIDECAR_SHUTDOWN = 3  #: the sidecar is stopping
    RELEASED_ELSEWHERE = 4  #: the lock node was deleted by another path
    CONNECTION_LOST = 100  #: this client's connection to the sidecar dropped
    RENEW_FAILED = 101  #: a keep-alive renew was answered with an error


class FencekeeperError(Exception):
    """Base of every fencekeeper error. ``code`` is an :class:`ErrorCode` (an int when the
    library returned a code this package does not know)."""

    code: Union[ErrorCode, int] = ErrorCode.INTERNAL

    def __init__(self, message: str, code: Union[ErrorCode, int, None] = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code
        self.message = message


class InvalidName(FencekeeperError, ValueError):
    """The lock name is malformed; it never reached ZooKeeper. Do not retry it as is."""

    code = ErrorCode.INVALID_NAME


class InvalidArgument(FencekeeperError, ValueError):
    """An argument is out of bounds (e.g. a TTL outside the sidecar's limits)."""

    code = ErrorCode.INVALID_ARGUMENT


class TimedOut(FencekeeperError, TimeoutError):
    """The lock was not granted within ``wait`` (``wait=0``: someone else holds it)."""

    code = ErrorCode.TIMED_OUT


class NotHeld(FencekeeperError):
    """The lease was released already."""

    code = ErrorCode.NOT_HELD


class Lost(FencekeeperError):
    """The lease was lost: stop the work in hand, another holder may have a larger token.
    ``reason`` is the :class:`LossReason` when the loss itself raised it (a cancelled ``async
    with`` body, an interrupted ``with`` body), else None."""

    code = ErrorCode.LOST
    reason: Optional["LossReason"] = None


class Expired(Lost):
    """The lease's TTL ran out before a renew: it is lost (a :class:`Lost`)."""

    code = ErrorCode.EXPIRED


class ZkUnavailable(FencekeeperError):
    """The sidecar cannot reach ZooKeeper now: retry later."""

    code = ErrorCode.ZK_UNAVAILABLE


class ShuttingDown(FencekeeperError):
    """The sidecar is stopping."""

    code = ErrorCode.SHUTTING_DOWN


class LimitReached(FencekeeperError):
    """Too many leases or waiters on this sidecar or connection."""

    code = ErrorCode.LIMIT_REACHED


class InternalError(FencekeeperError):
    """A bug in the sidecar or the library: report it."""

    code = ErrorCode.INTERNAL


class PermissionDenied(FencekeeperError, PermissionError):
    """This peer may not use the sidecar (allow-list), or ZooKeeper refused an ACL."""

    code = ErrorCode.PERMISSION_DENIED


class InvalidOwner(FencekeeperError, ValueError):
    """The owner label is not valid UTF-8, holds a control character or is too long. Do not
    retry it as is."""

    code = ErrorCode.INVALID_OWNER


class ModeConflict(FencekeeperError, ValueError):
    """The lock's queue holds requests of a mode that never shares it with this one (a
    semaphore's permits and a lock's nodes, or permits of another N): the message names both.
    Do not retry it as is."""

    code = ErrorCode.MODE_CONFLICT


class SidecarUnavailable(FencekeeperError, ConnectionError):
    """Cannot connect to the sidecar, the connection dropped, or the client is closed."""

    code = ErrorCode.SIDECAR_UNAVAILABLE


class WrongThread(FencekeeperError):
    """Called from an ``on_lost`` callback, which runs on the client's I/O thread."""

    code = ErrorCode.WRONG_THREAD


class Cancelled(FencekeeperError):
    """The acquire was cancelled before a grant reached the caller (nothing is held)."""

    code = ErrorCode.CANCELLED


_BY_CODE: Dict[int, Type[FencekeeperError]] = {
    cls.code: cls
    for cls in (InvalidName, InvalidArgument, TimedOut, NotHeld, Expired, Lost, ZkUnavailable,
                ShuttingDown, LimitReached, InternalError, PermissionDenied, InvalidOwner,
                ModeConflict, SidecarUnavailable,
                WrongThread, Cancelled)
}


def error_for(code: int, message: str) -> FencekeeperError:
    """The exception for a non-OK code returned by the C ABI."""
    cls = _BY_CODE.get(code)
    if cls is not None:
        return cls(message)
    return FencekeeperError(message, code)
