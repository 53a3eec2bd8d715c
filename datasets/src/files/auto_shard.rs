//! [`AutoShardPolicy`]: how the workers of a cluster split their input, as
//! `tf.data.experimental.AutoShardPolicy`.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::Error;

/// How the workers of a cluster split input files between them, as TF's
/// `tf.data.experimental.AutoShardPolicy`.
///
/// ```
/// use datasets::AutoShardPolicy;
///
/// // Eight files, two workers: each reads its own four.
/// assert_eq!(AutoShardPolicy::Auto.resolve(8, 2)?, AutoShardPolicy::File);
/// // One file, two workers: each reads every second row of it.
/// assert_eq!(AutoShardPolicy::Auto.resolve(1, 2)?, AutoShardPolicy::Data);
/// assert!(AutoShardPolicy::File.resolve(1, 2).is_err());
/// # Ok::<(), datasets::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum AutoShardPolicy {
    /// `FILE` when there are at least as many files as workers, else `DATA` (TF's default).
    #[default]
    Auto,
    /// Each worker reads its own files: file `i` of the sorted list goes to worker
    /// `i % workers`, so every file is read by exactly one worker. Fewer files than workers
    /// is an error, as in TF: a worker would have nothing to read.
    File,
    /// Every worker opens every file and keeps every `workers`-th row, from its rank on.
    Data,
    /// Every worker reads everything.
    Off,
}

impl AutoShardPolicy {
    /// The policy that applies to `files` files read by `workers` workers: `File`, `Data`
    /// or `Off` (`Auto` decided); an error for `File` with fewer files than workers, or no
    /// workers.
    pub fn resolve(self, files: usize, workers: usize) -> Result<AutoShardPolicy, Error> {
        if workers == 0 {
            return Err(Error::InvalidArgument(
                "auto-shard: a cluster has at least one worker".into(),
            ));
        }
        match self {
            AutoShardPolicy::Auto if files >= workers => Ok(AutoShardPolicy::File),
            AutoShardPolicy::Auto => Ok(AutoShardPolicy::Data),
            AutoShardPolicy::File if files < workers => Err(Error::InvalidArgument(format!(
                "auto-shard policy FILE needs at least as many files as workers: {files} \
                 file(s) for {workers} workers (use DATA, or AUTO to fall back to it)"
            ))),
            policy => Ok(policy),
        }
    }

    /// The name TF gives it: `AUTO`, `FILE`, `DATA`, `OFF`.
    pub fn name(self) -> &'static str {
        match self {
            AutoShardPolicy::Auto => "AUTO",
            AutoShardPolicy::File => "FILE",
            AutoShardPolicy::Data => "DATA",
            AutoShardPolicy::Off => "OFF",
        }
    }
}

impl fmt::Display for AutoShardPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for AutoShardPolicy {
    type Err = Error;

    /// `auto`, `file`, `data` or `off`, in any case.
    fn from_str(text: &str) -> Result<Self, Error> {
        match text.to_ascii_uppercase().as_str() {
            "AUTO" => Ok(AutoShardPolicy::Auto),
            "FILE" => Ok(AutoShardPolicy::File),
            "DATA" => Ok(AutoShardPolicy::Data),
            "OFF" => Ok(AutoShardPolicy::Off),
            _ => Err(Error::InvalidArgument(format!(
                "auto-shard policy '{text}': expected auto, file, data or off"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::AutoShardPolicy::{self, *};

    #[test]
    fn auto_is_file_with_enough_files_else_data() {
        assert_eq!(Auto.resolve(8, 2).unwrap(), File);
        assert_eq!(Auto.resolve(2, 2).unwrap(), File);
        assert_eq!(Auto.resolve(1, 2).unwrap(), Data);
        assert_eq!(Auto.resolve(1, 1).unwrap(), File);
        for policy in [Data, Off] {
            assert_eq!(policy.resolve(1, 4).unwrap(), policy);
        }
        assert_eq!(
            File.resolve(3, 4).unwrap_err().to_string(),
            "invalid argument: auto-shard policy FILE needs at least as many files as \
             workers: 3 file(s) for 4 workers (use DATA, or AUTO to fall back to it)"
        );
        assert!(Auto.resolve(3, 0).is_err());
    }

    #[test]
    fn names_parse_back() {
        for policy in [Auto, File, Data, Off] {
            assert_eq!(
                policy.to_string().parse::<AutoShardPolicy>().unwrap(),
                policy
            );
            assert_eq!(
                policy
                    .name()
                    .to_lowercase()
                    .parse::<AutoShardPolicy>()
                    .unwrap(),
                policy
            );
            let json = serde_json::to_string(&policy).unwrap();
            assert_eq!(json, format!("\"{}\"", policy.name()));
        }
        assert!("files".parse::<AutoShardPolicy>().is_err());
    }
}
