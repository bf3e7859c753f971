"""Progress reporting for long operations (compaction, cleanup, ...).

An operation's ``progress`` argument is ``None``/``False`` (quiet), ``True``
(a progress line on stderr) or a callable that gets one dict per step:
``{"stage": str, "done": int, "total": int}``. A callable that raises is
reported once as a :class:`RuntimeWarning` and not called again: a broken
progress display never aborts the work it reports on.
"""

from __future__ import annotations

import sys
import warnings
from typing import Any, Callable, Dict, Optional

from lancelet.exceptions import InvalidInputError

__all__ = ["progress_callback"]


def _stderr_line(event: Dict[str, Any]) -> None:
    total = event["total"]
    pct = f" {100 * event['done'] // total:3d}%" if total else ""
    end = "\n" if event["done"] >= total else ""
    sys.stderr.write(f"\r{event['stage']}: {event['done']}/{total}{pct}{end}")
    sys.stderr.flush()


def progress_callback(progress: Any) -> Optional[Callable[[Dict[str, Any]], None]]:
    """The callable to hand to the native layer for a ``progress`` argument."""
    if progress is None or progress is False:
        return None
    if progress is True:
        fn: Callable[[Dict[str, Any]], Any] = _stderr_line
    elif callable(progress):
        fn = progress
    else:
        raise InvalidInputError(f"progress must be True, False, None or a callable, got {type(progress).__name__}")
    broken = []

    def call(event: Dict[str, Any]) -> None:
        if broken:
            return
        try:
            fn(event)
        except Exception as e:  # noqa: BLE001 - reported, never raised into the native layer
            broken.append(e)
            warnings.warn(f"progress callback raised {type(e).__name__}: {e}; no further progress is reported",
                          RuntimeWarning, stacklevel=2)

    return call
