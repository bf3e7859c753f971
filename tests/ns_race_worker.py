"""One racer of test_namespace_races.py: sets up, prints ``READY``, waits
until the file GO exists (the parent creates it once every racer is
ready), then creates namespaces/tables through lancelet's or pylance's
DirectoryNamespace and prints one JSON line per attempt:
``{"id": [...], "ok": true}`` or ``{"id": [...], "ok": false, "error": "ClassName", "lancelet": bool}``.

    python ns_race_worker.py LIB ROOT GO KIND:ID [KIND:ID...]   (IDs: a.b.c)
    LIB: lancelet | pylance;  KIND: table | namespace | declare
    storage options come as JSON in $NS_STORAGE_OPTIONS
"""

from __future__ import annotations

import io
import json
import os
import sys
import time


def main() -> None:
    lib, root, go, *jobs = sys.argv[1:]
    import lance_namespace as ln
    import pyarrow as pa

    props = {"root": root}
    for k, v in json.loads(os.environ.get("NS_STORAGE_OPTIONS", "{}")).items():
        props[f"storage.{k}"] = v
    if lib == "lancelet":
        import lancelet.namespace

        ns = lancelet.namespace.DirectoryNamespace(**props)
    else:
        import lance.namespace

        ns = lance.namespace.DirectoryNamespace(**props)
    t = pa.table({"x": pa.array([1, 2, 3], pa.int64()), "who": pa.array([lib] * 3)})
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, t.schema) as w:
        w.write_table(t)
    data = sink.getvalue()
    print("READY", flush=True)
    deadline = time.time() + 300
    while not os.path.exists(go) and time.time() < deadline:
        time.sleep(0.001)
    for job in jobs:
        kind, _, text = job.partition(":")
        ident = text.split(".")
        try:
            if kind == "table":
                ns.create_table(ln.CreateTableRequest(id=ident), data)
            elif kind == "declare":
                ns.declare_table(ln.DeclareTableRequest(id=ident))
            else:
                ns.create_namespace(ln.CreateNamespaceRequest(id=ident))
            out = {"kind": kind, "id": ident, "ok": True}
        except Exception as e:
            out = {"kind": kind, "id": ident, "ok": False, "error": type(e).__name__, "message": str(e)[:300],
                   "lancelet": type(e).__module__.startswith("lancelet")}
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
