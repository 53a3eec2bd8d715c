//! TFRecord's masked CRC-32C: a CRC stored next to the data it covers would be the CRC of a
//! record that holds CRCs of its own, so TensorFlow rotates and offsets it first.

/// The constant TensorFlow adds after rotating (`kMaskDelta` in `tensorflow/core/lib/hash/crc32c.h`).
const MASK_DELTA: u32 = 0xa282_ead8;

/// The masked CRC-32C of `data`, as TFRecord framing stores it.
pub fn masked_crc32c(data: &[u8]) -> u32 {
    mask(crc32c::crc32c(data))
}

/// `((crc >> 15) | (crc << 17)) + 0xa282ead8`, wrapping.
pub(crate) fn mask(crc: u32) -> u32 {
    crc.rotate_right(15).wrapping_add(MASK_DELTA)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    // The mask as TensorFlow's documentation writes it, against the rotation used above.
    #[allow(clippy::manual_rotate)]
    fn known_values() {
        // CRC-32C's check value (RFC 3720), then masked by hand.
        assert_eq!(crc32c::crc32c(b"123456789"), 0xe306_9283);
        let crc = 0xe306_9283u32;
        assert_eq!(
            mask(crc),
            ((crc >> 15) | (crc << 17)).wrapping_add(0xa282_ead8)
        );
        // An empty record's two CRCs, as TensorFlow 2.15 writes them.
        assert_eq!(masked_crc32c(&0u64.to_le_bytes()), 0x0798_0329);
        assert_eq!(masked_crc32c(b""), 0xa282_ead8);
    }
}
