"""The lancelet exception hierarchy.

Every error lancelet raises is a :class:`LanceletError`. Subclasses also
derive from the closest built-in exception so that ordinary ``except``
clauses keep working (a missing file is a ``FileNotFoundError``, bad
arguments are a ``ValueError``).
"""

from __future__ import annotations

__all__ = [
    "LanceletError",
    "CorruptFileError",
    "UnsupportedError",
    "NotFoundError",
    "AlreadyExistsError",
    "IndexExistsError",
    "ReferenceExistsError",
    "InvalidInputError",
    "InvalidReferenceError",
    "ReferenceNotFoundError",
    "CommitConflictError",
    "LanceletIOError",
    "InternalError",
]


class LanceletError(Exception):
    """Base class of every lancelet error."""


class CorruptFileError(LanceletError):
    """A file's bytes do not follow the Lance format; the message names the
    file and where in it."""


class UnsupportedError(LanceletError, NotImplementedError):
    """Valid data using a feature (version, encoding, flag) lancelet does not
    handle."""


class NotFoundError(LanceletError, FileNotFoundError):
    """A file, dataset, version or tag does not exist."""


class AlreadyExistsError(LanceletError, FileExistsError):
    """Something that must not exist yet already does."""


class IndexExistsError(AlreadyExistsError, RuntimeError):
    """An index name is already in use (``replace=False``). Also a
    ``RuntimeError``, the class pylance raises for it."""


class ReferenceExistsError(AlreadyExistsError, ValueError):
    """A tag (or branch) name is already taken. Also a ``ValueError``, the
    class pylance raises for it."""


class InvalidInputError(LanceletError, ValueError):
    """The arguments or data passed in are wrong (e.g. a schema mismatch)."""


class InvalidReferenceError(InvalidInputError, OSError):
    """A branch name pylance refuses, or a branch that cannot be deleted
    (others were made from it, tags name its versions). Also an
    ``OSError``, the class pylance raises for it."""


class ReferenceNotFoundError(NotFoundError, ValueError):
    """An unknown branch to delete or describe. Also a ``ValueError``, the
    class pylance raises for it."""


class CommitConflictError(LanceletError):
    """A concurrent writer committed a change that conflicts with this one."""


class LanceletIOError(LanceletError, OSError):
    """The storage layer failed."""


class InternalError(LanceletError):
    """A bug in lancelet (for example a caught Rust panic), not a problem
    with the data. Please report it."""


_NAMESPACE_ERRORS = ("NamespaceNotFoundError", "TableNotFoundError", "NamespaceAlreadyExistsError",
                     "TableAlreadyExistsError", "NamespaceNotEmptyError")


def __getattr__(name: str):
    # The namespace errors also derive from lance_namespace's exceptions, so
    # they live in lancelet.namespace.errors, imported only when asked for
    # (``import lancelet`` does not load lance_namespace).
    if name in _NAMESPACE_ERRORS:
        from lancelet.namespace import errors

        return getattr(errors, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
