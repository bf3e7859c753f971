import lance, pyarrow as pa, numpy as np, shutil, os, json, sys
sys.path.insert(0,'/tmp/vecres'); import pb
from lance.file import LanceFileReader
rng = np.random.default_rng(3)
N, D = 2000, 16
cases = [("f16","IVF_PQ","L2",np.float16),("f16","IVF_FLAT","L2",np.float16),("f64","IVF_FLAT","L2",np.float64),("f64","IVF_SQ","L2",np.float64),("f64","IVF_PQ","L2",np.float64),
         ("u8","IVF_FLAT","hamming",np.uint8),("u8","IVF_PQ","hamming",np.uint8),("u8","IVF_FLAT","L2",np.uint8),("f16","IVF_HNSW_SQ","cosine",np.float16)]
for tag,t,metric,dt in cases:
    if dt==np.uint8: vecs=rng.integers(0,256,(N,D)).astype(np.uint8)
    else: vecs=rng.standard_normal((N,D)).astype(dt)
    p=f"/tmp/vecres/ty_{tag}_{t}_{metric}"; shutil.rmtree(p, ignore_errors=True)
    ds=lance.write_dataset(pa.table({"vec": pa.FixedSizeListArray.from_arrays(pa.array(vecs.reshape(-1)), D)}), p)
    kw=dict(num_partitions=2, metric=metric)
    if "PQ" in t: kw["num_sub_vectors"]=4
    try:
        ds.create_index("vec", t, **kw)
    except Exception as e:
        print(tag,t,metric,"ERR",type(e).__name__,str(e)[:300]); continue
    d=p+"/_indices/"+os.listdir(p+"/_indices")[0]
    a=LanceFileReader(d+"/auxiliary.idx"); at=a.read_all().to_table()
    x=LanceFileReader(d+"/index.idx"); xt=x.read_all().to_table()
    ivx=pb.ivf(x.read_global_buffer(1))
    extra=''
    if b'codebook_position' in at.schema.metadata.get(b'storage_metadata',b''):
        f={ff:vv for ff,w,vv in pb.fields(a.read_global_buffer(2))}; extra=f"codebook dtype={f[1]} shape={pb.packed_varints(f[2])} bytes={len(f[3])}"
    print(tag,t,metric,"centroid dtype",ivx['centroids_tensor']['data_type'],ivx['centroids_tensor']['shape'],ivx['centroids_tensor']['data_len'],"aux:",at.schema.remove_metadata().to_string().replace('\n',' | '),at.schema.metadata.get(b'storage_metadata'),xt.schema.metadata.get(b'lance:index'),extra)
    print("   details", {k:v for k,v in pb.index_meta(pb.index_section(p)[0])['6:details'].items() if k!='9:params'})
