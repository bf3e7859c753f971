import lance, numpy as np, pyarrow as pa, shutil, os, sys
sys.path.insert(0,'/tmp/vecres'); import pb
from lance.file import LanceFileReader
rng=np.random.default_rng(8); rows=[]
for i in range(600):
    n=rng.integers(1,4); rows.append(rng.standard_normal((n,8)).astype(np.float32).tolist())
typ=pa.list_(pa.list_(pa.float32(),8))
p='/tmp/vecres/mv'; shutil.rmtree(p,ignore_errors=True)
ds=lance.write_dataset(pa.table({"id":np.arange(600),"vec":pa.array(rows,type=typ)}),p)
for t,kw in [('IVF_PQ',dict(num_sub_vectors=2)),('IVF_FLAT',{})]:
    try:
        ds.create_index("vec",t,num_partitions=2,metric="cosine",replace=True,**kw); print(t,'cosine OK')
    except Exception as e: print(t,'ERR',type(e).__name__,str(e)[:200])
try: ds.create_index("vec","IVF_FLAT",num_partitions=2,metric="l2",replace=True)
except Exception as e: print('l2 ERR',type(e).__name__,str(e)[:200])
ds=lance.dataset(p)
d=p+'/_indices/'+sorted(os.listdir(p+'/_indices'))[0]
for u in os.listdir(p+'/_indices'):
    a=LanceFileReader(f'{p}/_indices/{u}/auxiliary.idx'); t=a.read_all().to_table(); print(u[:8], a.num_rows(), t.schema.remove_metadata().to_string().replace('\n',' | '))
q=np.array(rows[5],dtype=np.float32)
r=ds.to_table(nearest={"column":"vec","q":q,"k":3}, columns=["id"]); print(r.to_pydict())
print(ds.scanner(nearest={"column":"vec","q":q,"k":3}, columns=["id"]).explain_plan(True))
