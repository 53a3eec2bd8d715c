//! [`FeatureLocator`]: where named features lie in serialized tf.Examples, found by walking
//! the record's fields rather than building its map of features.

use std::ops::Range;

use super::field_walk::{Fields, Value, WireError};

/// Finds the map entries of named features in serialized tf.Examples, without decoding them:
/// read each one's values with [`FeatureValues::of`](super::FeatureValues::of). A name given
/// more than once in a record is found at its last entry, as prost's map has it.
///
/// ```
/// use datasets::tf_proto::{feature, Example, Feature, Features, FloatList};
/// use datasets::{FeatureLocator, FeatureValues, ListKind};
/// use prost::Message;
///
/// let x = Feature { kind: Some(feature::Kind::FloatList(FloatList { value: vec![1.5] })) };
/// let features = Features { feature: [("x".to_string(), x)].into_iter().collect() };
/// let record = Example { features: Some(features) }.encode_to_vec();
///
/// let locator = FeatureLocator::new(["x", "y"]);
/// let mut found = Vec::new();
/// let located = locator.locate(&record, &mut found).unwrap();
/// assert!(!located.others && !located.repeated);
/// assert!(found[1].is_none());
/// let x = FeatureValues::of(&record[found[0].clone().unwrap()]).unwrap().unwrap();
/// assert_eq!(x.kind(), ListKind::Float);
/// let mut values = Vec::new();
/// x.floats::<&str>(|bytes| values.extend_from_slice(bytes)).unwrap();
/// assert_eq!(values, 1.5f32.to_le_bytes());
/// ```
#[derive(Clone, Debug)]
pub struct FeatureLocator {
    /// The names, sorted, with their index among those given.
    keys: Vec<(Box<[u8]>, usize)>,
    count: usize,
}

/// What a record held besides one entry of each feature looked for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Located {
    /// A feature of a name not looked for.
    pub others: bool,
    /// A feature looked for named more than once.
    pub repeated: bool,
}

impl FeatureLocator {
    /// A locator of `names` (each given once).
    pub fn new<S: AsRef<str>>(names: impl IntoIterator<Item = S>) -> Self {
        let mut keys: Vec<(Box<[u8]>, usize)> = (names.into_iter().enumerate())
            .map(|(i, name)| (name.as_ref().as_bytes().into(), i))
            .collect();
        let count = keys.len();
        keys.sort();
        FeatureLocator { keys, count }
    }

    /// Sets `found[i]` to the byte range in `record` of the map entry of the `i`-th name,
    /// `None` where the record has none (`found` is cleared first, so that one vector
    /// serves every record); an error if the record is not a tf.Example's protobuf as far
    /// as its map entries go (their values are walked by [`FeatureValues`](super::FeatureValues)).
    pub fn locate(
        &self,
        record: &[u8],
        found: &mut Vec<Option<Range<usize>>>,
    ) -> Result<Located, WireError> {
        found.clear();
        found.resize(self.count, None);
        let mut located = Located::default();
        let base = record.as_ptr() as usize;
        for field in Fields::new(record) {
            let (_, number, value) = field?;
            if number != 1 {
                continue;
            }
            let Value::Len(features) = value else {
                return Err("Example.features is not length-delimited");
            };
            for field in Fields::new(features) {
                let (_, number, value) = field?;
                if number != 1 {
                    continue;
                }
                let Value::Len(entry) = value else {
                    return Err("a Features.feature entry is not length-delimited");
                };
                let mut key: &[u8] = b"";
                for field in Fields::new(entry) {
                    match field? {
                        (_, 1, Value::Len(name)) => key = name,
                        (_, 2, Value::Len(_)) => {}
                        (_, 1 | 2, _) => {
                            return Err("a feature's name or value is not length-delimited")
                        }
                        _ => {}
                    }
                }
                match self.keys.binary_search_by(|(k, _)| (**k).cmp(key)) {
                    Ok(at) => {
                        let start = entry.as_ptr() as usize - base;
                        let slot = &mut found[self.keys[at].1];
                        located.repeated |= slot.is_some();
                        *slot = Some(start..start + entry.len());
                    }
                    Err(_) => located.others = true,
                }
            }
        }
        Ok(located)
    }
}

#[cfg(test)]
mod tests {
    use prost::Message;

    use super::super::example_proto::{feature, Example, Feature, Features, Int64List};
    use super::super::feature_values::FeatureValues;
    use super::*;

    fn entry(name: &str, value: i64) -> Vec<u8> {
        let feature = Feature {
            kind: Some(feature::Kind::Int64List(Int64List { value: vec![value] })),
        };
        let features = Features {
            feature: [(name.to_string(), feature)].into_iter().collect(),
        };
        Example {
            features: Some(features),
        }
        .encode_to_vec()
    }

    fn value_at(record: &[u8], range: &Option<Range<usize>>) -> Option<i64> {
        let values = FeatureValues::of(&record[range.clone()?]).unwrap()?;
        let mut last = None;
        values
            .ints::<WireError>(|v| {
                last = Some(v);
                Ok(())
            })
            .unwrap();
        last
    }

    #[test]
    fn the_last_entry_of_a_name_is_found_and_names_not_asked_for_are_told() {
        // Records concatenated are one record, their maps merged, as protobuf has it.
        let record = [entry("b", 1), entry("c", 2), entry("b", 3)].concat();
        let merged = Example::decode(record.as_slice()).unwrap();
        let locator = FeatureLocator::new(["a", "b"]);
        let mut found = vec![Some(0..1); 5];
        let located = locator.locate(&record, &mut found).unwrap();
        assert_eq!(
            located,
            Located {
                others: true,
                repeated: true
            }
        );
        assert_eq!(found.len(), 2);
        assert_eq!(found[0], None);
        assert_eq!(value_at(&record, &found[1]), Some(3));
        let prost = &merged.features.unwrap().feature["b"];
        assert_eq!(
            prost.kind,
            Some(feature::Kind::Int64List(Int64List { value: vec![3] }))
        );

        let located = FeatureLocator::new(["b"])
            .locate(&entry("b", 4), &mut found)
            .unwrap();
        assert_eq!(located, Located::default());
        assert_eq!(value_at(&entry("b", 4), &found[0]), Some(4));
    }

    #[test]
    fn a_malformed_record_is_an_error() {
        let mut record = entry("b", 1);
        record.truncate(record.len() - 1);
        let locator = FeatureLocator::new(["b"]);
        assert_eq!(
            locator.locate(&record, &mut Vec::new()),
            Err("a length past the end")
        );
        // Example.features as a varint.
        assert_eq!(
            locator.locate(&[0x08, 0x01], &mut Vec::new()),
            Err("Example.features is not length-delimited")
        );
    }
}
