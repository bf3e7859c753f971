import lance, numpy as np, pyarrow as pa, shutil
def mk(p, arr, D):
    shutil.rmtree(p,ignore_errors=True); return lance.write_dataset(pa.table({"vec":pa.FixedSizeListArray.from_arrays(pa.array(arr.reshape(-1)),D)}),p)
def tryit(label, f):
    try: r=f(); print(label, 'OK', r)
    except Exception as e: print(label, 'ERR', type(e).__name__, str(e)[:250].replace('\n',' '))
rng=np.random.default_rng(0)
# hamming query
u=rng.integers(0,256,(300,8)).astype(np.uint8); ds=mk('/tmp/vecres/ham',u,8)
q=u[3]
r=ds.to_table(nearest={"column":"vec","q":q,"k":3,"metric":"hamming"}); print('hamming flat', r['_distance'].to_pylist(), [int(np.unpackbits(np.bitwise_xor(x,q)).sum()) for x in np.stack(r['vec'].to_numpy(zero_copy_only=False))])
ds.create_index("vec","IVF_FLAT",num_partitions=2,metric="hamming"); ds=lance.dataset('/tmp/vecres/ham')
r=ds.to_table(nearest={"column":"vec","q":q,"k":3}); print('hamming idx', r['_distance'].to_pylist())
# too few rows
v=rng.standard_normal((10,8)).astype(np.float32); ds=mk('/tmp/vecres/few',v,8)
tryit('10 rows, 16 partitions', lambda: ds.create_index("vec","IVF_FLAT",num_partitions=16))
tryit('10 rows IVF_PQ default', lambda: ds.create_index("vec","IVF_PQ",num_partitions=1,num_sub_vectors=2, replace=True))
print('versions', len(lance.dataset('/tmp/vecres/few').versions()))
# NaN
v=rng.standard_normal((1000,8)).astype(np.float32); v[5,2]=np.nan; ds=mk('/tmp/vecres/nan',v,8)
tryit('NaN IVF_FLAT', lambda: ds.create_index("vec","IVF_FLAT",num_partitions=2))
ds=lance.dataset('/tmp/vecres/nan')
if ds.list_indices():
    import sys; sys.path.insert(0,'/tmp/vecres'); import os
    from lance.file import LanceFileReader
    d='/tmp/vecres/nan/_indices/'+os.listdir('/tmp/vecres/nan/_indices')[0]; print('  indexed rows', LanceFileReader(d+'/auxiliary.idx').num_rows())
    print('  query', ds.to_table(nearest={"column":"vec","q":np.zeros(8),"k":2})['_distance'].to_pylist())
# nulls
arr=pa.FixedSizeListArray.from_arrays(pa.array(v.reshape(-1)),8, mask=pa.array([i==7 for i in range(1000)]))
shutil.rmtree('/tmp/vecres/nul',ignore_errors=True); ds=lance.write_dataset(pa.table({"vec":arr}),'/tmp/vecres/nul')
tryit('null IVF_PQ', lambda: ds.create_index("vec","IVF_PQ",num_partitions=2,num_sub_vectors=2))
ds=lance.dataset('/tmp/vecres/nul')
if ds.list_indices():
    import os
    from lance.file import LanceFileReader
    d='/tmp/vecres/nul/_indices/'+os.listdir('/tmp/vecres/nul/_indices')[0]; print('  indexed rows', LanceFileReader(d+'/auxiliary.idx').num_rows())
tryit('flat query on nulls', lambda: ds.to_table(nearest={"column":"vec","q":np.zeros(8),"k":2,"use_index":False})['_distance'].to_pylist())
tryit('bad metric query', lambda: ds.to_table(nearest={"column":"vec","q":np.zeros(8),"k":2,"metric":"foo"}))
tryit('dim mismatch', lambda: ds.to_table(nearest={"column":"vec","q":np.zeros(7),"k":2}))
tryit('k=0', lambda: ds.to_table(nearest={"column":"vec","q":np.zeros(8),"k":0}))
tryit('nsv not dividing', lambda: ds.create_index("vec","IVF_PQ",num_partitions=2,num_sub_vectors=3, replace=True))
tryit('bad type', lambda: ds.create_index("vec","IVF_XX"))
tryit('replace False existing', lambda: ds.create_index("vec","IVF_PQ",num_partitions=2,num_sub_vectors=2))
