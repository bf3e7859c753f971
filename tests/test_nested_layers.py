"""Fixed-size lists of nested types are stored as a rep/def *layer* (not a
leaf), whose page lengths count items; these cases nest them inside structs."""

from __future__ import annotations

import pyarrow as pa
import pytest
from datagen import assert_tables_equal, pylance_read

import lancelet.file

pytestmark = pytest.mark.pylance

S = pa.struct([("a", pa.int32()), ("b", pa.string())])
CASES = {
    "fsl_struct": pa.array([[{"a": 1, "b": "x"}, None], None, [{"a": 3, "b": None}, {"a": 4, "b": "q"}]] * 50,
                           pa.list_(S, 2)),
    "struct_fsl_struct": pa.array(
        [{"f": [{"a": 1, "b": "x"}, None]}, None, {"f": None}, {"f": [{"a": 3, "b": None}, {"a": 4, "b": "q"}]}] * 40,
        pa.struct([("f", pa.list_(S, 2))]),
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("writer", ["pylance", "lancelet"])
def test_fixed_size_list_layers(name, writer, tmp_path, lance_mod):
    t = pa.table({"id": pa.array(range(len(CASES[name]))), "col": CASES[name]})
    p = tmp_path / f"{name}.lance"
    if writer == "pylance":
        w = lance_mod.file.LanceFileWriter(str(p), t.schema, version="2.2")
        w.write_batch(t)
        w.close()
    else:
        lancelet.file.write_table(t, str(p), version="2.2")
    assert_tables_equal(pylance_read(p), t)
    r = lancelet.file.LanceFileReader(str(p))
    assert_tables_equal(r.read(), t)
    assert_tables_equal(r.read(offset=7, limit=31), t.slice(7, 31))
    idx = [5, 0, 99, 5, 42]
    assert_tables_equal(r.take(idx), t.take(idx))
