//! The tags of the messages the transport itself sends on a `Deliver` stream, which the
//! receiver handles instead of delivering: a top byte no collective phase uses.

/// An idle stream's sign of life.
pub(super) const HEARTBEAT_TAG: u64 = 0xff << 56;

/// A rank's last word when it gives up: the rank it found missing (u64 little-endian), so
/// that the others name the same one rather than the rank that left first.
pub(super) const GIVE_UP_TAG: u64 = 0xfe << 56;

/// The payload of a give-up message naming `missing`.
pub(super) fn give_up_payload(missing: usize) -> Vec<u8> {
    (missing as u64).to_le_bytes().to_vec()
}

/// The rank a give-up message names; `None` for a payload that is not one.
pub(super) fn missing_rank(payload: &[u8]) -> Option<usize> {
    let bytes: [u8; 8] = payload.try_into().ok()?;
    usize::try_from(u64::from_le_bytes(bytes)).ok()
}
