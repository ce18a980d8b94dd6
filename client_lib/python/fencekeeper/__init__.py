"""fencekeeper: fenced leases on named locks from the pod's fencekeeper sidecar.

    import fencekeeper

    with fencekeeper.Client() as client:              # $FENCEKEEPER_SOCKET or the default
        with client.lock("reconcile", ttl=30) as lease:
            store.write(data, fence_token=lease.token)

With asyncio, ``AsyncClient``: ``async with client.lock("reconcile", ttl=30) as lease:``.
Who holds a lock, as it changes: ``client.watch_holder(name)``; leader election:
``client.election(name, owner)``.

Loss is fatal to the work in hand: once a lease is lost, another process may hold the lock with
a larger token; stop at once. Storage that checks tokens rejects what a stale holder sends.

Durations are seconds (int, float or timedelta). The package is pure Python over the C ABI of
libfencekeeper.so (ctypes), found through $FENCEKEEPER_LIB, next to this package, the build
tree, or the system loader.
"""
from .aio import AsyncClient
from .client import (Client, Holder, HolderInfo, Lease, LockMode, LostCallback, RiskCallback,
                     Seconds)
from .holders import AsyncHolderWatch, Election, HolderChange, HolderState, HolderWatch
from .errors import (Cancelled, ErrorCode, Expired, FencekeeperError, InternalError, InvalidArgument,
                     InvalidName, InvalidOwner, LimitReached, LossReason, Lost, ModeConflict, NotHeld,
                     PermissionDenied,
                     ShuttingDown, SidecarUnavailable, TimedOut, WrongThread, ZkUnavailable)

__version__ = "0.1.0"

__all__ = [
    "Client", "AsyncClient", "Lease", "Holder", "HolderInfo", "LockMode", "ModeConflict", "HolderChange", "HolderState", "HolderWatch",
    "AsyncHolderWatch", "Election", "LostCallback", "RiskCallback", "Seconds", "ErrorCode", "LossReason",
    "FencekeeperError", "InvalidName", "InvalidArgument", "TimedOut", "NotHeld", "Expired",
    "Lost", "ZkUnavailable", "ShuttingDown", "LimitReached", "InternalError", "PermissionDenied",
    "InvalidOwner", "SidecarUnavailable", "WrongThread", "Cancelled",
]
