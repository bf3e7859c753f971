"""Helpers shared by the namespace tests: small tables, IPC bytes, both
libraries' namespaces on one root, and a listing of everything below a
directory (to check what an operation left behind)."""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any, Dict, List, Optional

import pyarrow as pa


def table(start: int = 0, n: int = 5) -> pa.Table:
    return pa.table({"x": pa.array(range(start, start + n), pa.int64()),
                     "s": pa.array([f"v{i}" for i in range(start, start + n)])})


def ipc(t: pa.Table) -> bytes:
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, t.schema) as w:
        w.write_table(t)
    return sink.getvalue()


def both(root: Any, **props: Any):
    """(lancelet namespace, pylance namespace) on the same root."""
    import lance.namespace

    import lancelet.namespace

    str_props = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in props.items()}
    return (lancelet.namespace.DirectoryNamespace(root=str(root), **props),
            lance.namespace.DirectoryNamespace(root=str(root), **str_props))


def tree(root: Any) -> List[str]:
    """Every file and directory below ``root`` (relative, sorted; dirs end in /)."""
    out = []
    for d, dirs, files in os.walk(root):
        rel = os.path.relpath(d, root)
        for x in dirs:
            out.append(os.path.normpath(os.path.join(rel, x)) + "/")
        for f in files:
            out.append(os.path.normpath(os.path.join(rel, f)))
    return sorted(out)


def top(root: Any) -> List[str]:
    return sorted(os.listdir(root))


def local_path(uri: str) -> Path:
    return Path(uri[len("file://"):] if uri.startswith("file://") else uri)


def rows(root: Any) -> List[Dict[str, Any]]:
    """The __manifest rows (read with pylance), sorted by object_id."""
    import lance

    return sorted(lance.dataset(str(Path(root) / "__manifest")).to_table().to_pylist(), key=lambda r: r["object_id"])


def names(resp: Any) -> List[str]:
    return list(getattr(resp, "tables", None) or getattr(resp, "namespaces", None) or [])


def read(uri: str, lib: Any, storage_options: Optional[Dict[str, str]] = None) -> List[dict]:
    return lib.dataset(uri, storage_options=storage_options).to_table().to_pylist()
