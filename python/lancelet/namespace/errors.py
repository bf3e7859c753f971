"""Namespace errors: each is both a lancelet exception (a
:class:`~lancelet.exceptions.LanceletError`) and the matching
``lance_namespace`` exception, so code written against pylance's
``DirectoryNamespace`` catches them unchanged.
"""

from __future__ import annotations

import lance_namespace.errors as _ln

from lancelet import exceptions as _lx

__all__ = [
    "NamespaceNotFoundError",
    "TableNotFoundError",
    "NamespaceAlreadyExistsError",
    "TableAlreadyExistsError",
    "NamespaceNotEmptyError",
    "InvalidInputError",
    "UnsupportedError",
    "UnsupportedOperationError",
]


class NamespaceNotFoundError(_lx.NotFoundError, _ln.NamespaceNotFoundError):
    """The namespace (or one above it) does not exist."""


class TableNotFoundError(_lx.NotFoundError, _ln.TableNotFoundError):
    """The table does not exist (or is deregistered)."""


class NamespaceAlreadyExistsError(_lx.AlreadyExistsError, _ln.NamespaceAlreadyExistsError):
    """A namespace or a table already has this id."""


class TableAlreadyExistsError(_lx.AlreadyExistsError, _ln.TableAlreadyExistsError):
    """A table or a namespace already has this id."""


class NamespaceNotEmptyError(_lx.LanceletError, _ln.NamespaceNotEmptyError):
    """The namespace still holds tables or namespaces."""


class InvalidInputError(_lx.InvalidInputError, _ln.InvalidInputError):
    """A bad name, id, location, mode or property (refused before any I/O)."""


class UnsupportedError(_lx.UnsupportedError, _ln.UnsupportedOperationError):
    """The operation is not possible in this namespace mode (e.g. nested
    namespaces in a V1 namespace)."""


UnsupportedOperationError = UnsupportedError
