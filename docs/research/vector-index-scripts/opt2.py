import lance, numpy as np, pyarrow as pa, shutil, sys, os
sys.path.insert(0,'/tmp/vecres'); import pb
from lance.file import LanceFileReader
def info(p):
    out=[]
    for m in pb.index_section(p):
        d=pb.index_meta(m); u=d['1:uuid']; u=f'{u[:8]}-{u[8:12]}-{u[12:16]}-{u[16:20]}-{u[20:]}'
        a=LanceFileReader(f'{p}/_indices/{u}/auxiliary.idx'); iv=pb.ivf(a.read_global_buffer(1))
        x=pb.ivf(LanceFileReader(f'{p}/_indices/{u}/index.idx').read_global_buffer(1))
        C=np.frombuffer(x['centroids_tensor']['data'],dtype=np.float32).reshape(x['centroids_tensor']['shape'])
        cb=None
        if a.metadata().global_buffers.__len__()>2:
            f={ff:vv for ff,w,vv in pb.fields(a.read_global_buffer(2))}; cb=f[3]
        out.append(dict(uuid=u[:8], dsver=d['4:dataset_version'], bitmap=d['5:fragment_bitmap'], lengths=iv['lengths'], C=C, cb=cb, loss=x.get('loss')))
    return out
rng=np.random.default_rng(21); N=40000
vecs=rng.standard_normal((N,16)).astype(np.float32)
for t,kw in [('IVF_FLAT',{}),('IVF_PQ',{"num_sub_vectors":4})]:
    p=f'/tmp/vecres/opt2_{t}'; shutil.rmtree(p,ignore_errors=True)
    ds=lance.write_dataset(pa.table({"id":np.arange(N),"vec":pa.FixedSizeListArray.from_arrays(pa.array(vecs.reshape(-1)),16)}),p,max_rows_per_file=10000)
    ds.create_index("vec",t,num_partitions=8,**kw)
    i0=info(p); print(t,'initial lengths', i0[0]['lengths'])
    extra=rng.standard_normal((500,16)).astype(np.float32)
    ds.insert(pa.table({"id":np.arange(N,N+500),"vec":pa.FixedSizeListArray.from_arrays(pa.array(extra.reshape(-1)),16)}))
    ds=lance.dataset(p); ds.optimize.optimize_indices(); i1=info(p)
    print('  after append+optimize', [(x['uuid'],x['dsver'],x['lengths']) for x in i1], 'same centroids', np.array_equal(i0[0]['C'],i1[0]['C']), 'same codebook', i0[0]['cb']==i1[0]['cb'], 'loss', i0[0]['loss'], i1[0]['loss'])
    # delete
    ds=lance.dataset(p); ds.delete("id % 10 = 0"); ds=lance.dataset(p)
    print('  after delete: stats', {k:v for k,v in ds.stats.index_stats('vec_idx').items() if k.startswith('num')})
    q=vecs[0]; r=ds.to_table(nearest={"column":"vec","q":q,"k":3}, columns=["id"]); print('  query own deleted row ->', r['id'].to_pylist())
    ds.optimize.optimize_indices(); i2=info(p)
    print('  after delete+optimize', [(x['uuid'],x['dsver'],x['lengths'], sum(x['lengths'])) for x in i2], 'same centroids', np.array_equal(i1[0]['C'],i2[0]['C']) if i1[0]['C'].shape==i2[0]['C'].shape else 'shape changed')
    # big delete of a whole partition region? delete 60%
    ds=lance.dataset(p); ds.delete("id % 10 < 7"); ds=lance.dataset(p); ds.optimize.optimize_indices(); i3=info(p)
    print('  after 70% delete+optimize', [(x['uuid'],x['dsver'],x['lengths'], sum(x['lengths'])) for x in i3], 'rows', ds.count_rows())
