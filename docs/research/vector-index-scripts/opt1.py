import lance, numpy as np, pyarrow as pa, shutil, sys, os, json
sys.path.insert(0,'/tmp/vecres'); import pb
from lance.file import LanceFileReader
def show(p, label):
    ds=lance.dataset(p)
    print('---', label, 'version', ds.version, 'fragments', [f.fragment_id for f in ds.get_fragments()], 'rows', ds.count_rows())
    for m in pb.index_section(p):
        d=pb.index_meta(m); print('   idx', d['1:uuid'][:8], 'dsver', d['4:dataset_version'], 'bitmap', d['5:fragment_bitmap'], 'files', d.get('10:files'), 'details', {k:v for k,v in d['6:details'].items() if k!='9:params'})
        u=d['1:uuid']; u=f'{u[:8]}-{u[8:12]}-{u[12:16]}-{u[16:20]}-{u[20:]}'
        a=LanceFileReader(f'{p}/_indices/{u}/auxiliary.idx'); iv=pb.ivf(a.read_global_buffer(1))
        x=pb.ivf(LanceFileReader(f'{p}/_indices/{u}/index.idx').read_global_buffer(1))
        print('      aux lengths', iv['lengths'], 'rows', a.num_rows(), 'nlist', x['centroids_tensor']['shape'], 'loss', x.get('loss'))
    s=ds.stats.index_stats('vec_idx'); print('   stats', {k:v for k,v in s.items() if k not in ('indices','segments')})
    print('   list', [(i['uuid'][:8], sorted(i['fragment_ids'])) for i in ds.list_indices()])
    print('   dirs', sorted(os.listdir(p+'/_indices')))
vecs=np.load('vecs.npy'); extra=np.random.default_rng(99).standard_normal((500,32)).astype(np.float32)
for t in ['IVF_PQ','IVF_HNSW_SQ']:
    p=f'/tmp/vecres/opt_{t}'; shutil.rmtree(p,ignore_errors=True); shutil.copytree(f'/tmp/vecres/ds_{t}',p)
    ds=lance.dataset(p); show(p,t+' initial')
    ds.insert(pa.table({"id":np.arange(4000,4500),"vec":pa.FixedSizeListArray.from_arrays(pa.array(extra.reshape(-1)),32)}))
    ds=lance.dataset(p); ds.optimize.optimize_indices(); show(p,'after append+optimize_indices()')
    ds=lance.dataset(p); ds.insert(pa.table({"id":np.arange(4500,5000),"vec":pa.FixedSizeListArray.from_arrays(pa.array(extra.reshape(-1)),32)}))
    ds=lance.dataset(p); ds.optimize.optimize_indices(num_indices_to_merge=0); show(p,'after 2nd append + optimize(num_indices_to_merge=0)')
    q=np.random.default_rng(5).standard_normal(32).astype(np.float32)
    print(ds.scanner(nearest={"column":"vec","q":q,"k":5}, columns=["id"]).explain_plan(True))
    ds=lance.dataset(p); ds.optimize.optimize_indices(); show(p,'after optimize() again')
