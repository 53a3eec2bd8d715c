//! [`TfRecordCompression`]: TensorFlow's `compression_type` of a TFRecord file.

use std::fmt;
use std::path::Path;
use std::str::FromStr;

use crate::Error;

/// How a TFRecord file is compressed, as `tf.data.TFRecordDataset`'s `compression_type`:
/// the whole stream of records is compressed, not each record.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum TfRecordCompression {
    /// `""` or `"NONE"`: records as they are.
    #[default]
    None,
    /// `"GZIP"`: one gzip stream (concatenated members are read too).
    Gzip,
    /// `"ZLIB"`: one zlib stream.
    Zlib,
}

impl TfRecordCompression {
    /// The compression a file's name implies: `GZIP` for `*.gz` and `*.gzip`, `ZLIB` for
    /// `*.zlib` and `*.zz`, none otherwise (TensorFlow itself never guesses; its writers
    /// add no suffix, so files written with compression by TensorFlow need it named).
    pub fn infer(path: &Path) -> Self {
        let extension = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        match extension.to_ascii_lowercase().as_str() {
            "gz" | "gzip" => TfRecordCompression::Gzip,
            "zlib" | "zz" => TfRecordCompression::Zlib,
            _ => TfRecordCompression::None,
        }
    }

    /// TensorFlow's name: `""`, `"GZIP"` or `"ZLIB"`.
    pub fn tf_name(self) -> &'static str {
        match self {
            TfRecordCompression::None => "",
            TfRecordCompression::Gzip => "GZIP",
            TfRecordCompression::Zlib => "ZLIB",
        }
    }
}

impl FromStr for TfRecordCompression {
    type Err = Error;

    /// TensorFlow's names, in any case: `""` or `NONE`, `GZIP`, `ZLIB`.
    fn from_str(name: &str) -> Result<Self, Error> {
        match name.to_ascii_uppercase().as_str() {
            "" | "NONE" => Ok(TfRecordCompression::None),
            "GZIP" => Ok(TfRecordCompression::Gzip),
            "ZLIB" => Ok(TfRecordCompression::Zlib),
            _ => Err(Error::InvalidArgument(format!(
                "TFRecord compression '{name}': expected \"\" (none), GZIP or ZLIB"
            ))),
        }
    }
}

impl fmt::Display for TfRecordCompression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TfRecordCompression::None => "none",
            other => other.tf_name(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_suffixes() {
        use TfRecordCompression::*;
        for (name, want) in [("", None), ("none", None), ("GZIP", Gzip), ("zlib", Zlib)] {
            assert_eq!(name.parse::<TfRecordCompression>().unwrap(), want);
        }
        let err = "LZ4".parse::<TfRecordCompression>().unwrap_err();
        assert!(err.to_string().contains("'LZ4'"), "{err}");
        for (path, want) in [
            ("a.tfrecord", None),
            ("a.tfrecord.gz", Gzip),
            ("a.TFRECORD.GZ", Gzip),
            ("a.tfrecord.zlib", Zlib),
            ("data-00000-of-00010", None),
        ] {
            assert_eq!(TfRecordCompression::infer(Path::new(path)), want, "{path}");
        }
        assert_eq!(Gzip.tf_name(), "GZIP");
        assert_eq!(None.to_string(), "none");
    }
}
