"""``Dataset.merge_insert``: upserts and key-based deletes, with pylance's
``MergeInsertBuilder`` interface.

>>> ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(new_rows)
{'num_inserted_rows': 3, 'num_updated_rows': 2, 'num_deleted_rows': 0}
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Union

from lancelet import _inputs, _native
from lancelet.exceptions import InvalidInputError

if TYPE_CHECKING:
    from lancelet.dataset import Dataset

__all__ = ["MergeInsertBuilder"]


def _sql(value: Any, what: str) -> Optional[str]:
    if value is None or isinstance(value, str):
        return value
    raise InvalidInputError(f"{what} must be an SQL string, got {type(value).__name__}")


class MergeInsertBuilder:
    """A merge_insert job: match source rows to the dataset's rows on the
    ``on`` columns, then say what happens to matched rows, unmatched source
    rows and unmatched dataset rows, and :meth:`execute` it. Each method
    returns the builder. The result commits one ``Update`` transaction, as
    pylance's does."""

    def __init__(self, dataset: "Dataset", on: Union[str, List[str]]) -> None:
        if isinstance(on, str):
            on = [on]
        if not isinstance(on, (list, tuple)) or not all(isinstance(c, str) for c in on):
            raise InvalidInputError(f"on must be a column name or a list of column names, got {on!r}")
        self._ds = dataset
        self._on = list(on)
        self._matched = "nothing"
        self._matched_condition: Optional[str] = None
        self._insert = False
        self._by_source_delete = False
        self._by_source_condition: Optional[str] = None
        self._conflict_retries = 10
        self._retry_timeout = datetime.timedelta(seconds=30)

    def when_matched_update_all(self, condition: Optional[str] = None) -> "MergeInsertBuilder":
        """Replace matched rows by the source rows (columns the source lacks
        keep their values), where ``condition`` holds if given; it may name
        ``source.col`` and ``target.col``."""
        self._matched = "update"
        self._matched_condition = _sql(condition, "condition")
        return self

    def when_matched_delete(self) -> "MergeInsertBuilder":
        """Delete the dataset rows some source row matches."""
        self._matched = "delete"
        self._matched_condition = None
        return self

    def when_not_matched_insert_all(self) -> "MergeInsertBuilder":
        """Insert source rows that match no dataset row (columns the source
        lacks are null)."""
        self._insert = True
        return self

    def when_not_matched_by_source_delete(self, expr: Optional[str] = None) -> "MergeInsertBuilder":
        """Delete dataset rows no source row matches (only those where the
        SQL ``expr`` holds, if given)."""
        self._by_source_delete = True
        self._by_source_condition = _sql(expr, "expr")
        return self

    def conflict_retries(self, max_retries: int) -> "MergeInsertBuilder":
        """How many times to run again after a concurrent commit changed the
        rows read (default 10)."""
        self._conflict_retries = max_retries
        return self

    def retry_timeout(self, timeout: datetime.timedelta) -> "MergeInsertBuilder":
        """No re-run starts after this much time (default 30 seconds)."""
        self._retry_timeout = timeout
        return self

    def execute(self, data: Any, *, schema: Any = None, progress: Any = None) -> Dict[str, int]:
        """Run the job on ``data`` (a table, batches, reader, pandas frame,
        ...) and commit; the dataset object moves to the new version.
        Returns ``{"num_inserted_rows", "num_updated_rows",
        "num_deleted_rows"}``. ``progress``: a callable receiving
        ``{"stage", "done", "total"}`` per fragment scanned, or ``True``."""
        from lancelet._progress import progress_callback

        commit = _inputs.commit_args(conflict_retries=self._conflict_retries, retry_timeout=self._retry_timeout,
                                     progress=progress_callback(progress))
        native_ds, (inserted, updated, deleted) = _native.dataset_merge_insert(
            self._ds._native, _inputs.stream(data, schema), self._on, self._matched, self._matched_condition,
            self._insert, self._by_source_delete, self._by_source_condition, commit)
        self._ds._become(native_ds)
        return {"num_inserted_rows": inserted, "num_updated_rows": updated, "num_deleted_rows": deleted}
