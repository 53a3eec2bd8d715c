//! tf.Example source: [`TfExampleDataset`] decodes the tf.Examples of TFRecord files through
//! a [`FeatureSpec`] into [`Example`] rows, or with
//! [`into_batches`](TfExampleDataset::into_batches) straight into [`ColumnarBatch`]es.

mod batches;
pub mod example_proto;
mod feature_locator;
mod feature_values;
mod field_walk;
mod parser;
mod spec;

use std::path::Path;
use std::sync::Arc;

use super::tfrecord::TfRecordDataset;
use crate::{ColumnarBatch, Dataset, Error, Example, Position, Schema};
use parser::{ExampleParser, Found};

pub use batches::TfExampleBatches;
pub use feature_locator::{FeatureLocator, Located};
pub use feature_values::{FeatureValues, ListKind};
pub use field_walk::WireError;
pub use spec::{DType, FeatureConfig, FeatureSpec, FixedLenFeature, VarLenFeature};

/// tf.Examples from TFRecord files, as rows laid out by a [`FeatureSpec`] (what
/// `tf.data.TFRecordDataset(files).map(lambda r: tf.io.parse_example(r, spec))` yields).
///
/// Each record is decoded in place, its values copied once into the row; a record that is
/// not a tf.Example, or whose features do not fit the spec (a fixed feature missing with no
/// default, another data type, another number of values, a non-finite float, a string that
/// is not UTF-8, a var-len feature with more than one value), is an [`Error::Record`] naming
/// the file, the record, its byte offset and the feature, and ends the stream. The layout of
/// the rows is [`schema`](Self::schema)'s; positions are the [`TfRecordDataset`]'s, so
/// training resumes from a checkpoint at the record where it stopped.
///
/// ```
/// use datasets::tf_proto::{feature, Example, Feature, Features, FloatList, Int64List};
/// use datasets::{Dataset, DatasetExt, FeatureSpec, Label, TfExampleDataset};
/// use datasets::{TfRecordCompression, TfRecordWriter};
///
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("train.tfrecord");
/// let mut writer = TfRecordWriter::create(&path, TfRecordCompression::None)?;
/// for i in 0..10 {
///     let floats = Feature { kind: Some(feature::Kind::FloatList(FloatList { value: vec![i as f32, 0.5] })) };
///     let label = Feature { kind: Some(feature::Kind::Int64List(Int64List { value: vec![i % 3] })) };
///     let features = [("x".to_string(), floats), ("label".to_string(), label)].into_iter().collect();
///     writer.write_example(&Example { features: Some(Features { feature: features }) })?;
/// }
/// writer.finish()?;
///
/// let spec = FeatureSpec::from_json(r#"{
///     "features": {
///         "x": {"kind": "fixed", "shape": [2], "dtype": "float32"},
///         "label": {"kind": "fixed", "shape": [], "dtype": "int64"}
///     },
///     "label": "label"
/// }"#)?;
/// let mut rows = TfExampleDataset::open([&path], &spec)?;
/// assert_eq!(rows.schema().dense_names(), ["x[0]", "x[1]"]);
/// let row = rows.next_item().unwrap()?;
/// assert_eq!((row.dense, row.label), (vec![0.0, 0.5], Label::Class(0)));
///
/// // Or straight into columnar batches, decoded on two threads.
/// let mut batches = TfExampleDataset::open([&path], &spec)?
///     .into_batches(4, false)
///     .with_parse_threads(datasets::ParallelCalls::Fixed(2));
/// let batch = batches.next_item().unwrap()?;
/// assert_eq!((batch.rows, batch.dense_width), (4, 2));
/// assert_eq!(batches.iter().map(|b| b.unwrap().rows).collect::<Vec<_>>(), [4, 2]);
/// # Ok::<(), datasets::Error>(())
/// ```
pub struct TfExampleDataset {
    records: TfRecordDataset,
    spec: FeatureSpec,
    parser: Arc<ExampleParser>,
    /// The one-row batch each record is decoded into.
    row: ColumnarBatch,
    found: Found,
    failed: bool,
}

impl TfExampleDataset {
    /// The tf.Examples of `paths` (compressed as their names say, see
    /// [`TfRecordDataset::open`]), read through `spec`.
    pub fn open<P: AsRef<Path>>(
        paths: impl IntoIterator<Item = P>,
        spec: &FeatureSpec,
    ) -> Result<Self, Error> {
        TfExampleDataset::new(TfRecordDataset::open(paths)?, spec)
    }

    /// The tf.Examples of the records of `records`, read through `spec`.
    pub fn new(records: TfRecordDataset, spec: &FeatureSpec) -> Result<Self, Error> {
        let parser = ExampleParser::new(spec)?;
        let mut row = ColumnarBatch::default();
        parser.begin(&mut row);
        Ok(TfExampleDataset {
            records,
            spec: spec.clone(),
            parser: Arc::new(parser),
            row,
            found: Found::new(),
            failed: false,
        })
    }

    /// The spec the examples are read with.
    pub fn spec(&self) -> &FeatureSpec {
        &self.spec
    }

    /// The layout of the rows ([`FeatureSpec::schema`]).
    pub fn schema(&self) -> Schema {
        self.spec.schema()
    }

    /// Batches of `size` rows decoded straight into [`ColumnarBatch`]es, without an
    /// [`Example`] per row: the same batches, positions and errors as
    /// `.batch_columnar(size, drop_remainder)` on this dataset (the first error ends the
    /// stream). See [`TfExampleBatches::with_parse_threads`] to decode on several threads.
    pub fn into_batches(self, size: usize, drop_remainder: bool) -> TfExampleBatches {
        TfExampleBatches::new(self.records, self.parser, size, drop_remainder)
    }
}

impl Dataset for TfExampleDataset {
    type Item = Example;

    fn next_item(&mut self) -> Option<Result<Example, Error>> {
        if self.failed {
            return None;
        }
        let files = self.records.files().clone();
        let (parser, row, found) = (&self.parser, &mut self.row, &mut self.found);
        // Decoded where it was read, in the reader's buffer.
        let result = self.records.next_slice()?.and_then(|(data, meta)| {
            let file = &files[meta.file];
            file.check_data(&meta, data)?;
            parser.begin(row);
            parser
                .parse_row(data, row, found)
                .map_err(|fault| file.error(meta.record, meta.offset, fault.to_string()))?;
            Ok(row.example(0))
        });
        self.failed = result.is_err();
        Some(result)
    }

    fn len_hint(&self) -> Option<usize> {
        None
    }

    fn position(&self) -> Position {
        self.records.position()
    }

    fn restore(&mut self, position: &Position) -> Result<(), Error> {
        self.records.restore(position)?;
        self.failed = false;
        Ok(())
    }
}

#[cfg(test)]
mod properties;
#[cfg(test)]
mod tests;
