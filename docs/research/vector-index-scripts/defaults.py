import lance, pyarrow as pa, numpy as np, shutil, os, sys
sys.path.insert(0,'/tmp/vecres'); import pb
from lance.file import LanceFileReader
rng = np.random.default_rng(1)
def mk(N, D, p):
    vecs = rng.standard_normal((N, D)).astype(np.float32)
    shutil.rmtree(p, ignore_errors=True)
    return lance.write_dataset(pa.table({"vec": pa.FixedSizeListArray.from_arrays(pa.array(vecs.reshape(-1)), D)}), p)
def nparts(p):
    d = p + "/_indices/" + os.listdir(p + "/_indices")[0]
    a = LanceFileReader(d + "/auxiliary.idx")
    iv = pb.ivf(LanceFileReader(d+"/index.idx").read_global_buffer(1))
    md = a.read_all().to_table().schema.metadata
    return iv['centroids_tensor']['shape'], md.get(b'storage_metadata', b'')[:120]
for N in [1000, 5000, 20000, 70000]:
    for t in ["IVF_FLAT", "IVF_PQ", "IVF_SQ", "IVF_HNSW_SQ", "IVF_RQ"]:
        p = f"/tmp/vecres/def_{N}_{t}"
        ds = mk(N, 32, p)
        try:
            ds.create_index("vec", t)
            print(N, t, nparts(p))
        except Exception as e:
            print(N, t, "ERR", type(e).__name__, str(e)[:200])
