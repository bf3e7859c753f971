"""Progress reporting for long operations (update, merge_insert,
add_columns, create_scalar_index, compaction, cleanup).

An operation's ``progress`` argument is ``None``/``False`` (quiet), ``True``
(a progress line on stderr) or a callable that gets one dict per step:
``{"stage": str, "done": int, "total": int}``.

One rule for every operation (docs/errors.md): every report comes before
the operation commits, and an exception the callable raises aborts the
operation and propagates unchanged — nothing is committed, the files the
operation wrote are removed, the dataset is exactly as before (cleanup,
which commits nothing, stops removing; see ``cleanup_old_versions``).
Raising from the callback is therefore a way to cancel an operation.
"""

from __future__ import annotations

import sys
from typing import Any, Callable, Dict, Optional

from lancelet.exceptions import InvalidInputError

__all__ = ["progress_callback"]


def _stderr_line(event: Dict[str, Any]) -> None:
    total = event["total"]
    pct = f" {100 * event['done'] // total:3d}%" if total else ""
    end = "\n" if event["done"] >= total else ""
    sys.stderr.write(f"\rlancelet {event['stage']}: {event['done']}/{total}{pct}{end}")
    sys.stderr.flush()


def progress_callback(progress: Any) -> Optional[Callable[[Dict[str, Any]], Any]]:
    """The callable the native layer calls for a ``progress`` argument."""
    if progress is None or progress is False:
        return None
    if progress is True:
        return _stderr_line
    if callable(progress):
        return progress
    raise InvalidInputError(f"progress must be True, False, None or a callable, got {type(progress).__name__}")
