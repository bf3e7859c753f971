import lance, pyarrow as pa, shutil, glob
from lance.indices import IndexConfig
from lance.file import LanceFileReader
from manidx import index_entries, latest_manifest, fields
def zm(path, col):
    d = [e for e in index_entries(latest_manifest(path))]
    for f in glob.glob(path+"/_indices/*/zonemap.lance"):
        r = LanceFileReader(f); t = r.read_all().to_table()
        print(f.split("/")[-2][:8], t.schema.field("min").type, t.to_pydict())
        md = t.schema.metadata; print("  meta", md)
        for i in range(len(r.metadata().global_buffers)):
            print("  gbuf", i, r.read_global_buffer(i)[:80].hex() if i>0 else len(r.read_global_buffer(i)))
    for e in d:
        for f,t,v in fields(e):
            if f==6: print("  details", [ (a,c) for a,_,c in fields([vv for ff,tt,vv in fields(v) if ff==2][0])] if [vv for ff,tt,vv in fields(v) if ff==2] else "empty")
n=10
shutil.rmtree("/tmp/ftsres/zm2", ignore_errors=True)
ds = lance.write_dataset(pa.table({"id": pa.array(range(n), pa.int32()), "k": pa.array([1,None,3,4,5,None,7,8,9,10], pa.int64()), "t": [f"v{i}" for i in range(n)]}), "/tmp/ftsres/zm2")
ds.delete("id IN (0, 1, 5)")
ds.create_scalar_index("k", IndexConfig("zonemap", {"rows_per_zone": 4}))
zm("/tmp/ftsres/zm2", "k")
shutil.rmtree("/tmp/ftsres/zm2", ignore_errors=True)
ds = lance.write_dataset(pa.table({"t": [f"v{i}" for i in range(n)]}), "/tmp/ftsres/zm2")
ds.create_scalar_index("t", "ZONEMAP")
zm("/tmp/ftsres/zm2", "t")
