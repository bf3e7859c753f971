import lance, pyarrow as pa, shutil, glob, json, os
from bm25 import *
from dump import dump
docs = ["quick brown fox", "quick dog", "lazy dog", "dog dog", "cat", "brown cat"]
shutil.rmtree("/tmp/ftsres/q4", ignore_errors=True)
ds = lance.write_dataset(pa.table({"id": pa.array(range(6), pa.int32()), "text": docs}), "/tmp/ftsres/q4")
ds.create_scalar_index("text", "INVERTED")
def run(q, **kw):
    t = ds.to_table(full_text_query=q, columns=["id"], **kw)
    return [(i, round(float(s),7)) for i,s in zip(t["id"].to_pylist(), t["_score"].to_pylist())]
print("base", run("dog"), run("quick dog"))
ds = lance.write_dataset(pa.table({"id": pa.array([6,7], pa.int32()), "text": ["dog quick", "fox fox"]}), "/tmp/ftsres/q4", mode="append")
print("after append", run("dog"), run("quick dog"), run("fox"))
print(ds.explain_plan(full_text_query="dog", verbose=True) if False else "")
ds.delete("id = 1")
ds = lance.dataset("/tmp/ftsres/q4")
print("after delete", run("dog"), run("quick dog"))
print(json.dumps({k:v for k,v in ds.index_statistics("text_idx").items() if k not in ("indices","segments")}, default=str))
ds.optimize.optimize_indices()
ds = lance.dataset("/tmp/ftsres/q4")
print("after optimize", run("dog"), run("quick dog"), run("fox"))
st = ds.index_statistics("text_idx"); print(json.dumps(st, default=str))
print(ds.describe_indices()); print(ds.list_indices())
for f in sorted(glob.glob("/tmp/ftsres/q4/_indices/*/*")): print(f, os.path.getsize(f))
for f in sorted(glob.glob("/tmp/ftsres/q4/_indices/*/metadata.lance")): dump(f)
for f in sorted(glob.glob("/tmp/ftsres/q4/_indices/*/part_*_docs.lance")): dump(f)
