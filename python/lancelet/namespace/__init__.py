"""Lance directory namespaces (catalogs of tables in a directory), usable
wherever pylance's ``DirectoryNamespace`` is.

>>> from lancelet.namespace import DirectoryNamespace
>>> ns = DirectoryNamespace(root="/data/catalog")            # or s3://bucket/catalog
>>> ns.create_namespace(id=["prod"])
>>> ns.create_table(id=["prod", "clicks"], request_data=table)   # IPC bytes or any Arrow data
>>> ns.list_tables(id=["prod"]).tables
['clicks']
>>> lancelet.dataset(namespace_client=ns, table_id=["prod", "clicks"]).count_rows()

Three layouts (the Lance directory namespace spec), chosen by the
properties ``manifest_enabled`` / ``dir_listing_enabled``: V1 (a
``<name>.lance`` directory per table), V2 (a ``__manifest`` Lance table
listing nested namespaces and tables) and, by default, compatibility mode
(both). pylance and lancelet share one catalog, locally or on ``s3://``.

Importing this module registers the implementation with ``lance_namespace``
as ``"lancelet"``: ``lance_namespace.connect("lancelet", {"root": ...})``.
"""

from __future__ import annotations

from typing import Any, Dict

import lance_namespace

from lancelet.namespace.directory import DirectoryNamespace
from lancelet.namespace.errors import *  # noqa: F403 - the error classes, listed once in errors.__all__
from lancelet.namespace.errors import __all__ as _error_names

__all__ = ["DirectoryNamespace", "connect", *_error_names]

_OURS = ("dir", "lancelet", "lancelet.namespace.DirectoryNamespace")


def connect(impl: str, properties: Dict[str, Any]) -> lance_namespace.LanceNamespace:
    """A namespace from an implementation name and its properties:
    ``"dir"`` (or ``"lancelet"``) is lancelet's :class:`DirectoryNamespace`;
    any other name goes to ``lance_namespace.connect`` (e.g. ``"rest"``)."""
    if impl in _OURS:
        return DirectoryNamespace(**dict(properties))
    return lance_namespace.connect(impl, dict(properties))


lance_namespace.register_namespace_impl("lancelet", "lancelet.namespace.DirectoryNamespace")
