import lance, numpy as np
ds=lance.dataset('/tmp/vecres/ds_IVF_FLAT')
import shutil; shutil.rmtree('/tmp/vecres/sc',ignore_errors=True); shutil.copytree('/tmp/vecres/ds_IVF_FLAT','/tmp/vecres/sc')
ds=lance.dataset('/tmp/vecres/sc'); ds.create_scalar_index("id","BTREE"); ds=lance.dataset('/tmp/vecres/sc')
q=np.random.default_rng(5).standard_normal(32).astype(np.float32)
print(ds.scanner(nearest={"column":"vec","q":q,"k":3}, filter="id > 100", prefilter=True, columns=["id"]).explain_plan(True))
print(ds.scanner(nearest={"column":"vec","q":q,"k":3}, filter="id > 100", columns=["id"]).explain_plan(True))
for p in ['m_cosine_IVF_FLAT','m_dot_IVF_PQ']:
    d=lance.dataset('/tmp/vecres/'+p); qq=np.ones(16,dtype=np.float32)
    print(d.scanner(nearest={"column":"vec","q":qq,"k":3,"refine_factor":2}, columns=[]).explain_plan(True))
    print(d.to_table(nearest={"column":"vec","q":qq,"k":3}, columns=[]).to_pydict())
# metric override on indexed dataset
d=lance.dataset('/tmp/vecres/ds_IVF_FLAT')
print(d.scanner(nearest={"column":"vec","q":q,"k":3,"metric":"cosine"}, columns=["id"]).explain_plan(True))
print(d.to_table(nearest={"column":"vec","q":q,"k":3,"metric":"cosine"}, columns=["id"]).to_pydict())
