//! The stable string hash behind hash buckets, OOV buckets and crosses: FNV-1a, 64 bits.
//!
//! Unlike `std`'s randomly keyed hasher, FNV-1a gives the same bucket on every machine, in
//! every process and in every release, which a trained model's saved weights rely on.

const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
const PRIME: u64 = 0x0000_0100_0000_01b3;

/// FNV-1a 64-bit hash of `bytes` (offset basis `0xcbf29ce484222325`, prime `0x100000001b3`).
pub fn fnv1a_64(bytes: &[u8]) -> u64 {
    fnv1a_64_extend(OFFSET_BASIS, bytes)
}

/// Continues an FNV-1a 64 hash `state` with more `bytes` (for hashing several parts).
pub(crate) fn fnv1a_64_extend(state: u64, bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .fold(state, |h, &b| (h ^ u64::from(b)).wrapping_mul(PRIME))
}

/// The bucket of `value` among `buckets` (> 0): `fnv1a_64(value) % buckets`.
pub fn hash_bucket(value: &str, buckets: usize) -> usize {
    (fnv1a_64(value.as_bytes()) % buckets as u64) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_published_fnv1a_64_test_vectors() {
        assert_eq!(fnv1a_64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a_64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a_64(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn extending_equals_hashing_the_concatenation() {
        let h = fnv1a_64_extend(fnv1a_64(b"foo"), b"bar");
        assert_eq!(h, fnv1a_64(b"foobar"));
    }

    #[test]
    fn buckets_are_stable() {
        assert_eq!(hash_bucket("a", 10), 6);
        assert_eq!(hash_bucket("foobar", 1000), 968);
    }
}
