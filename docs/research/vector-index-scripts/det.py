import lance, numpy as np, pyarrow as pa, shutil, os, sys, hashlib
sys.path.insert(0,'/tmp/vecres'); import pb
from lance.file import LanceFileReader
vecs=np.load('vecs.npy'); tbl=pa.table({"id":np.arange(4000),"vec":pa.FixedSizeListArray.from_arrays(pa.array(vecs.reshape(-1)),32)})
rng=np.random.default_rng(3); C=vecs[rng.choice(4000,4,replace=False)]; CB=rng.standard_normal((4,256,8)).astype(np.float32)*0.5
res={}
for t in ['IVF_PQ','IVF_HNSW_SQ']:
    for i in range(2):
        p=f'/tmp/vecres/det_{t}_{i}'; shutil.rmtree(p,ignore_errors=True); ds=lance.write_dataset(tbl,p,max_rows_per_file=2000)
        kw=dict(num_partitions=4, ivf_centroids=C)
        if 'PQ' in t: kw.update(num_sub_vectors=4, pq_codebook=CB)
        ds.create_index("vec",t,**kw)
        d=p+'/_indices/'+os.listdir(p+'/_indices')[0]
        a=LanceFileReader(d+'/auxiliary.idx').read_all().to_table(); x=LanceFileReader(d+'/index.idx').read_all().to_table()
        h=[hashlib.md5(open(d+'/'+f,'rb').read()).hexdigest()[:8] for f in ['auxiliary.idx','index.idx']]
        res[(t,i)]=(a,x,h)
        if 'PQ' in t and i==0:
            f={ff:vv for ff,w,vv in pb.fields(LanceFileReader(d+'/auxiliary.idx').read_global_buffer(2))}
            print('codebook stored == given (sub-vector-major)?', np.array_equal(np.frombuffer(f[3],dtype=np.float32), CB.reshape(-1)))
    a0,x0,h0=res[(t,0)]; a1,x1,h1=res[(t,1)]
    print(t, 'aux table equal', a0.equals(a1), 'index table equal', x0.equals(x1), 'file md5', h0, h1)
