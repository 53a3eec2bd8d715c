//! f32 values as message payloads (little-endian), and folding a payload into a buffer.

use super::Combine;

/// The little-endian bytes of `values`.
pub(super) fn encode(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// A payload whose size does not fit the buffer it is folded into.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "sent {received_bytes} bytes where {} ({expected_values} f32) were expected; do all ranks \
     pass buffers of the same length?",
    .expected_values * 4
)]
pub(super) struct PayloadSizeError {
    /// The size of the payload received.
    pub(super) received_bytes: usize,
    /// The length of the buffer, in f32 values.
    pub(super) expected_values: usize,
}

/// Folds the f32s in `bytes` into `dst` by `combine`; the error says how the sizes differ.
pub(super) fn combine_into(
    dst: &mut [f32],
    bytes: &[u8],
    combine: Combine,
) -> Result<(), PayloadSizeError> {
    if bytes.len() != dst.len() * 4 {
        return Err(PayloadSizeError {
            received_bytes: bytes.len(),
            expected_values: dst.len(),
        });
    }
    let incoming = bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    match combine {
        Combine::Add => dst.iter_mut().zip(incoming).for_each(|(d, v)| *d += v),
        Combine::Copy => dst.iter_mut().zip(incoming).for_each(|(d, v)| *d = v),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_survive_the_wire_bit_for_bit() {
        let values = [
            1.5f32,
            -0.0,
            f32::NAN,
            f32::INFINITY,
            f32::MIN_POSITIVE / 2.0,
        ];
        let mut out = [0.0f32; 5];
        combine_into(&mut out, &encode(&values), Combine::Copy).unwrap();
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&out), bits(&values));
    }

    #[test]
    fn add_folds_and_sizes_must_match() {
        let mut acc = [1.0f32, 2.0];
        combine_into(&mut acc, &encode(&[0.5, 0.25]), Combine::Add).unwrap();
        assert_eq!(acc, [1.5, 2.25]);
        let err = combine_into(&mut acc, &encode(&[1.0]), Combine::Add)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("sent 4 bytes where 8 (2 f32) were expected"),
            "{err}"
        );
    }
}
