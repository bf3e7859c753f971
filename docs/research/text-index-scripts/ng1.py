import lance, pyarrow as pa, shutil, glob, json
from dump import *
from manidx import show
docs = ["Hello World", "hello there", "Café au lait", "abc", "ab", None, "xyz-123 HELLO!", "wörld"]
shutil.rmtree("/tmp/ftsres/ng1", ignore_errors=True)
ds = lance.write_dataset(pa.table({"id": pa.array(range(len(docs)), pa.int32()), "s": docs}), "/tmp/ftsres/ng1")
ds.create_scalar_index("s", "NGRAM")
ds = lance.dataset("/tmp/ftsres/ng1")
dumpidx(ds)
show("/tmp/ftsres/ng1")
print(ds.list_indices()); print(json.dumps(ds.index_statistics("s_idx"), default=str))
for f in ["contains(s, 'ell')", "contains(s, 'ELL')", "contains(s, 'lo W')", "contains(s, 'ab')", "contains(s, 'caf')", "contains(s, 'é')", "s LIKE '%ell%'", "s LIKE 'hel%'", "s = 'abc'", "contains(s, 'orld')", "contains(s, 'wor')"]:
    try:
        t = ds.to_table(filter=f, columns=["id"])
        print(f, t["id"].to_pylist())
        print(ds.scanner(filter=f, columns=["id"]).explain_plan(verbose=True))
    except Exception as e: print(f, "ERR", e)
