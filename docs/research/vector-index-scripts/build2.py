import lance, pyarrow as pa, numpy as np, shutil, os, json, sys
sys.path.insert(0,'/tmp/vecres'); import pb
from lance.file import LanceFileReader
rng = np.random.default_rng(7)
N, D = 2000, 16
vecs = (rng.standard_normal((N, D))*3+1).astype(np.float32)
tbl = pa.table({"id": pa.array(np.arange(N, dtype=np.int64)),
                "vec": pa.FixedSizeListArray.from_arrays(pa.array(vecs.reshape(-1)), D)})
def files(p):
    d = p + "/_indices/" + os.listdir(p + "/_indices")[0]
    return d
for metric in ["cosine", "dot", "euclidean", "L2"]:
  for t in ["IVF_FLAT", "IVF_PQ", "IVF_SQ", "IVF_HNSW_SQ"]:
    p = f"/tmp/vecres/m_{metric}_{t}"
    shutil.rmtree(p, ignore_errors=True)
    ds = lance.write_dataset(tbl, p)
    kw = dict(num_partitions=2, metric=metric)
    if "PQ" in t: kw["num_sub_vectors"] = 2
    ds.create_index("vec", t, **kw)
    im = pb.index_meta(pb.index_section(p)[0])
    d = files(p)
    a = LanceFileReader(d + "/auxiliary.idx"); at = a.read_all().to_table()
    x = LanceFileReader(d + "/index.idx"); xt = x.read_all().to_table()
    ivx = pb.ivf(x.read_global_buffer(1)); c = np.frombuffer(ivx['centroids_tensor']['data'], dtype=np.float32).reshape(ivx['centroids_tensor']['shape'])
    info = dict(details_hex_head=im['6:details.value_hex'][:16], det={k:v for k,v in im['6:details'].items() if k!='9:params'},
        aux_dt=at.schema.metadata.get(b'distance_type'), idx=xt.schema.metadata.get(b'lance:index'),
        centroid_norms=np.round(np.linalg.norm(c,axis=1),4).tolist(), loss=ivx.get('loss'))
    if t == "IVF_FLAT":
        r = at['_rowid'].to_numpy(); fv = np.stack(at['flat'].to_numpy(zero_copy_only=False))
        info['flat_norm_first'] = float(np.linalg.norm(fv[0])); info['raw_norm'] = float(np.linalg.norm(vecs[r[0]]))
    if t == "IVF_SQ":
        info['sq'] = at.schema.metadata[b'storage_metadata'].decode(); info['minmax']=(float(vecs.min()), float(vecs.max()))
    print(metric, t, json.dumps(info, default=str))
