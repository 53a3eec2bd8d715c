//! Properties of the checkpoint and index files: any bytes are a checkpoint or an error,
//! never a panic; a checkpoint reads back exactly; one changed byte anywhere is caught.

use proptest::prelude::*;
use serde_json::json;

use super::*;
use crate::checkpoint::CheckpointIndex;

fn checkpoint() -> impl Strategy<Value = Checkpoint> {
    (
        any::<u64>(),
        prop::collection::btree_map(
            "[a-z_]{1,8}",
            prop::collection::vec(any::<u8>(), 0..64),
            0..4,
        ),
        "[ -~]{0,20}",
    )
        .prop_map(|(global_step, sections, note)| Checkpoint {
            global_step,
            meta: json!({"note": note}),
            sections,
        })
}

proptest! {
    #[test]
    fn any_bytes_are_a_checkpoint_or_an_error(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        let _ = Checkpoint::decode(Path::new("any.ckpt"), &bytes);
        let mut with_magic = MAGIC.to_vec();
        with_magic.extend_from_slice(&bytes);
        let _ = Checkpoint::decode(Path::new("any.ckpt"), &with_magic);
    }

    #[test]
    fn a_checkpoint_reads_back_exactly(checkpoint in checkpoint()) {
        let bytes = checkpoint.encode();
        prop_assert_eq!(Checkpoint::decode(Path::new("c.ckpt"), &bytes).unwrap(), checkpoint);
    }

    #[test]
    fn one_changed_byte_anywhere_is_an_error(
        checkpoint in checkpoint(),
        at in any::<prop::sample::Index>(),
        flip in 1u8..=255,
    ) {
        let mut bytes = checkpoint.encode();
        let at = at.index(bytes.len());
        bytes[at] ^= flip;
        prop_assert!(Checkpoint::decode(Path::new("c.ckpt"), &bytes).is_err(), "byte {}", at);
        let truncated = &checkpoint.encode()[..at];
        prop_assert!(Checkpoint::decode(Path::new("c.ckpt"), truncated).is_err());
    }

    #[test]
    fn any_index_file_is_an_index_or_an_error(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(CheckpointIndex::path(dir.path()), &bytes).unwrap();
        let _ = CheckpointIndex::read(dir.path());
    }
}
