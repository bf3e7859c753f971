//! SQL expressions that produce values (`add_columns({"b": "a * 2"})`):
//! the same parser, planner and kernels as filters, plus the result's
//! type and nullability.
//!
//! Nullability follows DataFusion's (what pylance reports for the same
//! expression): a column is nullable as its field (a struct path if any
//! step is), a literal only when it is NULL, operators when an operand
//! is, `IS [NOT] NULL|TRUE|FALSE|DISTINCT FROM` never, and scalar
//! functions always, except `coalesce` (not nullable when an argument is
//! not), `||`, `starts_with` and `strpos` (nullable when an argument is)
//! and `CASE` (when a branch is, or there is no `ELSE`).
//!
//! Arithmetic with a number literal keeps the other side's type when the
//! literal fits it exactly (`int32_col + 1` is int32, `uint8_col * 200`
//! wraps in uint8), as DataFusion does; otherwise both sides widen to a
//! common type (`int32_col + 1.5` is float64, where pylance refuses).

use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema};

use super::eval;
use super::plan::{self, Expr, Kind};
use crate::error::Result;
use crate::system_columns::{ROW_ADDR, ROW_ID};

/// A parsed, type-checked value expression.
#[derive(Debug, Clone)]
pub struct SqlValue {
    sql: String,
    expr: Expr,
    nullable: bool,
    columns: Vec<String>,
}

/// Whether a planned expression can produce nulls over `schema`.
pub fn nullable(e: &Expr, schema: &Schema) -> bool {
    match &e.kind {
        Kind::Column { name, path } => {
            let Ok(f) = schema.field_with_name(name) else { return true };
            let mut null = f.is_nullable();
            let mut dt = f.data_type().clone();
            for p in path {
                let DataType::Struct(kids) = &dt else { return true };
                let Some(k) = kids.iter().find(|k| k.name() == p) else { return true };
                null |= k.is_nullable();
                dt = k.data_type().clone();
            }
            null
        }
        Kind::Literal(a) => a.null_count() > 0 || matches!(a.data_type(), DataType::Null),
        Kind::Cast(x) | Kind::Neg(x) | Kind::Not(x) => nullable(x, schema),
        Kind::Cmp(op, a, b) => !matches!(op, plan::CmpOp::Distinct | plan::CmpOp::NotDistinct) && (nullable(a, schema) || nullable(b, schema)),
        Kind::Arith(_, a, b) => nullable(a, schema) || nullable(b, schema),
        Kind::And(terms) | Kind::Or(terms) => terms.iter().any(|t| nullable(t, schema)),
        Kind::InList { expr, .. } => nullable(expr, schema),
        Kind::IsNull(_) | Kind::IsNotNull(_) | Kind::Test(..) => false,
        Kind::Like { expr, pattern, .. } => nullable(expr, schema) || nullable(pattern, schema),
        Kind::Func(..) | Kind::ArrayHas { .. } => true,
        Kind::Call(c) => {
            let args: Vec<bool> = c.args.iter().map(|a| nullable(a, schema)).collect();
            super::functions::nullable(c, &args)
        }
    }
}

impl SqlValue {
    /// Parse `sql` and type-check it against `schema`; `_rowid` and
    /// `_rowaddr` may be used unless the schema has columns of those names.
    pub fn new(sql: &str, schema: &Schema) -> Result<Self> {
        let mut fields: Vec<Field> = schema.fields().iter().map(|f| f.as_ref().clone()).collect();
        for name in [ROW_ID, ROW_ADDR] {
            if schema.field_with_name(name).is_err() {
                fields.push(Field::new(name, DataType::UInt64, false));
            }
        }
        let full = Schema::new(fields);
        let expr = plan::plan_expr(sql, &full, "expression")?;
        let nullable = nullable(&expr, &full);
        let mut columns = Vec::new();
        expr.columns(&mut columns);
        Ok(SqlValue { sql: sql.to_string(), expr, nullable, columns })
    }

    /// Parse `sql` against `schema` (no `_rowid`/`_rowaddr`) and cast the
    /// value to `to`, as SQL's `CAST` (a literal that does not convert is an
    /// error now, a value that does not fit is an error when evaluated): an
    /// `update` value for a column of type `to`. `what` names the expression
    /// in errors (e.g. "update value of column \"x\"").
    pub fn with_type(sql: &str, schema: &Schema, to: &DataType, what: &str) -> Result<Self> {
        let planned = plan::plan_expr(sql, schema, what)?;
        let expr = super::coerce::cast_to(planned, to, true).map_err(|e| e.context(format_args!("{what} `{sql}`")))?;
        let nullable = nullable(&expr, schema);
        let mut columns = Vec::new();
        expr.columns(&mut columns);
        Ok(SqlValue { sql: sql.to_string(), expr, nullable, columns })
    }

    /// The expression's text.
    pub fn sql(&self) -> &str {
        &self.sql
    }

    /// The result type.
    pub fn data_type(&self) -> &DataType {
        &self.expr.data_type
    }

    /// Whether results can be null.
    pub fn nullable(&self) -> bool {
        self.nullable
    }

    /// Top-level columns read (`_rowid`/`_rowaddr` included when used).
    pub fn columns(&self) -> Vec<String> {
        self.columns.clone()
    }

    /// True for a NULL of a given type (`CAST(NULL AS int)`): a column of
    /// it needs no data.
    pub fn is_typed_null(&self) -> bool {
        matches!(&self.expr.kind, Kind::Literal(a) if a.null_count() == a.len() && !matches!(a.data_type(), DataType::Null))
    }

    /// The values for every row of `batch` (which has the columns read).
    pub fn evaluate(&self, batch: &RecordBatch) -> Result<ArrayRef> {
        let v = eval::eval(&self.expr, batch).map_err(|e| e.context(format_args!("evaluating `{}`", self.sql)))?;
        v.into_array(batch.num_rows())
    }
}
