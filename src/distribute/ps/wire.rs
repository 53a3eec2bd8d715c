//! Variables on the wire: `f32` values as little-endian bytes.

use bytes::Bytes;

use super::proto;

/// `values` as the bytes of a [`proto::Variable`].
pub fn f32_bytes(values: &[f32]) -> Bytes {
    let mut out = Vec::with_capacity(values.len() * 4);
    for value in values {
        out.extend_from_slice(&value.to_le_bytes());
    }
    Bytes::from(out)
}

/// A variable whose bytes are not a whole number of `f32` values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("variable {path}: {bytes} bytes is not a whole number of f32 values")]
pub struct RaggedValues {
    /// The variable.
    pub path: String,
    /// Its byte count.
    pub bytes: usize,
}

/// The values of a [`proto::Variable`]; an error names the variable when the byte count is
/// not a multiple of 4.
pub fn f32_values(variable: &proto::Variable) -> Result<Vec<f32>, RaggedValues> {
    let bytes = &variable.values;
    if !bytes.len().is_multiple_of(4) {
        return Err(RaggedValues {
            path: variable.path.clone(),
            bytes: bytes.len(),
        });
    }
    Ok(bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

/// A [`proto::Variable`] of `path` with `values` (and `shape`, empty when the receiver knows
/// it).
pub fn variable(path: &str, shape: &[usize], values: &[f32]) -> proto::Variable {
    proto::Variable {
        path: path.to_string(),
        shape: shape.iter().map(|&d| d as u64).collect(),
        values: f32_bytes(values),
    }
}

/// The shape of a [`proto::Variable`].
pub fn shape(variable: &proto::Variable) -> Vec<usize> {
    variable.shape.iter().map(|&d| d as usize).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_bit_exactly() {
        let values = [0.0, -1.5, f32::MIN_POSITIVE, 3.25e7, f32::NAN];
        let encoded = variable("w", &[5], &values);
        let decoded = f32_values(&encoded).unwrap();
        assert_eq!(
            values.map(f32::to_bits).to_vec(),
            decoded.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        );
        assert_eq!(shape(&encoded), vec![5]);
        let broken = proto::Variable {
            path: "w".into(),
            shape: vec![],
            values: Bytes::from_static(&[1, 2, 3]),
        };
        assert!(f32_values(&broken)
            .unwrap_err()
            .to_string()
            .contains("variable w"));
    }
}
