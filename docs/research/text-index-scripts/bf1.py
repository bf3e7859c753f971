import lance, pyarrow as pa, shutil, glob, json
from lance.indices import IndexConfig
from lance.file import LanceFileReader
from manidx import show
n=20
shutil.rmtree("/tmp/ftsres/bf1", ignore_errors=True)
ds = lance.write_dataset(pa.table({"id": pa.array(range(n), pa.int64()), "s": [f"s{i}" if i%7 else None for i in range(n)], "f": pa.array([i*0.5 for i in range(n)], pa.float32())}), "/tmp/ftsres/bf1", max_rows_per_file=12)
ds.create_scalar_index("id", "BLOOMFILTER")
ds.create_scalar_index("s", IndexConfig("bloomfilter", {"number_of_items": 4, "probability": 0.01}))
ds = lance.dataset("/tmp/ftsres/bf1")
print(ds.describe_indices()); print(ds.list_indices())
for nm in ["id_idx","s_idx"]: print(json.dumps(ds.index_statistics(nm), default=str))
show("/tmp/ftsres/bf1")
for f in sorted(glob.glob("/tmp/ftsres/bf1/_indices/*/*")):
    print(f)
    r = LanceFileReader(f); t = r.read_all().to_table()
    print(t.schema); 
    d = t.to_pydict(); d["bloom_filter_data"] = [(len(b), b[:48].hex()) if b else b for b in d["bloom_filter_data"]]; print(d)
    print("gbufs", len(r.metadata().global_buffers))
for flt in ["id = 3", "id IN (3, 15)", "id > 3", "s = 's3'", "s IS NULL", "s != 's3'", "id = 100"]:
    print(flt, ds.to_table(filter=flt, columns=["id"])["id"].to_pylist())
    print(ds.scanner(filter=flt, columns=["id"]).explain_plan(verbose=True))
