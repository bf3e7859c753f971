//! TileDB datatypes (the `uint8_t` codes stored in schemas and generic
//! tile headers), their byte widths and their Arrow counterparts.

use arrow_schema::{DataType, TimeUnit};

use crate::error::{Error, Result};

/// A TileDB datatype code and what lancelet knows about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Datatype {
    Int32,
    Int64,
    Float32,
    Float64,
    Char,
    Int8,
    UInt8,
    Int16,
    UInt16,
    UInt32,
    UInt64,
    StringAscii,
    StringUtf8,
    /// Another string encoding, DATETIME unit, TIME unit, ANY or GEOM type:
    /// the code is kept so errors can name it.
    Other(u8),
    /// `DATETIME_{SEC,MS,US,NS}` (codes 24–27), stored as int64.
    Datetime(TimeUnit),
    Blob,
    Bool,
}

impl Datatype {
    /// Decode the on-disk code.
    pub fn from_code(code: u8) -> Result<Self> {
        use Datatype::*;
        Ok(match code {
            0 => Int32,
            1 => Int64,
            2 => Float32,
            3 => Float64,
            4 => Char,
            5 => Int8,
            6 => UInt8,
            7 => Int16,
            8 => UInt16,
            9 => UInt32,
            10 => UInt64,
            11 => StringAscii,
            12 => StringUtf8,
            24 => Datetime(TimeUnit::Second),
            25 => Datetime(TimeUnit::Millisecond),
            26 => Datetime(TimeUnit::Microsecond),
            27 => Datetime(TimeUnit::Nanosecond),
            40 => Blob,
            41 => Bool,
            13..=23 | 28..=39 | 42 | 43 => Other(code),
            _ => return Err(Error::corrupt(format!("unknown TileDB datatype code {code}"))),
        })
    }

    /// The on-disk code.
    pub fn code(self) -> u8 {
        use Datatype::*;
        match self {
            Int32 => 0,
            Int64 => 1,
            Float32 => 2,
            Float64 => 3,
            Char => 4,
            Int8 => 5,
            UInt8 => 6,
            Int16 => 7,
            UInt16 => 8,
            UInt32 => 9,
            UInt64 => 10,
            StringAscii => 11,
            StringUtf8 => 12,
            Datetime(TimeUnit::Second) => 24,
            Datetime(TimeUnit::Millisecond) => 25,
            Datetime(TimeUnit::Microsecond) => 26,
            Datetime(TimeUnit::Nanosecond) => 27,
            Blob => 40,
            Bool => 41,
            Other(c) => c,
        }
    }

    /// TileDB's name for the type (used in messages and by Python).
    pub fn name(self) -> String {
        use Datatype::*;
        match self {
            Int32 => "INT32".into(),
            Int64 => "INT64".into(),
            Float32 => "FLOAT32".into(),
            Float64 => "FLOAT64".into(),
            Char => "CHAR".into(),
            Int8 => "INT8".into(),
            UInt8 => "UINT8".into(),
            Int16 => "INT16".into(),
            UInt16 => "UINT16".into(),
            UInt32 => "UINT32".into(),
            UInt64 => "UINT64".into(),
            StringAscii => "STRING_ASCII".into(),
            StringUtf8 => "STRING_UTF8".into(),
            Datetime(TimeUnit::Second) => "DATETIME_SEC".into(),
            Datetime(TimeUnit::Millisecond) => "DATETIME_MS".into(),
            Datetime(TimeUnit::Microsecond) => "DATETIME_US".into(),
            Datetime(TimeUnit::Nanosecond) => "DATETIME_NS".into(),
            Blob => "BLOB".into(),
            Bool => "BOOL".into(),
            Other(c) => format!("datatype code {c}"),
        }
    }

    /// Bytes per value.
    pub fn size(self) -> usize {
        use Datatype::*;
        match self {
            Int8 | UInt8 | Char | StringAscii | StringUtf8 | Blob | Bool => 1,
            Int16 | UInt16 => 2,
            Int32 | UInt32 | Float32 => 4,
            Int64 | UInt64 | Float64 | Datetime(_) => 8,
            Other(c) => match c {
                13 | 15 => 2,
                14 | 16 => 4,
                18..=39 => 8,
                _ => 1,
            },
        }
    }

    /// Signed or unsigned integer (datetimes included): the types integer
    /// filters (deltas, bit-width reduction) transform.
    pub fn is_integer(self) -> bool {
        use Datatype::*;
        matches!(self, Int8 | UInt8 | Int16 | UInt16 | Int32 | UInt32 | Int64 | UInt64 | Datetime(_) | Bool) || matches!(self, Other(18..=39))
    }

    /// A signed integer type (datetimes are int64).
    pub fn is_signed(self) -> bool {
        use Datatype::*;
        matches!(self, Int8 | Int16 | Int32 | Int64 | Datetime(_)) || matches!(self, Other(18..=39))
    }

    /// A text or byte-string type (one byte per value).
    pub fn is_bytes(self) -> bool {
        matches!(self, Datatype::Char | Datatype::StringAscii | Datatype::StringUtf8 | Datatype::Blob)
    }

    /// TileDB's default fill value for one value of the type (its
    /// `constants::fill_value`): the minimum of signed integers, datetimes
    /// and times, the maximum of unsigned integers, a quiet NaN, `0x80`
    /// (`CHAR_MIN`) for CHAR, zeros for strings, BLOB and BOOL.
    pub fn fill_value(self) -> Vec<u8> {
        use Datatype::*;
        let w = self.size();
        match self {
            Float32 => f32::NAN.to_le_bytes().to_vec(),
            Float64 => f64::NAN.to_le_bytes().to_vec(),
            Char => vec![0x80],
            UInt8 | UInt16 | UInt32 | UInt64 => vec![0xff; w],
            // Two's complement minimum: only the top bit set.
            _ if self.is_signed() => {
                let mut v = vec![0; w];
                v[w - 1] = 0x80;
                v
            }
            _ => vec![0; w],
        }
    }

    /// The Arrow type of one value (before var/fixed-list wrapping);
    /// `Unsupported` for types lancelet does not map.
    pub fn arrow_value_type(self) -> Result<DataType> {
        use Datatype::*;
        Ok(match self {
            Int8 => DataType::Int8,
            Int16 => DataType::Int16,
            Int32 => DataType::Int32,
            Int64 => DataType::Int64,
            UInt8 => DataType::UInt8,
            UInt16 => DataType::UInt16,
            UInt32 => DataType::UInt32,
            UInt64 => DataType::UInt64,
            Float32 => DataType::Float32,
            Float64 => DataType::Float64,
            Bool => DataType::Boolean,
            Datetime(u) => DataType::Timestamp(u, None),
            StringAscii | StringUtf8 => DataType::LargeUtf8,
            Char | Blob => DataType::LargeBinary,
            Other(_) => return Err(Error::unsupported(format!("TileDB type {}", self.name()))),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip() {
        for c in 0u8..=43 {
            let t = Datatype::from_code(c).unwrap();
            assert_eq!(t.code(), c);
        }
        assert!(Datatype::from_code(200).is_err());
    }

    #[test]
    fn fill_values_are_tiledbs() {
        use Datatype::*;
        assert_eq!(Int8.fill_value(), i8::MIN.to_le_bytes());
        assert_eq!(Int16.fill_value(), i16::MIN.to_le_bytes());
        assert_eq!(Int32.fill_value(), i32::MIN.to_le_bytes());
        assert_eq!(Int64.fill_value(), i64::MIN.to_le_bytes());
        assert_eq!(Datetime(TimeUnit::Nanosecond).fill_value(), i64::MIN.to_le_bytes());
        assert_eq!(UInt8.fill_value(), u8::MAX.to_le_bytes());
        assert_eq!(UInt16.fill_value(), u16::MAX.to_le_bytes());
        assert_eq!(UInt32.fill_value(), u32::MAX.to_le_bytes());
        assert_eq!(UInt64.fill_value(), u64::MAX.to_le_bytes());
        assert!(f32::from_le_bytes(Float32.fill_value().try_into().unwrap()).is_nan());
        assert!(f64::from_le_bytes(Float64.fill_value().try_into().unwrap()).is_nan());
        assert_eq!(Char.fill_value(), [0x80]);
        for t in [StringAscii, StringUtf8, Blob, Bool] {
            assert_eq!(t.fill_value(), [0]);
        }
    }
}
