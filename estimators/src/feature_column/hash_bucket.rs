//! `categorical_column_with_hash_bucket`: a category hashed into a fixed number of ids.

use datasets::{ColumnarRow, Schema};
use estimator::{Error, Result};
use serde::{Deserialize, Serialize};

use super::hash::hash_bucket;
use super::source::{Accept, InputSources};

/// A category hashed into `hash_bucket_size` ids (TF's
/// `categorical_column_with_hash_bucket`), with FNV-1a 64 so that ids are stable across
/// processes and machines. An `Int` input is hashed as its decimal text.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct HashBucketColumn {
    /// The input feature's name.
    pub key: String,
    /// Number of ids (> 0).
    pub hash_bucket_size: usize,
}

/// A category from input column `key`, id `fnv1a_64(value) % hash_bucket_size`.
pub fn categorical_column_with_hash_bucket(
    key: impl Into<String>,
    hash_bucket_size: usize,
) -> HashBucketColumn {
    HashBucketColumn {
        key: key.into(),
        hash_bucket_size,
    }
}

impl HashBucketColumn {
    /// The column's name: its key.
    pub fn name(&self) -> &str {
        &self.key
    }

    /// Number of ids.
    pub fn num_buckets(&self) -> usize {
        self.hash_bucket_size
    }

    /// Checks the size and records the key's place in the input.
    pub(crate) fn resolve(&self, inputs: &mut InputSources, schema: &Schema) -> Result<()> {
        if self.hash_bucket_size == 0 {
            return Err(Error::Config(format!(
                "feature column '{}': hash_bucket_size must be at least 1",
                self.key
            )));
        }
        inputs.add(schema, &self.key, &self.key, Accept::Categorical)
    }

    /// The id of the value in `example`.
    pub(crate) fn id(&self, inputs: &InputSources, example: &dyn ColumnarRow) -> Result<usize> {
        let raw = inputs.raw(&self.key, example)?;
        Ok(hash_bucket(&raw.token(), self.hash_bucket_size))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datasets::Example;

    #[test]
    fn ids_are_the_stable_fnv1a_buckets() {
        let schema = Schema::new().category("colour").int("n");
        let mut inputs = InputSources::new(&schema);
        let colour = categorical_column_with_hash_bucket("colour", 100);
        let n = categorical_column_with_hash_bucket("n", 10);
        colour.resolve(&mut inputs, &schema).unwrap();
        n.resolve(&mut inputs, &schema).unwrap();
        let ex = |c: &str, v: f32| Example {
            dense: vec![v],
            categorical: vec![c.into()],
            ..Example::default()
        };
        // fnv1a_64("red") = 0x89e9be1960f4c21c, "green" = 0x0f40f029637fecbc,
        // "blue" = 0xc5ccd29bc2dda64d: buckets 32, 60, 89 of 100.
        assert_eq!(colour.id(&inputs, &ex("red", 0.0)).unwrap(), 32);
        assert_eq!(colour.id(&inputs, &ex("green", 0.0)).unwrap(), 60);
        assert_eq!(colour.id(&inputs, &ex("blue", 0.0)).unwrap(), 89);
        // An Int input hashes as its decimal text: fnv1a_64("7") % 10 = 6.
        assert_eq!(n.id(&inputs, &ex("", 7.0)).unwrap(), 6);
    }

    #[test]
    fn zero_buckets_and_float_inputs_are_rejected() {
        let schema = Schema::new().category("c").float("x");
        let mut inputs = InputSources::new(&schema);
        let zero = categorical_column_with_hash_bucket("c", 0);
        assert!(zero
            .resolve(&mut inputs, &schema)
            .unwrap_err()
            .to_string()
            .contains("'c'"));
        let float = categorical_column_with_hash_bucket("x", 3);
        let err = float.resolve(&mut inputs, &schema).unwrap_err().to_string();
        assert!(err
            .contains("needs a categorical input (Category or Int), but the input's 'x' is Float"));
    }
}
