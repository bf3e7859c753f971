"""Dataset maintenance: ``ds.optimize.optimize_indices()``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Sequence

if TYPE_CHECKING:
    from lancelet.dataset import Dataset

__all__ = ["DatasetOptimizer"]


class DatasetOptimizer:
    """``Dataset.optimize``: maintenance operations committing new versions."""

    def __init__(self, ds: "Dataset") -> None:
        self._ds = ds

    def optimize_indices(self, index_names: Optional[Sequence[str]] = None, **kwargs: Any) -> None:
        """Rebuild indices that do not cover every fragment (see
        :func:`lancelet.indices.optimize_indices`)."""
        from lancelet.indices import optimize_indices
        optimize_indices(self._ds, index_names, **kwargs)
