//! `crossed_column`: combinations of categorical features, hashed into ids.

use datasets::{ColumnarRow, Schema};
use estimator::{Error, Result};
use serde::{Deserialize, Serialize};

use super::bucketized::BucketizedColumn;
use super::categorical::CategoricalColumn;
use super::hash::{fnv1a_64, fnv1a_64_extend};
use super::hash_bucket::HashBucketColumn;
use super::identity::IdentityColumn;
use super::source::{Accept, InputSources};
use super::vocabulary::VocabularyListColumn;

/// The most ids a cross may give an example: its components' id counts multiplied.
const MAX_IDS_PER_EXAMPLE: usize = 4096;

/// One component of a cross: a raw input key, or a categorical column's id.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "snake_case")]
pub enum CrossSource {
    /// An input feature (`Category` or `Int`), crossed by its text.
    Key(String),
    /// A categorical (or bucketized) column, crossed by its id.
    Column(CategoricalColumn),
}

/// The cross of several categorical features (TF's `crossed_column`), for linear models.
///
/// A component of several ids an example (a bucketized column of a shaped numeric column)
/// crosses each of them, so an example has one id per combination of its components' ids,
/// as TF's `sparse_cross` ([`ids_per_example`](Self::ids_per_example)).
///
/// The id of an example is FNV-1a 64 over its components' texts joined by the byte
/// `0x1F`, modulo `hash_bucket_size`; a component's text is the raw value for a key and the
/// decimal id for a column (so `crossed_column(["a", "b"])` of `("x", "y")` is
/// `fnv1a_64(b"x\x1fy") % hash_bucket_size`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct CrossedColumn {
    /// The crossed components (at least two).
    pub keys: Vec<CrossSource>,
    /// Number of ids (> 0).
    pub hash_bucket_size: usize,
}

/// Crosses `keys` (input names or categorical columns) into `hash_bucket_size` ids.
pub fn crossed_column<K: Into<CrossSource>>(
    keys: impl IntoIterator<Item = K>,
    hash_bucket_size: usize,
) -> CrossedColumn {
    CrossedColumn {
        keys: keys.into_iter().map(Into::into).collect(),
        hash_bucket_size,
    }
}

impl CrossSource {
    fn name(&self) -> String {
        match self {
            CrossSource::Key(k) => k.clone(),
            CrossSource::Column(c) => c.name(),
        }
    }
}

impl CrossedColumn {
    /// The column's name: the components' names joined by `_X_` (as TF).
    pub fn name(&self) -> String {
        let names: Vec<String> = self.keys.iter().map(CrossSource::name).collect();
        names.join("_X_")
    }

    /// Number of ids.
    pub fn num_buckets(&self) -> usize {
        self.hash_bucket_size
    }

    /// Checks the cross and resolves every component.
    pub(crate) fn resolve(&self, inputs: &mut InputSources, schema: &Schema) -> Result<()> {
        let name = self.name();
        if self.keys.len() < 2 {
            return Err(Error::Config(format!(
                "feature column '{name}': a cross needs at least two keys"
            )));
        }
        if self.hash_bucket_size == 0 {
            return Err(Error::Config(format!(
                "feature column '{name}': hash_bucket_size must be at least 1"
            )));
        }
        for key in &self.keys {
            match key {
                CrossSource::Key(k) => inputs.add(schema, k, &name, Accept::Categorical)?,
                CrossSource::Column(c) => c.resolve(inputs, schema)?,
            }
        }
        if self.ids_per_example() > MAX_IDS_PER_EXAMPLE {
            return Err(Error::Config(format!(
                "feature column '{name}': its components give {} combinations an example, more \
                 than {MAX_IDS_PER_EXAMPLE}",
                self.ids_per_example()
            )));
        }
        Ok(())
    }

    /// How many ids an example has: every combination of its components' ids, so the
    /// product of their counts (a shaped bucketized component has one per value).
    pub fn ids_per_example(&self) -> usize {
        (self.keys.iter())
            .map(|key| match key {
                CrossSource::Key(_) => 1,
                CrossSource::Column(c) => c.ids_per_example(),
            })
            .fold(1usize, usize::saturating_mul)
    }

    /// The ids of the cross in `example`, one per combination of its components' ids (as
    /// TF's `sparse_cross`), the first component's varying slowest.
    pub(crate) fn ids(
        &self,
        inputs: &InputSources,
        example: &dyn ColumnarRow,
    ) -> Result<Vec<usize>> {
        let mut hashes: Vec<Option<u64>> = vec![None];
        for key in &self.keys {
            let texts: Vec<String> = match key {
                CrossSource::Key(k) => vec![inputs.raw(k, example)?.token().into_owned()],
                CrossSource::Column(c) => (c.ids(inputs, example)?.iter())
                    .map(usize::to_string)
                    .collect(),
            };
            hashes = (hashes.iter())
                .flat_map(|hash| texts.iter().map(move |text| (*hash, text)))
                .map(|(hash, text)| {
                    Some(match hash {
                        None => fnv1a_64(text.as_bytes()),
                        Some(h) => fnv1a_64_extend(fnv1a_64_extend(h, &[0x1f]), text.as_bytes()),
                    })
                })
                .collect();
        }
        let buckets = self.hash_bucket_size as u64;
        Ok((hashes.into_iter())
            .map(|hash| (hash.unwrap_or_default() % buckets) as usize)
            .collect())
    }
}

impl From<&str> for CrossSource {
    fn from(key: &str) -> Self {
        CrossSource::Key(key.to_string())
    }
}

impl From<String> for CrossSource {
    fn from(key: String) -> Self {
        CrossSource::Key(key)
    }
}

impl From<CategoricalColumn> for CrossSource {
    fn from(column: CategoricalColumn) -> Self {
        CrossSource::Column(column)
    }
}

impl From<VocabularyListColumn> for CrossSource {
    fn from(column: VocabularyListColumn) -> Self {
        CrossSource::Column(column.into())
    }
}

impl From<HashBucketColumn> for CrossSource {
    fn from(column: HashBucketColumn) -> Self {
        CrossSource::Column(column.into())
    }
}

impl From<IdentityColumn> for CrossSource {
    fn from(column: IdentityColumn) -> Self {
        CrossSource::Column(column.into())
    }
}

impl From<BucketizedColumn> for CrossSource {
    fn from(column: BucketizedColumn) -> Self {
        CrossSource::Column(column.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::feature_column::{bucketized_column, numeric_column};
    use datasets::Example;

    #[test]
    fn cross_ids_hash_the_joined_component_texts() {
        let schema = Schema::new().category("a").category("b").float("x");
        let mut inputs = InputSources::new(&schema);
        let ab = crossed_column(["a", "b"], 1000);
        assert_eq!(ab.name(), "a_X_b");
        ab.resolve(&mut inputs, &schema).unwrap();
        let ex = Example {
            dense: vec![2.5],
            categorical: vec!["x".into(), "y".into()],
            ..Example::default()
        };
        // fnv1a_64(b"x\x1fy") = 0xbe99a9197effd3c3; % 1000 = 859.
        assert_eq!(ab.ids(&inputs, &ex).unwrap(), [859]);

        let with_bucket = crossed_column(
            [
                CrossSource::from("a"),
                bucketized_column(numeric_column("x"), [1.0, 2.0]).into(),
            ],
            1000,
        );
        assert_eq!(with_bucket.name(), "a_X_x_bucketized");
        with_bucket.resolve(&mut inputs, &schema).unwrap();
        // Components "x" and "2" (2.5 is in bucket 2): fnv1a_64(b"x\x1f2") % 1000 = 262.
        assert_eq!(with_bucket.ids(&inputs, &ex).unwrap(), [262]);
        // NaN goes to the last bucket, as TF's: the same cross.
        let nan = Example {
            dense: vec![f32::NAN],
            ..ex.clone()
        };
        assert_eq!(with_bucket.ids(&inputs, &nan).unwrap(), [262]);
    }

    #[test]
    fn a_shaped_bucketized_component_crosses_each_of_its_values() {
        let schema = Schema::new().category("a").float("x[0]").float("x[1]");
        let mut inputs = InputSources::new(&schema);
        let shaped = bucketized_column(numeric_column("x").with_shape([2]), [0.0]);
        let cross = crossed_column([shaped.into(), CrossSource::from("a")], 1000);
        cross.resolve(&mut inputs, &schema).unwrap();
        assert_eq!(cross.ids_per_example(), 2);
        let ex = Example {
            dense: vec![3.0, -3.0],
            categorical: vec!["q".into()],
            ..Example::default()
        };
        // Value 0 in bucket 1 is id 0·2 + 1 = 1; value 1 in bucket 0 is id 1·2 + 0 = 2
        // (TF's ids of the bucketized column), each crossed with "q", value 0's first.
        let hash = |text: &[u8]| (fnv1a_64(text) % 1000) as usize;
        assert_eq!(
            cross.ids(&inputs, &ex).unwrap(),
            [hash(b"1\x1fq"), hash(b"2\x1fq")]
        );
        // Two components of two values each: four combinations, the first varying slowest.
        let x = || numeric_column("x").with_shape([2]);
        let twice = crossed_column(
            [bucketized_column(x(), [0.0]), bucketized_column(x(), [5.0])],
            1000,
        );
        twice.resolve(&mut inputs, &schema).unwrap();
        // Against boundary 5 both values are in bucket 0: ids 0 and 2.
        let want = [b"1\x1f0", b"1\x1f2", b"2\x1f0", b"2\x1f2"].map(|t| hash(t));
        assert_eq!(twice.ids(&inputs, &ex).unwrap(), want);
    }

    #[test]
    fn a_cross_needs_two_keys_and_buckets() {
        let schema = Schema::new().category("a").category("b");
        let mut inputs = InputSources::new(&schema);
        assert!(crossed_column(["a"], 10)
            .resolve(&mut inputs, &schema)
            .is_err());
        assert!(crossed_column(["a", "b"], 0)
            .resolve(&mut inputs, &schema)
            .is_err());
        let err = crossed_column(["a", "c"], 10)
            .resolve(&mut inputs, &schema)
            .unwrap_err()
            .to_string();
        assert!(err
            .contains("feature column 'c' (used by 'a_X_c') is not in the input (columns: a, b)"));
    }
}
