//! Tile metadata as TileDB 2.30 computes it when writing: per data tile
//! the minimum and maximum (fixed one-value numbers, bool, datetimes and
//! CHAR/ASCII cells; var-sized CHAR/ASCII strings), the sum (fixed
//! one-value non-string columns, dimensions included) and the null count
//! (nullable attributes), plus the fragment-wide minimum, maximum, sum and
//! null count derived from them. tiledb-py's aggregates read these, so the
//! rules (starting values, `strncmp` string order, saturating sums that
//! stop at the first overflow) follow TileDB's exactly.

use std::cmp::Ordering;

use super::super::datatype::Datatype;
use super::super::schema::float_value;
use super::super::schema::int_value;

/// Whether TileDB keeps tile minimum/maximum for a column.
pub fn has_min_max(t: Datatype, is_dim: bool, var: bool, cell_val_num: u32) -> bool {
    let stringy = matches!(t, Datatype::Char | Datatype::StringAscii);
    if is_dim || (!stringy && (var || cell_val_num != 1)) {
        return false;
    }
    !matches!(t, Datatype::Blob | Datatype::StringUtf8 | Datatype::Other(_))
}

/// Whether TileDB keeps tile sums for a column.
pub fn has_sum(t: Datatype, var: bool, cell_val_num: u32) -> bool {
    !var && cell_val_num == 1 && !matches!(t, Datatype::Blob | Datatype::StringUtf8 | Datatype::StringAscii | Datatype::Other(_))
}

/// How sums accumulate: i64, u64 or f64 (stored as their 8 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SumKind {
    Signed,
    Unsigned,
    Float,
}

/// The sum kind of a type.
pub fn sum_kind(t: Datatype) -> SumKind {
    match t {
        Datatype::Float32 | Datatype::Float64 => SumKind::Float,
        Datatype::UInt8 | Datatype::UInt16 | Datatype::UInt32 | Datatype::UInt64 | Datatype::Bool => SumKind::Unsigned,
        _ => SumKind::Signed,
    }
}

/// A running sum that saturates (and stops) at the first overflow.
#[derive(Debug, Clone, Copy)]
pub struct Sum {
    kind: SumKind,
    bits: u64,
    done: bool,
}

impl Sum {
    pub fn new(kind: SumKind) -> Self {
        Sum { kind, bits: 0, done: false }
    }
    /// Add a raw value of type `t`.
    pub fn add_value(&mut self, t: Datatype, v: &[u8]) {
        match self.kind {
            SumKind::Float => self.add_f64(float_value(t, v).unwrap_or(0.0)),
            SumKind::Signed if t == Datatype::Char => self.add_i64(v[0] as i8 as i64),
            SumKind::Signed => self.add_i64(int_value(t, v).unwrap_or(0) as i64),
            SumKind::Unsigned => self.add_u64(int_value(t, v).unwrap_or(0) as u64),
        }
    }
    /// Add another sum's bits (fragment-wide sums).
    pub fn add_bits(&mut self, bits: u64) {
        match self.kind {
            SumKind::Float => self.add_f64(f64::from_bits(bits)),
            SumKind::Signed => self.add_i64(bits as i64),
            SumKind::Unsigned => self.add_u64(bits),
        }
    }
    fn add_i64(&mut self, v: i64) {
        if self.done {
            return;
        }
        let s = self.bits as i64;
        if s > 0 && v > 0 && s > i64::MAX - v {
            self.bits = i64::MAX as u64;
            self.done = true;
        } else if s < 0 && v < 0 && s < i64::MIN - v {
            self.bits = i64::MIN as u64;
            self.done = true;
        } else {
            self.bits = s.wrapping_add(v) as u64;
        }
    }
    fn add_u64(&mut self, v: u64) {
        if self.done {
            return;
        }
        match self.bits.checked_add(v) {
            Some(x) => self.bits = x,
            None => {
                self.bits = u64::MAX;
                self.done = true;
            }
        }
    }
    fn add_f64(&mut self, v: f64) {
        if self.done {
            return;
        }
        let s = f64::from_bits(self.bits);
        if (s < 0.0) == (v < 0.0) && s.abs() > f64::MAX - v.abs() {
            self.bits = if s < 0.0 { f64::MIN } else { f64::MAX }.to_bits();
            self.done = true;
        } else {
            self.bits = (s + v).to_bits();
        }
    }
    /// The stored 8 bytes.
    pub fn bits(&self) -> u64 {
        self.bits
    }
}

/// C `strncmp`: compares unsigned bytes up to `n`, stopping at a NUL.
pub fn strncmp(a: &[u8], b: &[u8], n: usize) -> Ordering {
    for k in 0..n {
        let x = a.get(k).copied().unwrap_or(0);
        let y = b.get(k).copied().unwrap_or(0);
        if x != y {
            return x.cmp(&y);
        }
        if x == 0 {
            return Ordering::Equal;
        }
    }
    Ordering::Equal
}

/// The largest and the lowest value of a numeric type (the starting
/// minimum and maximum).
pub fn type_max_lowest(t: Datatype) -> (Vec<u8>, Vec<u8>) {
    let w = t.size();
    let (max, low): (Vec<u8>, Vec<u8>) = match t {
        Datatype::Float32 => (f32::MAX.to_le_bytes().to_vec(), f32::MIN.to_le_bytes().to_vec()),
        Datatype::Float64 => (f64::MAX.to_le_bytes().to_vec(), f64::MIN.to_le_bytes().to_vec()),
        _ if t.is_signed() || matches!(t, Datatype::Char) => {
            let m = (1i128 << (w * 8 - 1)) - 1;
            ((m as i64).to_le_bytes()[..w].to_vec(), ((-m - 1) as i64).to_le_bytes()[..w].to_vec())
        }
        _ => (vec![0xff; w], vec![0; w]),
    };
    (max, low)
}

/// `a < b` as C++ compares values of numeric type `t` (false with NaN).
pub fn less(t: Datatype, a: &[u8], b: &[u8]) -> bool {
    if let (Some(x), Some(y)) = (float_value(t, a), float_value(t, b)) {
        return x < y;
    }
    if matches!(t, Datatype::Char) {
        return (a[0] as i8) < (b[0] as i8);
    }
    match (int_value(t, a), int_value(t, b)) {
        (Some(x), Some(y)) => x < y,
        _ => a < b,
    }
}

/// Var-sized string order of TileDB's min/max: `strncmp` over the shorter
/// length, then the shorter string first.
pub fn var_cmp(a: &[u8], b: &[u8]) -> Ordering {
    match strncmp(a, b, a.len().min(b.len())) {
        Ordering::Equal => a.len().cmp(&b.len()),
        o => o,
    }
}

/// Running minimum/maximum of one tile or one fragment.
#[derive(Debug, Clone)]
pub struct MinMax {
    /// Numeric (typed, starting at the type's extremes), fixed string
    /// (`strncmp` over the cell) or var string.
    mode: Mode,
    pub min: Option<Vec<u8>>,
    pub max: Option<Vec<u8>>,
}

#[derive(Debug, Clone, Copy)]
enum Mode {
    Numeric(Datatype),
    FixedString(usize),
    VarString,
}

impl MinMax {
    /// For a column of type `t` with `cell_size` bytes per cell.
    pub fn new(t: Datatype, var: bool, cell_size: usize) -> Self {
        if var {
            MinMax { mode: Mode::VarString, min: None, max: None }
        } else if matches!(t, Datatype::Char | Datatype::StringAscii) {
            MinMax { mode: Mode::FixedString(cell_size), min: None, max: None }
        } else {
            let (mx, lo) = type_max_lowest(t);
            MinMax { mode: Mode::Numeric(t), min: Some(mx), max: Some(lo) }
        }
    }

    /// Fold in one value.
    pub fn add(&mut self, v: &[u8]) {
        match self.mode {
            Mode::Numeric(t) => {
                let mn = self.min.as_ref().expect("numeric min starts set");
                if !less(t, mn, v) {
                    self.min = Some(v.to_vec());
                }
                let mx = self.max.as_ref().expect("numeric max starts set");
                if !less(t, v, mx) {
                    self.max = Some(v.to_vec());
                }
            }
            Mode::FixedString(n) => {
                if self.min.as_ref().is_none_or(|m| strncmp(m, v, n) == Ordering::Greater) {
                    self.min = Some(v.to_vec());
                }
                if self.max.as_ref().is_none_or(|m| strncmp(m, v, n) == Ordering::Less) {
                    self.max = Some(v.to_vec());
                }
            }
            Mode::VarString => {
                if self.min.as_ref().is_none_or(|m| var_cmp(m, v) == Ordering::Greater) {
                    self.min = Some(v.to_vec());
                }
                if self.max.as_ref().is_none_or(|m| var_cmp(m, v) == Ordering::Less) {
                    self.max = Some(v.to_vec());
                }
            }
        }
    }
}
