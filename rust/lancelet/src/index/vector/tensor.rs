//! `lance.index.pb.Tensor` values as f32 rows: IVF centroids and PQ
//! codebooks are stored in the vector column's element type (f16, f32,
//! f64, or u8 for hamming), little-endian, row-major.

use half::f16;

use crate::error::{Error, Result};
use crate::proto::index::{Tensor, TensorDataType};

/// A tensor's shape and values widened to f32.
#[derive(Debug, Clone, PartialEq)]
pub struct F32Tensor {
    /// Dimensions (`[rows, columns]` for centroids).
    pub shape: Vec<usize>,
    /// Row-major values.
    pub values: Vec<f32>,
}

/// Decode `t`, checking that its data holds exactly its shape.
pub fn decode(t: &Tensor) -> Result<F32Tensor> {
    let shape: Vec<usize> = t.shape.iter().map(|&d| d as usize).collect();
    let n = shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d)).ok_or_else(|| Error::corrupt(format!("tensor shape {shape:?} overflows")))?;
    let kind = TensorDataType::try_from(t.data_type).map_err(|_| Error::corrupt(format!("unknown tensor data type {}", t.data_type)))?;
    let width = match kind {
        TensorDataType::Float16 => 2,
        TensorDataType::Float32 => 4,
        TensorDataType::Float64 => 8,
        TensorDataType::Uint8 => 1,
        TensorDataType::Unspecified => return Err(Error::corrupt("tensor without a data type")),
    };
    if n.checked_mul(width) != Some(t.data.len()) {
        return Err(Error::corrupt(format!("tensor of shape {shape:?} ({kind:?}) holds {} bytes", t.data.len())));
    }
    let d = &t.data;
    let values = match kind {
        TensorDataType::Float16 => d.chunks_exact(2).map(|c| f16::from_le_bytes([c[0], c[1]]).to_f32()).collect(),
        TensorDataType::Float32 => d.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect(),
        TensorDataType::Float64 => d.chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes")) as f32).collect(),
        TensorDataType::Uint8 => d.iter().map(|&b| f32::from(b)).collect(),
        TensorDataType::Unspecified => unreachable!("refused above"),
    };
    Ok(F32Tensor { shape, values })
}

/// Encode f32 values as a tensor of `kind` (narrowing to f16, widening to
/// f64, or rounding to u8 as the column's type asks).
pub fn encode(kind: TensorDataType, shape: &[usize], values: &[f32]) -> Tensor {
    let data: Vec<u8> = match kind {
        TensorDataType::Float16 => values.iter().flat_map(|v| f16::from_f32(*v).to_le_bytes()).collect(),
        TensorDataType::Float64 => values.iter().flat_map(|v| f64::from(*v).to_le_bytes()).collect(),
        TensorDataType::Uint8 => values.iter().map(|v| v.round().clamp(0.0, 255.0) as u8).collect(),
        _ => values.iter().flat_map(|v| v.to_le_bytes()).collect(),
    };
    Tensor { data_type: kind as i32, shape: shape.iter().map(|&d| d as u32).collect(), data }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_checks_sizes() {
        for kind in [TensorDataType::Float16, TensorDataType::Float32, TensorDataType::Float64, TensorDataType::Uint8] {
            let t = encode(kind, &[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 250.0]);
            assert_eq!(decode(&t).unwrap(), F32Tensor { shape: vec![2, 3], values: vec![1.0, 2.0, 3.0, 4.0, 5.0, 250.0] });
            let mut bad = t.clone();
            bad.data.pop();
            assert!(matches!(decode(&bad), Err(Error::Corrupt { .. })));
        }
        let t = Tensor { data_type: 9, shape: vec![1], data: vec![0; 4] };
        assert!(decode(&t).is_err());
        let t = Tensor { data_type: 2, shape: vec![u32::MAX, u32::MAX, u32::MAX], data: vec![] };
        assert!(decode(&t).is_err());
    }
}
