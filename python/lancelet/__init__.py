"""lancelet: an independent implementation of the Lance columnar formats.

``lancelet.file`` reads and writes Lance data files (``.lance``) of every
version; all Arrow data crosses between Rust and Python through the Arrow
PyCapsule interface without copies.
"""

from __future__ import annotations

from lancelet import file, optimize
from lancelet._bases import DatasetBasePath
from lancelet._native import __version__
from lancelet.dataset import Dataset, LanceDataset, dataset, write_dataset
from lancelet.exceptions import (
    AlreadyExistsError,
    CommitConflictError,
    CorruptFileError,
    IndexExistsError,
    InvalidInputError,
    LanceletError,
    LanceletIOError,
    NotFoundError,
    ReferenceExistsError,
    UnsupportedError,
)

__all__ = [
    "DatasetBasePath",
    "__version__",
    "file",
    "optimize",
    "dataset",
    "write_dataset",
    "Dataset",
    "LanceDataset",
    "LanceletError",
    "CorruptFileError",
    "UnsupportedError",
    "NotFoundError",
    "AlreadyExistsError",
    "IndexExistsError",
    "ReferenceExistsError",
    "InvalidInputError",
    "CommitConflictError",
    "LanceletIOError",
]
