"""Finds libfencekeeper.so and declares its C ABI (client_lib/include/fencekeeper.h) for ctypes.

The library is looked for in order: $FENCEKEEPER_LIB (a path, used alone when set), next to
this package, in a directory above it (the prefix's lib/ of a `cmake --install`), the build tree ($FK_BUILD_DIR or <repo>/build, when running from the source tree),
then the system loader. It is loaded on first use, so importing the package never fails.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading
from pathlib import Path
from typing import Iterator, List, Optional

LIB_FILE = "libfencekeeper.so"
MESSAGE_MAX = 256
OWNER_LABEL_MAX = 256


class Error(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("message", ctypes.c_char * MESSAGE_MAX)]


class ConnectOptions(ctypes.Structure):
    _fields_ = [("size", ctypes.c_size_t), ("expect_uid", ctypes.c_int64)]


LostFn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_int)
# on_risk(user_data, token, at_risk, left_ms) of fk_acquire_options
RiskFn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_int, ctypes.c_uint32)


class AcquireOptions(ctypes.Structure):
    _fields_ = [
        ("size", ctypes.c_size_t),
        ("ttl_ms", ctypes.c_uint32),
        ("wait_ms", ctypes.c_uint32),
        ("owner_label", ctypes.c_char_p),
        ("keep_alive", ctypes.c_int),
        ("renew_only_if_checked_in", ctypes.c_int),
        ("exit_on_loss", ctypes.c_int),
        ("on_lost", LostFn),
        ("user_data", ctypes.c_void_p),
        ("mode", ctypes.c_int),
        ("permits", ctypes.c_uint32),
        ("on_risk", RiskFn),
    ]


HOLDERS_LISTED = 16


class HolderEntry(ctypes.Structure):
    _fields_ = [
        ("token", ctypes.c_uint64),
        ("mode", ctypes.c_int),
        ("permits", ctypes.c_uint32),
        ("since_unix_ms", ctypes.c_int64),
        ("this_sidecar", ctypes.c_int),
        ("owner_label", ctypes.c_char * (OWNER_LABEL_MAX + 1)),
    ]


class HolderInfo(ctypes.Structure):
    _fields_ = [
        ("size", ctypes.c_size_t),
        ("held", ctypes.c_int),
        ("token", ctypes.c_uint64),
        ("owner_label", ctypes.c_char * (OWNER_LABEL_MAX + 1)),
        ("since_unix_ms", ctypes.c_int64),
        ("waiters", ctypes.c_uint32),
        ("this_sidecar", ctypes.c_int),
        ("holder_count", ctypes.c_uint32),
        ("holders_listed", ctypes.c_uint32),
        ("holders", HolderEntry * HOLDERS_LISTED),
    ]


# on_change(user_data, state, info, detail) of fk_watch_holder
HolderFn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(HolderInfo),
                            ctypes.c_char_p)

_P = ctypes.c_void_p  # fk_client*, fk_lease*, fk_request* and fk_holder_watch*: opaque
_ERR = ctypes.POINTER(Error)

_PROTOTYPES = {
    "fk_connect": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(_P), _ERR]),
    "fk_connect_options_init": (None, [ctypes.POINTER(ConnectOptions)]),
    "fk_connect_with": (ctypes.c_int,
                        [ctypes.c_char_p, ctypes.POINTER(ConnectOptions), ctypes.POINTER(_P), _ERR]),
    "fk_client_close": (None, [_P]),
    "fk_acquire_options_init": (None, [ctypes.POINTER(AcquireOptions)]),
    "fk_acquire": (ctypes.c_int,
                   [_P, ctypes.c_char_p, ctypes.POINTER(AcquireOptions), ctypes.POINTER(_P), _ERR]),
    "fk_acquire_start": (ctypes.c_int, [_P, ctypes.c_char_p, ctypes.POINTER(AcquireOptions),
                                        ctypes.POINTER(_P), _ERR]),
    "fk_request_cancel": (None, [_P]),
    "fk_request_fd": (ctypes.c_int, [_P]),
    "fk_request_wait": (ctypes.c_int, [_P, ctypes.c_int64, ctypes.POINTER(_P), _ERR]),
    "fk_request_free": (None, [_P]),
    "fk_lease_name": (ctypes.c_char_p, [_P]),
    "fk_lease_token": (ctypes.c_uint64, [_P]),
    "fk_lease_valid_for_ms": (ctypes.c_int64, [_P]),
    "fk_lease_lost": (ctypes.c_int, [_P]),
    "fk_lease_loss_fd": (ctypes.c_int, [_P]),
    "fk_lease_at_risk": (ctypes.c_int, [_P]),
    "fk_client_loss_fd": (ctypes.c_int, [_P]),
    "fk_lease_loss_reason": (ctypes.c_int, [_P]),
    "fk_client_connected": (ctypes.c_int, [_P]),
    "fk_client_uses_lease_table": (ctypes.c_int, [_P, ctypes.c_char_p, ctypes.c_size_t]),
    "fk_lease_table_shows_valid": (ctypes.c_int, [_P, ctypes.c_char_p, ctypes.c_uint64,
                                                  ctypes.POINTER(ctypes.c_int), _ERR]),
    "fk_lease_check": (ctypes.c_int,
                       [_P, ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_int64), _ERR]),
    "fk_lease_renew": (ctypes.c_int, [_P, ctypes.c_uint32, _ERR]),
    "fk_lease_check_in": (None, [_P]),
    "fk_lease_set_keep_alive": (ctypes.c_int, [_P, ctypes.c_int, _ERR]),
    "fk_lease_release": (ctypes.c_int, [_P, _ERR]),
    "fk_lease_free": (None, [_P]),
    "fk_holder": (ctypes.c_int, [_P, ctypes.c_char_p, ctypes.POINTER(HolderInfo), _ERR]),
    "fk_watch_holder": (ctypes.c_int, [_P, ctypes.c_char_p, HolderFn, ctypes.c_void_p,
                                       ctypes.POINTER(_P), _ERR]),
    "fk_holder_watch_free": (None, [_P]),
    # The text is the library's (a void pointer, not c_char_p, which would copy and lose it).
    "fk_status_json": (ctypes.c_int, [_P, ctypes.POINTER(ctypes.c_void_p), _ERR]),
    "fk_free": (None, [ctypes.c_void_p]),
    "fk_error_name": (ctypes.c_char_p, [ctypes.c_int]),
    "fk_loss_reason_name": (ctypes.c_char_p, [ctypes.c_int]),
}

_lib: Optional[ctypes.CDLL] = None
_lock = threading.Lock()


def _candidates() -> Iterator[str]:
    explicit = os.environ.get("FENCEKEEPER_LIB")
    if explicit:
        yield explicit
        return
    here = Path(__file__).resolve().parent
    yield str(here / LIB_FILE)
    # Installed under a prefix (PREFIX/lib/python3/dist-packages/fencekeeper): PREFIX/lib.
    for parent in here.parents:
        if (parent / LIB_FILE).exists():
            yield str(parent / LIB_FILE)
    repo = here.parent.parent.parent  # from <repo>/client_lib/python/fencekeeper
    builds = [os.environ.get("FK_BUILD_DIR"), str(repo / "build")]
    for build in filter(None, builds):
        yield str(Path(build) / "client_lib" / LIB_FILE)
    yield ctypes.util.find_library("fencekeeper") or LIB_FILE


def _load() -> ctypes.CDLL:
    tried: List[str] = []
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append(path + " (missing)")
            continue
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
            continue
        for name, (restype, argtypes) in _PROTOTYPES.items():
            fn = getattr(lib, name)
            fn.restype = restype
            fn.argtypes = argtypes
        return lib
    raise OSError("fencekeeper: cannot load %s; set FENCEKEEPER_LIB to its path. Tried: %s" %
                  (LIB_FILE, "; ".join(tried)))


def lib() -> ctypes.CDLL:
    """The loaded library, its functions declared (loads it on the first call)."""
    global _lib
    with _lock:
        if _lib is None:
            _lib = _load()
        return _lib
