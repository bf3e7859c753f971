//! Delete conditions: `__commits/__<t>_<t>_<uuid>_22.del`, a generic tile
//! holding a query-condition tree that TileDB applies on read to cells
//! written before the delete's timestamp.
//!
//! Node layout: an expression node is `u8 0, u8 combination (AND 0, OR 1,
//! NOT 2), u64 children`, then the children; a value node is `u8 1, u8 op
//! (LT 0, LE 1, GT 2, GE 3, EQ 4, NE 5), u32 field name length, name, u64
//! value length, value` (the value in the field's stored type).
//!
//! TileDB stores the condition **negated** (the cells that survive): the
//! negation is pushed down to the comparisons (De Morgan: AND <-> OR, LT
//! <-> GE, LE <-> GT, EQ <-> NE), and chains of one combination are flat,
//! as TileDB 2.30 writes them (checked against tiledb-py's `.del` files).
//! The condition comes in as lancelet SQL: comparisons of a column with a
//! constant, `BETWEEN`, `IN`, combined with `AND`, `OR`, `NOT`.

use super::super::datatype::Datatype;
use super::super::schema::ArraySchema;
use crate::error::{Error, Result};
use crate::expr::parse::{parse, BinOp, Node, Syn};
use crate::expr::plan::CmpOp;

/// A condition tree.
#[derive(Debug, Clone, PartialEq)]
pub enum Cond {
    /// `field op value`; op as stored (LT 0 .. NE 5).
    Cmp { op: u8, field: String, value: Vec<u8> },
    /// AND (0) or OR (1) of two or more children.
    Combine { op: u8, children: Vec<Cond> },
}

const LT: u8 = 0;
const LE: u8 = 1;
const GT: u8 = 2;
const GE: u8 = 3;
const EQ: u8 = 4;
const NE: u8 = 5;

fn negate_op(op: u8) -> u8 {
    match op {
        LT => GE,
        LE => GT,
        GT => LE,
        GE => LT,
        EQ => NE,
        _ => EQ,
    }
}

/// The swapped comparison (`3 < a` is `a > 3`).
fn mirror_op(op: u8) -> u8 {
    match op {
        LT => GT,
        LE => GE,
        GT => LT,
        GE => LE,
        other => other,
    }
}

/// Combine `children` with `op`, splicing children that already combine
/// with the same op (TileDB keeps such chains flat).
fn combine(op: u8, children: Vec<Cond>) -> Cond {
    let mut flat = Vec::new();
    for c in children {
        match c {
            Cond::Combine { op: o, children } if o == op => flat.extend(children),
            other => flat.push(other),
        }
    }
    if flat.len() == 1 {
        return flat.pop().expect("one child");
    }
    Cond::Combine { op, children: flat }
}

/// The negated condition, negation pushed down to the comparisons.
pub fn negate(c: Cond) -> Cond {
    match c {
        Cond::Cmp { op, field, value } => Cond::Cmp { op: negate_op(op), field, value },
        Cond::Combine { op, children } => combine(1 - op, children.into_iter().map(negate).collect()),
    }
}

/// Serialize a condition tree.
pub fn serialize(c: &Cond, out: &mut Vec<u8>) {
    match c {
        Cond::Cmp { op, field, value } => {
            out.push(1);
            out.push(*op);
            out.extend_from_slice(&(field.len() as u32).to_le_bytes());
            out.extend_from_slice(field.as_bytes());
            out.extend_from_slice(&(value.len() as u64).to_le_bytes());
            out.extend_from_slice(value);
        }
        Cond::Combine { op, children } => {
            out.push(0);
            out.push(*op);
            out.extend_from_slice(&(children.len() as u64).to_le_bytes());
            for ch in children {
                serialize(ch, out);
            }
        }
    }
}

struct Field {
    name: String,
    datatype: Datatype,
    var: bool,
    cell_val_num: u32,
}

fn field(schema: &ArraySchema, name: &str) -> Result<Field> {
    if let Some(d) = schema.dims.iter().find(|d| d.name == name) {
        return Ok(Field { name: d.name.clone(), datatype: d.datatype, var: d.is_var(), cell_val_num: d.cell_val_num });
    }
    if let Some(a) = schema.attrs.iter().find(|a| a.name == name) {
        return Ok(Field { name: a.name.clone(), datatype: a.datatype, var: a.is_var(), cell_val_num: a.cell_val_num });
    }
    Err(Error::invalid_input(format!("the delete condition names {name}, which is not a dimension or attribute")))
}

fn column_name(n: &Node) -> Option<String> {
    match &n.syn {
        Syn::Column(parts) if parts.len() == 1 => Some(parts[0].value.clone()),
        _ => None,
    }
}

/// A literal converted to `f`'s stored type.
fn literal(n: &Node, f: &Field) -> Result<Vec<u8>> {
    let bad = || Error::invalid_input(format!("the delete condition compares {} ({}) with an unsuitable value", f.name, f.datatype.name()));
    let number = |n: &Node| -> Option<String> {
        match &n.syn {
            Syn::Number(s) => Some(s.clone()),
            Syn::Neg(inner) => match &inner.syn {
                Syn::Number(s) => Some(format!("-{s}")),
                _ => None,
            },
            Syn::Plus(inner) => match &inner.syn {
                Syn::Number(s) => Some(s.clone()),
                _ => None,
            },
            _ => None,
        }
    };
    if f.datatype.is_bytes() {
        return match &n.syn {
            Syn::Str(s) if f.var || s.len() == f.cell_val_num as usize => Ok(s.as_bytes().to_vec()),
            _ => Err(bad()),
        };
    }
    if f.cell_val_num != 1 {
        return Err(Error::invalid_input(format!("the delete condition compares {}, which holds several values per cell", f.name)));
    }
    if f.datatype == Datatype::Bool {
        return match &n.syn {
            Syn::Bool(b) => Ok(vec![*b as u8]),
            _ => match number(n).as_deref() {
                Some("0") => Ok(vec![0]),
                Some("1") => Ok(vec![1]),
                _ => Err(bad()),
            },
        };
    }
    let text = number(n).ok_or_else(bad)?;
    let w = f.datatype.size();
    match f.datatype {
        Datatype::Float32 => Ok(text.parse::<f32>().map_err(|_| bad())?.to_le_bytes().to_vec()),
        Datatype::Float64 => Ok(text.parse::<f64>().map_err(|_| bad())?.to_le_bytes().to_vec()),
        t if t.is_integer() => {
            let v: i128 = text.parse().map_err(|_| bad())?;
            let (lo, hi) = if t.is_signed() { (-(1i128 << (w * 8 - 1)), (1i128 << (w * 8 - 1)) - 1) } else { (0, (1i128 << (w * 8)) - 1) };
            if v < lo || v > hi {
                return Err(Error::invalid_input(format!("the delete condition value {v} does not fit {} ({})", f.name, t.name())));
            }
            Ok((v as u128).to_le_bytes()[..w].to_vec())
        }
        _ => Err(bad()),
    }
}

fn cmp_code(op: CmpOp) -> Option<u8> {
    Some(match op {
        CmpOp::Eq => EQ,
        CmpOp::NotEq => NE,
        CmpOp::Lt => LT,
        CmpOp::LtEq => LE,
        CmpOp::Gt => GT,
        CmpOp::GtEq => GE,
        _ => return None,
    })
}

fn unsupported_part() -> Error {
    Error::invalid_input(
        "delete conditions take comparisons of a dimension or attribute with a constant (=, !=, <, <=, >, >=, BETWEEN, IN) \
         combined with AND, OR and NOT",
    )
}

fn compare(schema: &ArraySchema, col: &Node, op: u8, val: &Node) -> Result<Cond> {
    let name = column_name(col).ok_or_else(unsupported_part)?;
    let f = field(schema, &name)?;
    Ok(Cond::Cmp { op, value: literal(val, &f)?, field: f.name })
}

/// Build the (not yet negated) condition from a syntax tree.
fn build(schema: &ArraySchema, n: &Node) -> Result<Cond> {
    match &n.syn {
        Syn::Logic { and, terms } => {
            let kids = terms.iter().map(|t| build(schema, t)).collect::<Result<Vec<_>>>()?;
            Ok(combine(if *and { 0 } else { 1 }, kids))
        }
        Syn::Not(inner) => Ok(negate(build(schema, inner)?)),
        Syn::Binary { op: BinOp::Cmp(op), left, right } => {
            let code = cmp_code(*op).ok_or_else(unsupported_part)?;
            if column_name(left).is_some() {
                compare(schema, left, code, right)
            } else {
                compare(schema, right, mirror_op(code), left)
            }
        }
        Syn::Between { expr, low, high, negated } => {
            let c = combine(0, vec![compare(schema, expr, GE, low)?, compare(schema, expr, LE, high)?]);
            Ok(if *negated { negate(c) } else { c })
        }
        Syn::In { expr, list, negated } => {
            let kids = list.iter().map(|v| compare(schema, expr, EQ, v)).collect::<Result<Vec<_>>>()?;
            if kids.is_empty() {
                return Err(unsupported_part());
            }
            let c = combine(1, kids);
            Ok(if *negated { negate(c) } else { c })
        }
        _ => Err(unsupported_part()),
    }
}

/// The bytes of a `.del` tile's content for the lancelet SQL `filter`:
/// the negated condition.
pub fn delete_condition(schema: &ArraySchema, filter: &str) -> Result<Vec<u8>> {
    let node = parse(filter)?;
    let cond = negate(build(schema, &node)?);
    let mut out = Vec::new();
    serialize(&cond, &mut out);
    Ok(out)
}
