import sys, os, json, lance, pyarrow as pa
from lance.file import LanceFileReader
def dump(path, maxrows=50, show=True):
    r = LanceFileReader(path)
    md = r.metadata()
    t = r.read_all().to_table()
    print("==", path, "rows", t.num_rows, "size", os.path.getsize(path))
    print("  version", md.major_version, md.minor_version, "global buffers", len(md.global_buffers))
    print("  schema:", t.schema.to_string(show_schema_metadata=False).replace("\n","\n    "))
    for k,v in (t.schema.metadata or {}).items():
        print("  meta", k.decode(), "=", v[:2000].decode(errors="replace"))
    for f in t.schema:
        if f.metadata: print("  fieldmeta", f.name, f.metadata)
    if show:
        print(t.slice(0,maxrows).to_pandas().to_string(max_colwidth=120))
    return r, t
def dumpidx(ds, show=True):
    base = ds.uri
    for idx in ds.describe_indices() if hasattr(ds,'describe_indices') else []:
        print(idx)
    d = os.path.join(base, "_indices")
    for u in sorted(os.listdir(d)):
        for fn in sorted(os.listdir(os.path.join(d,u))):
            p = os.path.join(d,u,fn)
            print("FILE", u, fn, os.path.getsize(p))
            if fn.endswith(".lance"):
                try: dump(p, show=show)
                except Exception as e: print("  ERR", e)
