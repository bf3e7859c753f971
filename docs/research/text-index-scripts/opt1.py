import lance, pyarrow as pa, shutil, glob, json, os
from lance.indices import IndexConfig
from lance.file import LanceFileReader
from manidx import index_entries, latest_manifest, fields
P="/tmp/ftsres/opt1"
shutil.rmtree(P, ignore_errors=True)
def mk(a,b): return pa.table({"id": pa.array(range(a,b), pa.int64()), "s": [f"hello{i}" for i in range(a,b)]})
ds = lance.write_dataset(mk(0,10), P)
ds.create_scalar_index("id", IndexConfig("zonemap", {"rows_per_zone": 4}))
ds.create_scalar_index("s", "NGRAM")
ds.create_scalar_index("id", IndexConfig("bloomfilter", {"number_of_items": 4}), name="id_bf")
ds = lance.write_dataset(mk(10,15), P, mode="append")
def state(tag):
    ds = lance.dataset(P)
    print("==", tag)
    for i in ds.list_indices(): print("  ", i["name"], i["type"], i["uuid"][:8], i["fragment_ids"])
    for e in index_entries(latest_manifest(P)):
        fs = {f:v for f,t,v in fields(e)}
        print("   entry", fs[3], "index_version", fs.get(7), "files", [fields(v)[0][2].decode() for f,t,v in fields(e) if f==10])
    for f in sorted(glob.glob(P+"/_indices/*/*.lance")):
        t = LanceFileReader(f).read_all().to_table()
        d = t.to_pydict(); d.pop("bloom_filter_data", None); d.pop("posting_list", None)
        print("  ", f.split("/")[-2][:8], f.split("/")[-1], t.num_rows, {k:v for k,v in d.items() if k!="tokens"})
    print("  id = 12:", ds.to_table(filter="id = 12", columns=["id"])["id"].to_pylist(), "| contains hello12:", ds.to_table(filter="contains(s, 'hello12')", columns=["id"])["id"].to_pylist())
    print(ds.scanner(filter="id = 12", columns=["id"]).explain_plan(verbose=True))
    print(ds.scanner(filter="contains(s, 'llo12')", columns=["id"]).explain_plan(verbose=True))
    print(json.dumps({k: ds.index_statistics(k) for k in ["id_idx","s_idx","id_bf"]}, default=str)[:1500])
state("after append")
ds = lance.dataset(P); ds.optimize.optimize_indices()
state("after optimize_indices")
ds = lance.dataset(P); ds.optimize.compact_files(target_rows_per_fragment=100)
state("after compact")
