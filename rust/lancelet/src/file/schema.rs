//! Lance schemas: a flat list of `lance.file.Field` rows (depth-first
//! pre-order, children point at parents through `parent_id`) with a
//! `logical_type` string per field, converted to and from Arrow schemas.
//!
//! Logical type strings: `int8`…`uint64`, `halffloat`/`float`/`double`,
//! `bool`, `null`, `string`/`large_string`, `binary`/`large_binary`,
//! `fixed_size_binary:N`, `decimal:128:P:S`/`decimal:256:P:S`,
//! `date32:day`, `date64:ms`, `time32:s|ms`, `time64:us|ns`,
//! `timestamp:UNIT:TZ` (`-` for no zone), `duration:UNIT`, `struct`,
//! `list`/`large_list` (`.struct` suffix when the item is a struct),
//! `fixed_size_list:ITEM:N` (no child row), `dict:VALUE:KEY:false`, `map`.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_schema::{DataType, Field, Fields, IntervalUnit, Schema, TimeUnit};

use crate::error::{Error, Result};
use crate::proto::file as pb;

/// One field of a Lance schema with its children attached.
#[derive(Debug, Clone, PartialEq)]
pub struct LanceField {
    /// The field id (unique in a dataset, assigned depth-first).
    pub id: i32,
    /// The Arrow field, including children.
    pub arrow: Field,
    /// Child fields (struct members, list item, map entries).
    pub children: Vec<LanceField>,
}

impl LanceField {
    /// All fields of this subtree in pre-order.
    pub fn preorder(&self) -> Vec<&LanceField> {
        let mut out = vec![self];
        for c in &self.children {
            out.extend(c.preorder());
        }
        out
    }
}

/// A Lance schema: top-level fields with ids, plus schema metadata.
#[derive(Debug, Clone, PartialEq)]
pub struct LanceSchema {
    /// Top-level fields.
    pub fields: Vec<LanceField>,
    /// Arrow schema metadata.
    pub metadata: HashMap<String, String>,
}

fn unit_str(u: TimeUnit) -> &'static str {
    match u {
        TimeUnit::Second => "s",
        TimeUnit::Millisecond => "ms",
        TimeUnit::Microsecond => "us",
        TimeUnit::Nanosecond => "ns",
    }
}

fn parse_unit(s: &str) -> Result<TimeUnit> {
    Ok(match s {
        "s" => TimeUnit::Second,
        "ms" => TimeUnit::Millisecond,
        "us" => TimeUnit::Microsecond,
        "ns" => TimeUnit::Nanosecond,
        other => return Err(Error::corrupt(format!("unknown time unit {other:?} in logical type"))),
    })
}

/// The logical type string of an Arrow type (for leaf-like types and the
/// head of nested ones).
pub fn logical_type(dt: &DataType) -> Result<String> {
    Ok(match dt {
        DataType::Null => "null".into(),
        DataType::Boolean => "bool".into(),
        DataType::Int8 => "int8".into(),
        DataType::Int16 => "int16".into(),
        DataType::Int32 => "int32".into(),
        DataType::Int64 => "int64".into(),
        DataType::UInt8 => "uint8".into(),
        DataType::UInt16 => "uint16".into(),
        DataType::UInt32 => "uint32".into(),
        DataType::UInt64 => "uint64".into(),
        DataType::Float16 => "halffloat".into(),
        DataType::Float32 => "float".into(),
        DataType::Float64 => "double".into(),
        DataType::Utf8 => "string".into(),
        DataType::LargeUtf8 => "large_string".into(),
        DataType::Binary => "binary".into(),
        DataType::LargeBinary => "large_binary".into(),
        DataType::FixedSizeBinary(n) => format!("fixed_size_binary:{n}"),
        DataType::Decimal128(p, s) => format!("decimal:128:{p}:{s}"),
        DataType::Decimal256(p, s) => format!("decimal:256:{p}:{s}"),
        DataType::Date32 => "date32:day".into(),
        DataType::Date64 => "date64:ms".into(),
        DataType::Time32(u) => format!("time32:{}", unit_str(*u)),
        DataType::Time64(u) => format!("time64:{}", unit_str(*u)),
        DataType::Timestamp(u, tz) => format!("timestamp:{}:{}", unit_str(*u), tz.as_deref().unwrap_or("-")),
        DataType::Duration(u) => format!("duration:{}", unit_str(*u)),
        DataType::Struct(_) => "struct".into(),
        DataType::List(f) | DataType::LargeList(f) => {
            let head = if matches!(dt, DataType::List(_)) { "list" } else { "large_list" };
            if matches!(f.data_type(), DataType::Struct(_)) {
                format!("{head}.struct")
            } else {
                head.into()
            }
        }
        DataType::FixedSizeList(f, n) if !fsl_is_leaf(f.data_type()) => format!("fixed_size_list:{}:{n}", logical_type(f.data_type())?),
        DataType::FixedSizeList(f, n) => format!("fixed_size_list:{}:{n}", fsl_item_type(f)?),
        DataType::Dictionary(k, v) => format!("dict:{}:{}:false", logical_type(v)?, logical_type(k)?),
        DataType::Map(_, _) => "map".into(),
        other => return Err(Error::unsupported(format!("Arrow type {other} cannot be stored in Lance"))),
    })
}

fn fsl_item_type(item: &Field) -> Result<String> {
    if item.metadata().get("ARROW:extension:name").map(String::as_str) == Some("lance.bfloat16") {
        return Ok("lance.bfloat16".into());
    }
    logical_type(item.data_type())
}

/// Parse a non-nested logical type (anything but struct/list/map heads).
fn parse_leaf_type(lt: &str) -> Result<DataType> {
    let parts: Vec<&str> = lt.split(':').collect();
    let bad = || Error::corrupt(format!("unknown logical type {lt:?}"));
    Ok(match parts.as_slice() {
        ["null"] => DataType::Null,
        ["bool"] => DataType::Boolean,
        ["int8"] => DataType::Int8,
        ["int16"] => DataType::Int16,
        ["int32"] => DataType::Int32,
        ["int64"] => DataType::Int64,
        ["uint8"] => DataType::UInt8,
        ["uint16"] => DataType::UInt16,
        ["uint32"] => DataType::UInt32,
        ["uint64"] => DataType::UInt64,
        ["halffloat"] => DataType::Float16,
        ["float"] => DataType::Float32,
        ["double"] => DataType::Float64,
        ["string"] => DataType::Utf8,
        ["large_string"] => DataType::LargeUtf8,
        ["binary"] => DataType::Binary,
        ["large_binary"] | ["json"] => DataType::LargeBinary,
        ["fixed_size_binary", n] => DataType::FixedSizeBinary(n.parse().map_err(|_| bad())?),
        ["decimal", "128", p, s] => DataType::Decimal128(p.parse().map_err(|_| bad())?, s.parse().map_err(|_| bad())?),
        ["decimal", "256", p, s] => DataType::Decimal256(p.parse().map_err(|_| bad())?, s.parse().map_err(|_| bad())?),
        ["date32", "day"] => DataType::Date32,
        ["date64", "ms"] => DataType::Date64,
        ["time32", u] => DataType::Time32(parse_unit(u)?),
        ["time64", u] => DataType::Time64(parse_unit(u)?),
        ["duration", u] => DataType::Duration(parse_unit(u)?),
        ["interval", "month_day_nano"] => DataType::Interval(IntervalUnit::MonthDayNano),
        ["timestamp", u, tz @ ..] => {
            // Zone names may themselves contain ':' (e.g. "+05:30").
            let tz = tz.join(":");
            let tz = if tz == "-" || tz.is_empty() { None } else { Some(Arc::from(tz.as_str())) };
            DataType::Timestamp(parse_unit(u)?, tz)
        }
        ["fixed_size_list", rest @ ..] if rest.len() >= 2 => {
            let n: i32 = rest[rest.len() - 1].parse().map_err(|_| bad())?;
            let item_lt = rest[..rest.len() - 1].join(":");
            let item = if item_lt == "lance.bfloat16" {
                let md = HashMap::from([("ARROW:extension:name".to_string(), "lance.bfloat16".to_string())]);
                Field::new("item", DataType::FixedSizeBinary(2), true).with_metadata(md)
            } else {
                Field::new("item", parse_leaf_type(&item_lt)?, true)
            };
            DataType::FixedSizeList(Arc::new(item), n)
        }
        ["dict", rest @ ..] if rest.len() >= 3 => {
            // dict:VALUE:KEY:ordered — the value type may contain ':'.
            let key = parse_leaf_type(rest[rest.len() - 2])?;
            // Arrow only builds dictionaries over integer keys (anything else
            // panics deep in arrow-array), so a float or string key is a
            // corrupt schema, not a type to pass on.
            if !key.is_dictionary_key_type() {
                return Err(Error::corrupt(format!("dictionary key type {key} in logical type {lt:?} is not an integer")));
            }
            let value = parse_leaf_type(&rest[..rest.len() - 2].join(":"))?;
            DataType::Dictionary(Box::new(key), Box::new(value))
        }
        _ => return Err(Error::unsupported(format!("unknown logical type {lt:?}"))),
    })
}

fn metadata_from_pb(md: &HashMap<String, Vec<u8>>) -> HashMap<String, String> {
    md.iter().map(|(k, v)| (k.clone(), String::from_utf8_lossy(v).into_owned())).collect()
}

impl LanceSchema {
    /// Build the field tree from flat protobuf rows.
    pub fn from_pb(fields: &[pb::Field], metadata: &HashMap<String, Vec<u8>>) -> Result<Self> {
        // pylance 14 writes the members of a blob v2 descriptor (a packed
        // struct stored as one column) as rows with id -1 and parent -1
        // right after the struct: they belong to the struct before them.
        let adopted: Vec<pb::Field>;
        let fields = if fields.iter().any(|f| f.id == -1) {
            let mut parent = None;
            adopted = fields
                .iter()
                .map(|f| {
                    let mut f = f.clone();
                    if f.id == -1 && f.parent_id == -1 {
                        if let Some(p) = parent {
                            f.parent_id = p;
                        }
                    } else if f.id != -1 {
                        parent = (f.logical_type == "struct").then_some(f.id);
                    }
                    f
                })
                .collect();
            adopted.as_slice()
        } else {
            fields
        };
        let mut children_of: HashMap<i32, Vec<&pb::Field>> = HashMap::new();
        let mut ids = std::collections::HashSet::new();
        // Such members carry no id of their own and have no children.
        let mut anonymous = 0usize;
        for f in fields {
            if f.id == -1 {
                anonymous += 1;
            } else if !ids.insert(f.id) {
                return Err(Error::corrupt(format!("schema has duplicate field id {}", f.id)));
            }
            children_of.entry(f.parent_id).or_default().push(f);
        }
        let roots = children_of.get(&-1).cloned().unwrap_or_default();
        let mut seen = 0usize;
        let fields = roots.into_iter().map(|f| build_field(f, &children_of, 0, &mut seen)).collect::<Result<Vec<_>>>()?;
        if seen != fields_len(fields.iter()) || seen != ids.len() + anonymous {
            return Err(Error::corrupt("schema has fields whose parent does not exist"));
        }
        Ok(LanceSchema { fields, metadata: metadata_from_pb(metadata) })
    }

    /// The Arrow schema.
    pub fn to_arrow(&self) -> Schema {
        Schema::new(self.fields.iter().map(|f| f.arrow.clone()).collect::<Vec<_>>()).with_metadata(self.metadata.clone())
    }

    /// Assign ids depth-first from 0 to an Arrow schema.
    pub fn from_arrow(schema: &Schema) -> Result<Self> {
        check_unique_names(schema.fields().iter().map(|f| f.as_ref()), "")?;
        let mut next = 0;
        let fields = schema.fields().iter().map(|f| assign_ids(f, &mut next)).collect::<Result<Vec<_>>>()?;
        Ok(LanceSchema { fields, metadata: schema.metadata().iter().map(|(k, v)| (k.clone(), v.clone())).collect() })
    }

    /// Flatten into protobuf rows (pre-order).
    pub fn to_pb(&self) -> Result<Vec<pb::Field>> {
        let mut out = Vec::new();
        for f in &self.fields {
            push_pb(f, -1, &mut out)?;
        }
        Ok(out)
    }

    /// Schema metadata in protobuf form.
    pub fn metadata_pb(&self) -> HashMap<String, Vec<u8>> {
        self.metadata.iter().map(|(k, v)| (k.clone(), v.clone().into_bytes())).collect()
    }
}

fn fields_len<'a>(fields: impl Iterator<Item = &'a LanceField>) -> usize {
    fields.map(|f| f.preorder().len()).sum()
}

const MAX_DEPTH: usize = 64;

fn build_field(f: &pb::Field, children_of: &HashMap<i32, Vec<&pb::Field>>, depth: usize, seen: &mut usize) -> Result<LanceField> {
    if depth > MAX_DEPTH {
        return Err(Error::corrupt("schema nests deeper than 64 levels (cycle?)"));
    }
    *seen += 1;
    let kids = if f.id == -1 { Vec::new() } else { children_of.get(&f.id).cloned().unwrap_or_default() };
    let children = kids.into_iter().map(|c| build_field(c, children_of, depth + 1, seen)).collect::<Result<Vec<_>>>()?;
    let lt = f.logical_type.as_str();
    let want_one_child = |what: &str| -> Result<Field> {
        match children.as_slice() {
            [c] => Ok(c.arrow.clone()),
            _ => Err(Error::corrupt(format!("{what} field {:?} (id {}) has {} children, expected 1", f.name, f.id, children.len()))),
        }
    };
    let dt = match lt {
        "struct" => DataType::Struct(Fields::from(children.iter().map(|c| c.arrow.clone()).collect::<Vec<_>>())),
        "list" | "list.struct" => DataType::List(Arc::new(want_one_child("list")?)),
        "large_list" | "large_list.struct" => DataType::LargeList(Arc::new(want_one_child("large_list")?)),
        "map" => {
            let entries = want_one_child("map")?;
            DataType::Map(Arc::new(entries), false)
        }
        other if other.starts_with("fixed_size_list:") && !children.is_empty() => {
            // A fixed-size list of a nested type keeps its item as a child row.
            let n: i32 =
                other.rsplit(':').next().and_then(|x| x.parse().ok()).ok_or_else(|| Error::corrupt(format!("bad logical type {other:?}")))?;
            DataType::FixedSizeList(Arc::new(want_one_child("fixed_size_list")?), n)
        }
        other => {
            if !children.is_empty() {
                return Err(Error::corrupt(format!("field {:?} of type {other} has children", f.name)));
            }
            parse_leaf_type(other).map_err(|e| e.context(format!("field {:?}", f.name)))?
        }
    };
    let mut md = metadata_from_pb(&f.metadata);
    if !f.extension_name.is_empty() {
        md.entry("ARROW:extension:name".into()).or_insert_with(|| f.extension_name.clone());
    }
    if lt == "json" {
        md.entry("ARROW:extension:name".into()).or_insert_with(|| "lance.json".into());
    }
    let arrow = Field::new(&f.name, dt, f.nullable).with_metadata(md);
    Ok(LanceField { id: f.id, arrow, children })
}

fn child_fields(dt: &DataType) -> Vec<&Field> {
    match dt {
        DataType::Struct(fs) => fs.iter().map(|f| f.as_ref()).collect(),
        DataType::List(f) | DataType::LargeList(f) | DataType::Map(f, _) => vec![f.as_ref()],
        DataType::FixedSizeList(f, _) if !fsl_is_leaf(f.data_type()) => vec![f.as_ref()],
        _ => vec![],
    }
}

/// Refuse two fields of one name among siblings, at any depth (columns,
/// struct children, the children of list items): neither pylance nor
/// lancelet can read such a dataset back (columns are found by name).
pub fn check_unique_names<'a>(fields: impl Iterator<Item = &'a Field>, parent: &str) -> Result<()> {
    let mut seen = std::collections::HashSet::new();
    for f in fields {
        let path = if parent.is_empty() { f.name().clone() } else { format!("{parent}.{}", f.name()) };
        if !seen.insert(f.name().as_str()) {
            return Err(Error::invalid_input(format!(
                "duplicate field name {path:?}: {} has two fields of that name",
                if parent.is_empty() { "the schema".to_string() } else { format!("{parent:?}") }
            )));
        }
        check_unique_names(child_fields(f.data_type()).into_iter(), &path)?;
    }
    Ok(())
}

fn assign_ids(f: &Field, next: &mut i32) -> Result<LanceField> {
    logical_type(f.data_type()).map_err(|e| e.context(format!("field {:?}", f.name())))?;
    let id = *next;
    *next += 1;
    let children = child_fields(f.data_type()).into_iter().map(|c| assign_ids(c, next)).collect::<Result<Vec<_>>>()?;
    Ok(LanceField { id, arrow: f.clone(), children })
}

/// A fixed-size list of fixed-width values is stored as one leaf; one of
/// anything else (structs, strings) keeps its item as a nested field.
pub fn fsl_is_leaf(item: &DataType) -> bool {
    match item {
        DataType::FixedSizeList(f, _) => fsl_is_leaf(f.data_type()),
        DataType::Boolean | DataType::FixedSizeBinary(_) => true,
        dt => dt.is_primitive(),
    }
}

fn legacy_encoding(dt: &DataType) -> pb::Encoding {
    match dt {
        DataType::Struct(_) | DataType::Null => pb::Encoding::None,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Binary | DataType::LargeBinary => pb::Encoding::VarBinary,
        DataType::Dictionary(_, _) => pb::Encoding::Dictionary,
        _ => pb::Encoding::Plain,
    }
}

/// Field metadata that declares an (unenforced) primary key column, and
/// its position in a compound key: Lance also records them in `Field`
/// fields 12/13, as pylance does for the namespace `__manifest` table.
const PK_POSITION_KEY: &str = "lance-schema:unenforced-primary-key:position";
const PK_KEY: &str = "lance-schema:unenforced-primary-key";

fn primary_key(md: &arrow_schema::Metadata) -> (bool, u32) {
    if let Some(pos) = md.get(PK_POSITION_KEY).and_then(|v| v.trim().parse::<u32>().ok()) {
        return (true, pos);
    }
    (md.get(PK_KEY).is_some_and(|v| v.trim().eq_ignore_ascii_case("true")), 0)
}

fn push_pb(f: &LanceField, parent: i32, out: &mut Vec<pb::Field>) -> Result<()> {
    let md = f.arrow.metadata().iter().map(|(k, v)| (k.clone(), v.clone().into_bytes())).collect();
    let (unenforced_primary_key, unenforced_primary_key_position) = primary_key(f.arrow.metadata());
    out.push(pb::Field {
        r#type: pb::field::Type::Parent as i32,
        name: f.arrow.name().clone(),
        id: f.id,
        parent_id: parent,
        logical_type: logical_type(f.arrow.data_type())?,
        nullable: f.arrow.is_nullable(),
        encoding: legacy_encoding(f.arrow.data_type()) as i32,
        metadata: md,
        unenforced_primary_key,
        unenforced_primary_key_position,
        ..Default::default()
    });
    for c in &f.children {
        push_pb(c, f.id, out)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logical_types_round_trip() {
        let types = vec![
            DataType::Timestamp(TimeUnit::Microsecond, Some("America/New_York".into())),
            DataType::Timestamp(TimeUnit::Nanosecond, None),
            DataType::Timestamp(TimeUnit::Second, Some("+05:30".into())),
            DataType::Decimal128(10, 2),
            DataType::Decimal256(40, -3),
            DataType::FixedSizeList(Arc::new(Field::new("item", DataType::Float32, true)), 128),
            DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)),
            DataType::Time32(TimeUnit::Millisecond),
            DataType::Duration(TimeUnit::Nanosecond),
        ];
        for dt in types {
            let lt = logical_type(&dt).unwrap();
            assert_eq!(parse_leaf_type(&lt).unwrap(), dt, "{lt}");
        }
    }

    #[test]
    fn nested_schema_round_trips_through_pb() {
        let item = Field::new("item", DataType::Struct(vec![Field::new("a", DataType::Int32, true)].into()), true);
        let schema = Schema::new(vec![Field::new("l", DataType::List(Arc::new(item)), true), Field::new("s", DataType::Utf8, false)]);
        let ls = LanceSchema::from_arrow(&schema).unwrap();
        let pbf = ls.to_pb().unwrap();
        assert_eq!(pbf.iter().map(|f| f.id).collect::<Vec<_>>(), vec![0, 1, 2, 3]);
        assert_eq!(pbf[0].logical_type, "list.struct");
        let back = LanceSchema::from_pb(&pbf, &HashMap::new()).unwrap();
        assert_eq!(back.to_arrow(), schema);
    }

    #[test]
    fn dictionary_keys_must_be_integers() {
        assert!(parse_leaf_type("dict:string:int16:false").is_ok());
        for lt in ["dict:string:float:false", "dict:string:string:false", "dict:int32:bool:false"] {
            let err = parse_leaf_type(lt).unwrap_err();
            assert!(matches!(err, Error::Corrupt { .. }), "{lt}: {err:?}");
        }
    }
}
