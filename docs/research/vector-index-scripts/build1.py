import lance, pyarrow as pa, numpy as np, shutil, os, json
rng = np.random.default_rng(42)
N, D = 4000, 32
vecs = rng.standard_normal((N, D)).astype(np.float32)
tbl = pa.table({"id": pa.array(np.arange(N, dtype=np.int64)),
                "vec": pa.FixedSizeListArray.from_arrays(pa.array(vecs.reshape(-1)), D)})
np.save("vecs.npy", vecs)
for t in ["IVF_FLAT","IVF_PQ","IVF_SQ","IVF_HNSW_FLAT","IVF_HNSW_PQ","IVF_HNSW_SQ","IVF_RQ"]:
    p = f"/tmp/vecres/ds_{t}"
    shutil.rmtree(p, ignore_errors=True)
    ds = lance.write_dataset(tbl, p, max_rows_per_file=2000)
    kw = dict(num_partitions=4)
    if "PQ" in t: kw["num_sub_vectors"] = 4
    ds.create_index("vec", t, **kw)
    print(t, os.listdir(p + "/_indices"), [ (f, os.path.getsize(os.path.join(p,"_indices",u,f))) for u in os.listdir(p+"/_indices") for f in os.listdir(os.path.join(p,"_indices",u))])
