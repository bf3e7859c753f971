//! The schema of the data files an append writes: the dataset fields the
//! input has, in the input's order, with the dataset's field ids.
//!
//! pylance 14 accepts an append whose columns are reordered or a subset of
//! the dataset's (struct children included, at any depth), as long as every
//! missing field is nullable: each data file stores the fields it was
//! given, in the order given (`DataFile.fields` e.g. `[2, 0, 1]`), and
//! readers fill the missing ones with nulls. Extra fields, a missing
//! non-nullable field and a type that differs are refused. lancelet does
//! the same.

use arrow_schema::{DataType, Field, Fields, Schema};

use crate::error::{Error, Result};
use crate::file::schema::{LanceField, LanceSchema};

/// The subset of `dataset` present in `input`, ordered as in `input`.
pub fn write_schema(dataset: &LanceSchema, input: &Schema) -> Result<LanceSchema> {
    crate::file::schema::check_unique_names(input.fields().iter().map(|f| f.as_ref()), "")?;
    let fields = match_fields(&dataset.fields, input.fields(), "")?;
    if fields.is_empty() {
        return Err(Error::invalid_input("the data has none of the dataset's columns"));
    }
    Ok(LanceSchema { fields, metadata: dataset.metadata.clone() })
}

fn match_fields(have: &[LanceField], got: &Fields, prefix: &str) -> Result<Vec<LanceField>> {
    let mut out = Vec::with_capacity(got.len());
    for g in got {
        let Some(f) = have.iter().find(|f| f.arrow.name() == g.name()) else {
            return Err(Error::invalid_input(format!(
                "field {:?} is not in the dataset schema (dataset fields{}: {})",
                format!("{prefix}{}", g.name()),
                if prefix.is_empty() { String::new() } else { format!(" of {}", prefix.trim_end_matches('.')) },
                have.iter().map(|f| f.arrow.name().as_str()).collect::<Vec<_>>().join(", ")
            )));
        };
        let path = format!("{prefix}{}", g.name());
        out.push(match (f.arrow.data_type(), g.data_type()) {
            (DataType::Struct(_), DataType::Struct(gc)) => {
                let children = match_fields(&f.children, gc, &format!("{path}."))?;
                let arrow_children: Vec<Field> = children.iter().map(|c| c.arrow.clone()).collect();
                let arrow = Field::new(f.arrow.name(), DataType::Struct(arrow_children.into()), f.arrow.is_nullable())
                    .with_metadata(f.arrow.metadata().clone());
                LanceField { id: f.id, arrow, children }
            }
            (want, have_t) if have_t.equals_datatype(want) => f.clone(),
            (want, have_t) => return Err(Error::invalid_input(format!("field {path:?} has type {have_t} in the data but {want} in the dataset"))),
        });
    }
    for f in have {
        if !f.arrow.is_nullable() && !got.iter().any(|g| g.name() == f.arrow.name()) {
            return Err(Error::invalid_input(format!(
                "field {:?} of the dataset schema is missing from the data and is not nullable",
                format!("{prefix}{}", f.arrow.name())
            )));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dataset() -> LanceSchema {
        let st = DataType::Struct(vec![Field::new("x", DataType::Int64, true), Field::new("y", DataType::Utf8, true)].into());
        LanceSchema::from_arrow(&Schema::new(vec![
            Field::new("a", DataType::Int64, false),
            Field::new("b", DataType::Utf8, true),
            Field::new("s", st, true),
        ]))
        .unwrap()
    }

    fn ids(s: &LanceSchema) -> Vec<i32> {
        s.fields.iter().flat_map(|f| f.preorder()).map(|f| f.id).collect()
    }

    #[test]
    fn reorder_and_subsets() {
        let ds = dataset();
        let same = write_schema(&ds, &ds.to_arrow()).unwrap();
        assert_eq!(same, ds);
        let y = DataType::Struct(vec![Field::new("y", DataType::Utf8, true), Field::new("x", DataType::Int64, true)].into());
        let input = Schema::new(vec![Field::new("s", y, true), Field::new("a", DataType::Int64, true)]);
        let w = write_schema(&ds, &input).unwrap();
        assert_eq!(ids(&w), vec![2, 4, 3, 0]);
        assert!(!w.fields[1].arrow.is_nullable(), "dataset nullability kept");
    }

    #[test]
    fn refusals() {
        let ds = dataset();
        let e = write_schema(&ds, &Schema::new(vec![Field::new("b", DataType::Utf8, true)])).unwrap_err().to_string();
        assert!(e.contains("\"a\"") && e.contains("not nullable"), "{e}");
        let e = write_schema(&ds, &Schema::new(vec![Field::new("a", DataType::Int32, false)])).unwrap_err().to_string();
        assert!(e.contains("Int32") && e.contains("Int64"), "{e}");
        let e = write_schema(&ds, &Schema::new(vec![Field::new("a", DataType::Int64, false), Field::new("z", DataType::Int64, true)]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("\"z\""), "{e}");
        let bad = DataType::Struct(vec![Field::new("q", DataType::Int64, true)].into());
        let e = write_schema(&ds, &Schema::new(vec![Field::new("a", DataType::Int64, false), Field::new("s", bad, true)])).unwrap_err().to_string();
        assert!(e.contains("\"s.q\""), "{e}");
    }
}
