//! Delete (and update) conditions: `__commits/<t>_<t>_<uuid>_<v>.del`.
//!
//! The file is one generic tile holding a serialized condition tree, stored
//! already **negated**: a cell survives the delete when the tree holds for
//! it. Nodes, front to back:
//! - expression: `u8 0, u8 combination (0 AND, 1 OR, 2 NOT), u64 children`,
//!   then the children;
//! - value: `u8 1, u8 op (0 <, 1 <=, 2 >, 3 >=, 4 =, 5 !=, 6 IN, 7 NOT IN,
//!   253 always true, 254 always false), u32 field name length, field name,
//!   u64 value length, value` (the field's stored bytes; length 0 compares
//!   with null) and for IN / NOT IN `u64 offsets length, u64 offsets` (each
//!   member's start in the value).
//!
//! Null cells (TileDB's rules): they satisfy only `= null`; `!= null` holds
//! for every non-null cell; every other comparison with a null cell fails.
//!
//! A delete at time `T` applies to the cells of fragments whose `t1 <= T`
//! (for fragments with per-cell timestamps, to their cells written at or
//! before `T`), when `T` lies in the open range. A commits consolidation
//! (`.con`) embeds the tile after the `.del` entry's line as `u64 size,
//! tile`.

use std::cmp::Ordering;

use super::cursor::Cursor;
use super::datatype::Datatype;
use super::fragment::TimestampedName;
use super::generic_tile::read_generic_tile;
use crate::error::{Error, Result};

/// Deepest condition tree accepted (bounds the recursion on hostile input).
pub const MAX_DEPTH: usize = 64;

/// A comparison operator of a value node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CondOp {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    In,
    NotIn,
    AlwaysTrue,
    AlwaysFalse,
}

impl CondOp {
    fn from_code(c: u8) -> Result<Self> {
        Ok(match c {
            0 => CondOp::Lt,
            1 => CondOp::Le,
            2 => CondOp::Gt,
            3 => CondOp::Ge,
            4 => CondOp::Eq,
            5 => CondOp::Ne,
            6 => CondOp::In,
            7 => CondOp::NotIn,
            253 => CondOp::AlwaysTrue,
            254 => CondOp::AlwaysFalse,
            _ => return Err(Error::corrupt(format!("unknown condition operator {c}"))),
        })
    }
}

/// A condition tree.
#[derive(Debug, Clone, PartialEq)]
pub enum Condition {
    And(Vec<Condition>),
    Or(Vec<Condition>),
    Not(Box<Condition>),
    /// `field op value`; `value` `None` is null; `set` holds IN members.
    Value {
        op: CondOp,
        field: String,
        value: Option<Vec<u8>>,
        set: Vec<Vec<u8>>,
    },
}

/// One cell's value of a field as the condition sees it.
#[derive(Debug, Clone, Copy)]
pub struct CellValue<'a> {
    pub datatype: Datatype,
    /// `None` for a null cell.
    pub bytes: Option<&'a [u8]>,
    /// Var-sized or several values per cell: compared as bytes.
    pub as_bytes: bool,
}

fn parse_node(c: &mut Cursor, depth: usize) -> Result<Condition> {
    if depth > MAX_DEPTH {
        return Err(Error::corrupt(format!("condition tree deeper than {MAX_DEPTH} levels")));
    }
    match c.u8("condition node type")? {
        0 => {
            let comb = c.u8("condition combination")?;
            let n = c.count(1, "condition children")?;
            let kids = (0..n).map(|_| parse_node(c, depth + 1)).collect::<Result<Vec<_>>>()?;
            match comb {
                0 => Ok(Condition::And(kids)),
                1 => Ok(Condition::Or(kids)),
                2 => {
                    let mut kids = kids;
                    if kids.len() != 1 {
                        return Err(Error::corrupt(format!("NOT node with {} children", kids.len())));
                    }
                    Ok(Condition::Not(Box::new(kids.remove(0))))
                }
                x => Err(Error::corrupt(format!("unknown condition combination {x}"))),
            }
        }
        1 => {
            let op = CondOp::from_code(c.u8("condition operator")?)?;
            let field = String::from_utf8(c.take_len_u32("condition field name")?.to_vec())
                .map_err(|_| Error::corrupt("condition field name is not UTF-8"))?;
            let data = c.take_len_u64("condition value")?;
            let mut set = Vec::new();
            if matches!(op, CondOp::In | CondOp::NotIn) {
                let offs = c.take_len_u64("condition set offsets")?;
                if offs.len() % 8 != 0 {
                    return Err(Error::corrupt(format!("condition set offsets of {} bytes", offs.len())));
                }
                let starts: Vec<u64> = offs.chunks_exact(8).map(|b| u64::from_le_bytes(b.try_into().unwrap_or_default())).collect();
                for (i, &s) in starts.iter().enumerate() {
                    let e = starts.get(i + 1).copied().unwrap_or(data.len() as u64);
                    if s > e || e > data.len() as u64 {
                        return Err(Error::corrupt(format!("condition set member {i} spans {s}..{e} of {} bytes", data.len())));
                    }
                    set.push(data[s as usize..e as usize].to_vec());
                }
            }
            let value = if data.is_empty() { None } else { Some(data.to_vec()) };
            Ok(Condition::Value { op, field, value, set })
        }
        t => Err(Error::corrupt(format!("unknown condition node type {t}"))),
    }
}

impl Condition {
    /// Parse a serialized tree (the bytes inside the generic tile).
    pub fn parse(bytes: &[u8]) -> Result<Self> {
        let mut c = Cursor::new(bytes);
        let tree = parse_node(&mut c, 0)?;
        if c.remaining() != 0 {
            return Err(Error::corrupt(format!("{} bytes after the condition tree", c.remaining())));
        }
        Ok(tree)
    }

    /// Every field the tree names.
    pub fn fields(&self, out: &mut Vec<String>) {
        match self {
            Condition::And(k) | Condition::Or(k) => k.iter().for_each(|c| c.fields(out)),
            Condition::Not(k) => k.fields(out),
            Condition::Value { field, op, .. } => {
                if !matches!(op, CondOp::AlwaysTrue | CondOp::AlwaysFalse) && !out.contains(field) {
                    out.push(field.clone())
                }
            }
        }
    }

    /// Whether the tree holds for a cell; `get` gives a field's value.
    pub fn holds<'a>(&self, get: &dyn Fn(&str) -> Result<CellValue<'a>>) -> Result<bool> {
        Ok(match self {
            Condition::And(k) => {
                for c in k {
                    if !c.holds(get)? {
                        return Ok(false);
                    }
                }
                true
            }
            Condition::Or(k) => {
                for c in k {
                    if c.holds(get)? {
                        return Ok(true);
                    }
                }
                false
            }
            Condition::Not(k) => !k.holds(get)?,
            Condition::Value { op, field, value, set } => match op {
                CondOp::AlwaysTrue => true,
                CondOp::AlwaysFalse => false,
                _ => compare(*op, get(field)?, value.as_deref(), set),
            },
        })
    }
}

fn compare(op: CondOp, cell: CellValue, value: Option<&[u8]>, set: &[Vec<u8>]) -> bool {
    let Some(x) = cell.bytes else {
        // A null cell equals only null.
        return op == CondOp::Eq && value.is_none();
    };
    if matches!(op, CondOp::In | CondOp::NotIn) {
        let member = set.iter().any(|m| m.as_slice() == x);
        return (op == CondOp::In) == member;
    }
    let Some(v) = value else {
        return op == CondOp::Ne;
    };
    let ord = if cell.as_bytes || cell.datatype.is_bytes() { x.cmp(v) } else { super::cells::cmp_values(cell.datatype, x, v) };
    match op {
        CondOp::Lt => ord == Ordering::Less,
        CondOp::Le => ord != Ordering::Greater,
        CondOp::Gt => ord == Ordering::Greater,
        CondOp::Ge => ord != Ordering::Less,
        CondOp::Eq => ord == Ordering::Equal,
        CondOp::Ne => ord != Ordering::Equal,
        _ => false,
    }
}

/// A delete commit visible in the open range.
#[derive(Debug, Clone)]
pub struct DeleteCondition {
    /// Commit file name (`__t_t_uuid_v.del`): the marker fragments list
    /// once they have applied it.
    pub marker: String,
    /// Its timestamp (the name's first).
    pub timestamp: u64,
    /// The stored (negated) tree: cells where it holds survive.
    pub keep: Condition,
}

impl DeleteCondition {
    /// Parse a `.del` commit's bytes (a generic tile); `marker` is its file
    /// name.
    pub fn parse(marker: &str, file: &[u8]) -> Result<Self> {
        let stem = marker.rsplit('/').next().unwrap_or(marker);
        if stem.ends_with(".upd") {
            return Err(Error::unsupported(format!("update conditions ({stem})")));
        }
        let ts = TimestampedName::parse(stem.split('.').next().unwrap_or(stem))?;
        let (bytes, end) = read_generic_tile(file, 0)?;
        if end != file.len() {
            return Err(Error::corrupt(format!("{} bytes after the delete condition tile", file.len() - end)));
        }
        Ok(DeleteCondition { marker: stem.to_string(), timestamp: ts.t1, keep: Condition::parse(&bytes)? })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // `a < 3 OR (s = 'x7' AND d >= 5)` as tiledb-py 0.36.1 stores it:
    // negated to `a >= 3 AND (s != 'x7' OR d < 5)`.
    const TREE: &str = "00 00 02 00 00 00 00 00 00 00 01 03 01 00 00 00 61 04 00 00 00 00 00 00 00 03 00 00 00 00 01 02 00 00 00 00 00 00 00 01 05 01 00 00 00 73 02 00 00 00 00 00 00 00 78 37 01 00 01 00 00 00 64 08 00 00 00 00 00 00 00 05 00 00 00 00 00 00 00";

    fn hex(s: &str) -> Vec<u8> {
        s.split(' ').map(|b| u8::from_str_radix(b, 16).unwrap()).collect()
    }

    #[test]
    fn parses_and_evaluates_tiledb_py_tree() {
        let t = Condition::parse(&hex(TREE)).unwrap();
        let mut f = Vec::new();
        t.fields(&mut f);
        assert_eq!(f, vec!["a", "s", "d"]);
        let cell = |a: i32, s: &'static str, d: i64| {
            move |name: &str| -> Result<CellValue<'static>> {
                let leak = |v: Vec<u8>| -> &'static [u8] { Box::leak(v.into_boxed_slice()) };
                Ok(match name {
                    "a" => CellValue { datatype: Datatype::Int32, bytes: Some(leak(a.to_le_bytes().to_vec())), as_bytes: false },
                    "s" => CellValue { datatype: Datatype::StringUtf8, bytes: Some(s.as_bytes()), as_bytes: true },
                    _ => CellValue { datatype: Datatype::Int64, bytes: Some(leak(d.to_le_bytes().to_vec())), as_bytes: false },
                })
            }
        };
        assert!(!t.holds(&cell(2, "x1", 1)).unwrap()); // a < 3: deleted
        assert!(t.holds(&cell(4, "x7", 1)).unwrap());
        assert!(!t.holds(&cell(4, "x7", 6)).unwrap());
        assert!(t.holds(&cell(-0x7fff_ffff, "", 0)).is_ok());
    }

    #[test]
    fn damaged_trees_are_corrupt() {
        let b = hex(TREE);
        for n in 0..b.len() {
            assert!(matches!(Condition::parse(&b[..n]), Err(Error::Corrupt { .. })), "prefix {n}");
        }
        let mut deep = Vec::new();
        for _ in 0..1000 {
            deep.extend_from_slice(&[0, 2, 1, 0, 0, 0, 0, 0, 0, 0]);
        }
        assert!(matches!(Condition::parse(&deep), Err(Error::Corrupt { .. })));
    }
}
