//! `categorical_column_with_vocabulary_list`: a category looked up in a fixed vocabulary.

use std::collections::HashMap;
use std::sync::OnceLock;

use datasets::{ColumnarRow, Schema};
use estimator::{Error, Result};
use serde::{Deserialize, Serialize};

use super::hash::hash_bucket;
use super::source::{Accept, InputSources};

/// A category mapped to its position in a vocabulary (TF's
/// `categorical_column_with_vocabulary_list`).
///
/// Ids `0..vocabulary.len()` are the vocabulary's entries; a value outside it goes to one
/// of `num_oov_buckets` out-of-vocabulary buckets after them, chosen by
/// [`hash_bucket`](super::hash_bucket) (FNV-1a). The default is one OOV bucket, so every
/// unknown value shares id `vocabulary.len()`. With no OOV buckets an unknown value takes
/// `default_value`, or is an error naming the column when there is none.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct VocabularyListColumn {
    /// The input feature's name.
    pub key: String,
    /// The known values, each once.
    pub vocabulary: Vec<String>,
    /// Buckets for values outside the vocabulary (default 1).
    pub num_oov_buckets: usize,
    /// The id of an unknown value when `num_oov_buckets` is 0.
    pub default_value: Option<usize>,
    /// How [`fit_columns`](super::fit_columns) is still to learn the vocabulary from the
    /// training input; absent from the saved form once it has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    learn: Option<LearnedVocabulary>,
    #[serde(skip)]
    index: VocabularyIndex,
}

/// Which values of the training input a learned vocabulary keeps (tf.Transform's
/// `vocabulary(top_k, frequency_threshold)`).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub struct LearnedVocabulary {
    /// Keep at most this many values, the most frequent.
    pub max_size: Option<usize>,
    /// Keep only values seen at least this many times.
    pub min_count: u64,
}

/// A lazily built value → id map (not serialised; rebuilt on first use).
#[derive(Clone, Debug, Default)]
struct VocabularyIndex(OnceLock<HashMap<String, usize>>);

impl PartialEq for VocabularyIndex {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// A category from input column `key`, one id per `vocabulary` entry and one OOV bucket.
pub fn categorical_column_with_vocabulary_list<S: Into<String>>(
    key: impl Into<String>,
    vocabulary: impl IntoIterator<Item = S>,
) -> VocabularyListColumn {
    VocabularyListColumn {
        key: key.into(),
        vocabulary: vocabulary.into_iter().map(Into::into).collect(),
        num_oov_buckets: 1,
        default_value: None,
        learn: None,
        index: VocabularyIndex::default(),
    }
}

/// A category from input column `key` whose vocabulary [`fit_columns`](super::fit_columns)
/// learns from the training input: every value seen, most frequent first (ties in byte
/// order, so every task of a cluster learns the same ids), then one OOV bucket.
pub fn categorical_column_with_learned_vocabulary(key: impl Into<String>) -> VocabularyListColumn {
    let mut column = categorical_column_with_vocabulary_list(key, Vec::<String>::new());
    column.learn = Some(LearnedVocabulary {
        max_size: None,
        min_count: 1,
    });
    column
}

impl VocabularyListColumn {
    /// Uses `n` out-of-vocabulary buckets (0: unknown values take the default value).
    pub fn with_num_oov_buckets(mut self, n: usize) -> Self {
        self.num_oov_buckets = n;
        self
    }

    /// Keeps the `n` most frequent values of a learned vocabulary (the rest go to the OOV
    /// buckets). No effect on a vocabulary given as a list.
    pub fn with_max_size(mut self, n: usize) -> Self {
        if let Some(learn) = &mut self.learn {
            learn.max_size = Some(n);
        }
        self
    }

    /// Keeps only values seen at least `n` times in a learned vocabulary. No effect on a
    /// vocabulary given as a list.
    pub fn with_min_count(mut self, n: u64) -> Self {
        if let Some(learn) = &mut self.learn {
            learn.min_count = n;
        }
        self
    }

    /// How the vocabulary is still to be learned; `None` once it is known.
    pub fn learns_vocabulary(&self) -> Option<LearnedVocabulary> {
        self.learn
    }

    /// Sets the vocabulary `fit_columns` learned: the values of `counts` it keeps, most
    /// frequent first, ties in byte order.
    pub(crate) fn set_learned(&mut self, counts: &HashMap<String, u64>) -> Result<()> {
        let Some(learn) = self.learn else {
            return Ok(());
        };
        let mut kept: Vec<(&String, u64)> = counts
            .iter()
            .filter(|(_, &n)| n >= learn.min_count)
            .map(|(v, &n)| (v, n))
            .collect();
        kept.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
        kept.truncate(learn.max_size.unwrap_or(usize::MAX));
        if kept.is_empty() {
            return Err(Error::Config(format!(
                "feature column '{}': the learned vocabulary is empty (no value of the training \
                 input was seen min_count {} times or more, or max_size is 0)",
                self.key, learn.min_count
            )));
        }
        self.vocabulary = kept.into_iter().map(|(v, _)| v.clone()).collect();
        self.learn = None;
        self.index = VocabularyIndex::default();
        Ok(())
    }

    /// The id of an unknown value when there are no OOV buckets.
    pub fn with_default_value(mut self, id: usize) -> Self {
        self.default_value = Some(id);
        self
    }

    /// The column's name: its key.
    pub fn name(&self) -> &str {
        &self.key
    }

    /// Number of ids: the vocabulary plus the OOV buckets.
    pub fn num_buckets(&self) -> usize {
        self.vocabulary.len() + self.num_oov_buckets
    }

    /// The id of `value`, or an error naming the column when it is unknown and has nowhere
    /// to go.
    pub fn id_of(&self, value: &str) -> Result<usize> {
        let index = self.index.0.get_or_init(|| {
            let mut map = HashMap::with_capacity(self.vocabulary.len());
            for (i, v) in self.vocabulary.iter().enumerate() {
                map.entry(v.clone()).or_insert(i);
            }
            map
        });
        if let Some(&id) = index.get(value) {
            return Ok(id);
        }
        if self.num_oov_buckets > 0 {
            return Ok(self.vocabulary.len() + hash_bucket(value, self.num_oov_buckets));
        }
        self.default_value.ok_or_else(|| {
            Error::Config(format!(
                "feature column '{}': value '{value}' is not in the vocabulary and there are \
                 no OOV buckets (set num_oov_buckets or a default_value)",
                self.key
            ))
        })
    }

    /// Checks the vocabulary and records the key's place in the input.
    pub(crate) fn resolve(&self, inputs: &mut InputSources, schema: &Schema) -> Result<()> {
        let bad = |what: String| {
            Err(Error::Config(format!(
                "feature column '{}': {what}",
                self.key
            )))
        };
        if self.learn.is_some() {
            return bad(
                "its vocabulary is learned from the training input: pass the columns through \
                 fit_columns (or ResolvedColumns::fit) first"
                    .into(),
            );
        }
        if self.vocabulary.is_empty() {
            return bad("the vocabulary is empty".into());
        }
        if self.num_oov_buckets > i64::MAX as usize - self.vocabulary.len() {
            return bad(format!(
                "num_oov_buckets {} is too large",
                self.num_oov_buckets
            ));
        }
        // A set, not a scan of the values before: learned vocabularies can be large.
        let mut seen = std::collections::HashSet::with_capacity(self.vocabulary.len());
        for v in &self.vocabulary {
            if !seen.insert(v.as_str()) {
                return bad(format!("'{v}' appears twice in the vocabulary"));
            }
        }
        if let Some(d) = self.default_value {
            if self.num_oov_buckets > 0 {
                return bad("set either num_oov_buckets or a default_value, not both".into());
            }
            if d >= self.vocabulary.len() {
                return bad(format!(
                    "default_value {d} is not an id of the {}-entry vocabulary",
                    self.vocabulary.len()
                ));
            }
        }
        inputs.add(schema, &self.key, &self.key, Accept::Categorical)
    }

    /// The id of the value in `example`.
    pub(crate) fn id(&self, inputs: &InputSources, example: &dyn ColumnarRow) -> Result<usize> {
        self.id_of(&inputs.raw(&self.key, example)?.token())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values_take_their_position_and_unknown_ones_the_oov_bucket() {
        let c = categorical_column_with_vocabulary_list("colour", ["red", "green", "blue"]);
        assert_eq!(c.num_buckets(), 4);
        assert_eq!(c.id_of("red").unwrap(), 0);
        assert_eq!(c.id_of("blue").unwrap(), 2);
        assert_eq!(c.id_of("purple").unwrap(), 3);
        assert_eq!(c.id_of("").unwrap(), 3);
    }

    #[test]
    fn several_oov_buckets_hash_unknown_values() {
        let c = categorical_column_with_vocabulary_list("pet", ["fish"]).with_num_oov_buckets(10);
        assert_eq!(c.num_buckets(), 11);
        // FNV-1a 64: "cat" % 10 = 1, "dog" % 10 = 3.
        assert_eq!(c.id_of("cat").unwrap(), 1 + 1);
        assert_eq!(c.id_of("dog").unwrap(), 1 + 3);
        assert_eq!(c.id_of("fish").unwrap(), 0);
    }

    #[test]
    fn no_oov_buckets_use_the_default_or_fail_naming_the_column() {
        let strict =
            categorical_column_with_vocabulary_list("pet", ["cat"]).with_num_oov_buckets(0);
        let err = strict.id_of("dog").unwrap_err().to_string();
        assert!(err.contains("feature column 'pet': value 'dog' is not in the vocabulary"));
        let lenient = strict.clone().with_default_value(0);
        assert_eq!(lenient.id_of("dog").unwrap(), 0);
        assert_eq!(lenient.num_buckets(), 1);
    }

    #[test]
    fn bad_vocabularies_are_rejected() {
        let schema = Schema::new().category("pet");
        let mut inputs = InputSources::new(&schema);
        let dup = categorical_column_with_vocabulary_list("pet", ["cat", "cat"]);
        let err = dup.resolve(&mut inputs, &schema).unwrap_err().to_string();
        assert!(err.contains("'cat' appears twice"));
        let empty = categorical_column_with_vocabulary_list("pet", Vec::<String>::new());
        assert!(empty.resolve(&mut inputs, &schema).is_err());
        let both = categorical_column_with_vocabulary_list("pet", ["cat"]).with_default_value(0);
        assert!(both.resolve(&mut inputs, &schema).is_err());
    }

    #[test]
    fn serde_round_trip_rebuilds_the_index() {
        let c = categorical_column_with_vocabulary_list("pet", ["cat", "dog"]);
        assert_eq!(c.id_of("dog").unwrap(), 1);
        let json = serde_json::to_string(&c).unwrap();
        let back: VocabularyListColumn = serde_json::from_str(&json).unwrap();
        assert_eq!(back, c);
        assert_eq!(back.id_of("dog").unwrap(), 1);
    }
}
