//! Checkpoint file names: `ckpt-{global_step}.ckpt`.

use std::path::{Path, PathBuf};

const PREFIX: &str = "ckpt-";
const SUFFIX: &str = ".ckpt";

/// The file name of the checkpoint for `global_step`, e.g. `ckpt-200.ckpt`.
pub fn checkpoint_file_name(global_step: u64) -> String {
    format!("{PREFIX}{global_step}{SUFFIX}")
}

/// The path of the checkpoint for `global_step` in `model_dir`.
pub fn checkpoint_path(model_dir: impl AsRef<Path>, global_step: u64) -> PathBuf {
    model_dir.as_ref().join(checkpoint_file_name(global_step))
}

/// The global step of a canonical checkpoint file name (`ckpt-200.ckpt` → 200), else `None`.
pub fn parse_checkpoint_file_name(name: &str) -> Option<u64> {
    let digits = name.strip_prefix(PREFIX)?.strip_suffix(SUFFIX)?;
    let step: u64 = digits.parse().ok()?;
    // Only the canonical spelling: no sign, no leading zeros, so name ↔ step is one-to-one.
    (checkpoint_file_name(step) == name).then_some(step)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        assert_eq!(checkpoint_file_name(200), "ckpt-200.ckpt");
        assert_eq!(
            checkpoint_path("model_dir", 0),
            Path::new("model_dir/ckpt-0.ckpt")
        );
        assert_eq!(parse_checkpoint_file_name("ckpt-200.ckpt"), Some(200));
        assert_eq!(parse_checkpoint_file_name("ckpt-0.ckpt"), Some(0));
        assert_eq!(
            parse_checkpoint_file_name(&checkpoint_file_name(u64::MAX)),
            Some(u64::MAX)
        );
    }

    #[test]
    fn rejects_other_names() {
        for name in [
            "checkpoint",
            "ckpt-.ckpt",
            "ckpt-0100.ckpt",
            "ckpt-+1.ckpt",
            "ckpt--1.ckpt",
            "ckpt-1.ckpt.tmp",
            ".ckpt-1.ckpt.tmp-42",
            "model-1.ckpt",
            "ckpt-99999999999999999999999.ckpt",
        ] {
            assert_eq!(parse_checkpoint_file_name(name), None, "{name}");
        }
    }
}
