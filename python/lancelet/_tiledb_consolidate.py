"""Consolidation and vacuuming of TileDB arrays with tiledb-py's names and
config keys (``lancelet.tiledb.consolidate`` / ``vacuum``).

The mode comes from ``mode=``, else from ``config["sm.consolidation.mode"]``
(``config["sm.vacuum.mode"]`` for vacuum), else "fragments", as in TileDB.
The Rust core writes the files TileDB writes (``.con``, ``.meta``,
``.ign``) and removes what TileDB removes; see docs/tiledb.md.
"""

from __future__ import annotations

import os
import warnings
from typing import Any, Dict, Mapping, Optional, Sequence

from lancelet import _native
from lancelet.exceptions import InvalidInputError

MODES = ("fragments", "commits", "fragment_meta", "array_meta")


def _mode(mode: Optional[str], config: Optional[Mapping[str, Any]], key: str) -> str:
    if mode is None and config is not None:
        mode = dict(config.items()).get(key) if hasattr(config, "items") else None
    mode = "fragments" if mode is None else mode
    if not isinstance(mode, str):
        raise InvalidInputError(f"mode must be a string, got {type(mode).__name__}")
    return mode


def _range(timestamp: Any) -> tuple:
    if timestamp is None:
        return 0, 2**64 - 1
    if isinstance(timestamp, (tuple, list)) and len(timestamp) == 2:
        start = 0 if timestamp[0] is None else int(timestamp[0])
        end = 2**64 - 1 if timestamp[1] is None else int(timestamp[1])
    elif isinstance(timestamp, int) and not isinstance(timestamp, bool):
        start, end = 0, timestamp
    else:
        raise InvalidInputError(f"timestamp must be an end or (start, end) in milliseconds, got {timestamp!r}")
    if start < 0 or end < 0 or start > end:
        raise InvalidInputError(f"timestamp range {timestamp!r} is not (start <= end), non-negative")
    return start, end


def consolidate(uri: str, *, mode: Optional[str] = None, timestamp: Any = None,
                config: Optional[Mapping[str, Any]] = None,
                fragment_uris: Optional[Sequence[str]] = None,
                storage_options: Optional[Dict[str, str]] = None) -> str:
    """Consolidate the array at ``uri`` as ``tiledb.consolidate`` does.
    ``mode``: "fragments" (the fragments of the ``timestamp`` range, an end
    or ``(start, end)`` in ms, merged into one, newest cells winning, and a
    ``.vac`` naming the merged ones; ``config["sm.consolidation.amplification"]``
    bounds a dense merge's box), "commits" (one ``__commits/*.con`` listing
    every commit), "fragment_meta" (one ``__fragment_meta/*.meta`` holding
    every visible fragment's footer) or "array_meta" (the ``__meta/`` files
    of the ``timestamp`` range merged into one, plus a ``.vac``).
    ``fragment_uris``: merge exactly these fragments (names, or URIs under
    ``__fragments/``; ``timestamp`` is then ignored with a
    ``DeprecationWarning``, as in tiledb-py). Returns ``uri``, as tiledb-py
    does."""
    if fragment_uris is not None:
        if isinstance(fragment_uris, (str, bytes)) or not all(isinstance(f, (str, os.PathLike)) for f in fragment_uris):
            raise InvalidInputError("fragment_uris must be a list of fragment names or URIs")
        if timestamp is not None:
            warnings.warn("The `timestamp` argument will be ignored and only fragments passed to "
                          "`fragment_uris` will be consolidated", DeprecationWarning, stacklevel=2)
        opts = {str(k): str(v) for k, v in (storage_options or {}).items()}
        _native.tiledb_consolidate_fragment_list(str(uri), [os.fspath(f) for f in fragment_uris], opts)
        return str(uri)
    m = _mode(mode, config, "sm.consolidation.mode")
    cfg = dict(config.items()) if config is not None and hasattr(config, "items") else {}
    start, end = _range(timestamp)
    if timestamp is None:
        start = int(cfg.get("sm.consolidation.timestamp_start", start))
        end = int(cfg.get("sm.consolidation.timestamp_end", end))
    try:
        amplification = float(cfg.get("sm.consolidation.amplification", 1.0))
    except (TypeError, ValueError):
        raise InvalidInputError("sm.consolidation.amplification must be a number") from None
    opts = {str(k): str(v) for k, v in (storage_options or {}).items()}
    _native.tiledb_consolidate(str(uri), m, start, end, amplification, opts)
    return str(uri)


def vacuum(uri: str, *, mode: Optional[str] = None, timestamp: Any = None,
           config: Optional[Mapping[str, Any]] = None,
           storage_options: Optional[Dict[str, str]] = None) -> str:
    """Vacuum the array at ``uri`` as ``tiledb.vacuum`` does. ``mode``:
    "fragments" (remove the fragments ``.vac`` files name, writing an
    ``.ign`` first when a ``.con`` lists their commits), "commits" (remove
    commit files a ``.con`` lists, and the ``.con``/``.ign`` files a
    complete ``.con`` replaces), "fragment_meta" (keep only the latest
    ``.meta``) or "array_meta" (the ``__meta/`` files ``.vac`` files list,
    then those ``.vac`` files). ``timestamp`` limits fragment vacuuming to ``.vac`` files of
    that range. Returns ``uri``."""
    m = _mode(mode, config, "sm.vacuum.mode")
    start, end = _range(timestamp)
    opts = {str(k): str(v) for k, v in (storage_options or {}).items()}
    _native.tiledb_vacuum(str(uri), m, start, end, opts)
    return str(uri)
