import lance, numpy as np, pyarrow as pa, shutil, sys, os
sys.path.insert(0,'/tmp/vecres'); import pb
from lance.file import LanceFileReader
rng=np.random.default_rng(21); N=40000; vecs=rng.standard_normal((N,16)).astype(np.float32)
p='/tmp/vecres/cmp'; shutil.rmtree(p,ignore_errors=True)
ds=lance.write_dataset(pa.table({"id":np.arange(N),"vec":pa.FixedSizeListArray.from_arrays(pa.array(vecs.reshape(-1)),16)}),p,max_rows_per_file=10000)
ds.create_index("vec","IVF_PQ",num_partitions=8,num_sub_vectors=4)
def st(label):
    for m in pb.index_section(p):
        d=pb.index_meta(m); u=d['1:uuid']; u=f'{u[:8]}-{u[8:12]}-{u[12:16]}-{u[16:20]}-{u[20:]}'
        a=LanceFileReader(f'{p}/_indices/{u}/auxiliary.idx'); iv=pb.ivf(a.read_global_buffer(1)); r=a.read_all().to_table()['_rowid'].to_numpy()
        x=pb.ivf(LanceFileReader(f'{p}/_indices/{u}/index.idx').read_global_buffer(1))
        print(label, u[:8], 'bitmap', d['5:fragment_bitmap'], 'dsver', d['4:dataset_version'], 'rows', a.num_rows(), 'lengths', iv['lengths'], 'frags in rowids', sorted(set((r>>32).tolist())), 'sorted within parts', all(np.all(np.diff(r[o:o+l])>0) for o,l in zip(iv['offsets'],iv['lengths'])), 'loss', x.get('loss'), 'files', d.get('10:files'))
st('initial')
ds.delete("id % 10 = 0"); ds=lance.dataset(p); ds.optimize.compact_files(); st('after delete+compact')
