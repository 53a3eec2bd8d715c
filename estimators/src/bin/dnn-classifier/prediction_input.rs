//! How `predict` reads its input: through the model's schema, without the columns
//! prediction does not read that the files may lack — the label, and the weight column,
//! whose place in each batch is filled with 1 so that the batches keep the model's layout.

use anyhow::Result;
use estimator::datasets::{BoxDataset, ColumnarBatch, DatasetExt, Error, InputFiles, Schema};

use crate::input::{batches, columns_of, strip_label};
use crate::input_format::InputFormat;

/// The schema prediction reads its files through, and where the weight goes.
pub struct PredictionInput {
    schema: Schema,
    /// The format, a feature spec without the weight feature: records need not have it.
    format: InputFormat,
    /// The weight column's index among the dense values, when it is not read.
    filled_weight: Option<usize>,
}

impl PredictionInput {
    /// For `files` read as `format`, predicted with a model trained on `model` with the
    /// `weight` column. CSV and Parquet files are read without it when they lack it (an
    /// extra CSV column is an error); tf.Example records never need it.
    pub fn new(
        files: &InputFiles,
        model: &Schema,
        weight: Option<&str>,
        format: &InputFormat,
    ) -> Result<Self> {
        // Never the label, even where the files have it: a class the model does not know
        // (or none at all) must not stop the rows being predicted.
        let mut schema = strip_label(model);
        let mut format = format.clone();
        let filled_weight = match (weight, &mut format) {
            (None, _) => None,
            (Some(name), InputFormat::TfRecord(spec)) => {
                spec.features.retain(|(feature, _)| feature != name);
                schema.dense_index(name)
            }
            (Some(name), _) => {
                let header = columns_of(files, &format)?;
                let lacking = !header.iter().any(|column| column == name);
                lacking.then(|| schema.dense_index(name)).flatten()
            }
        };
        if filled_weight.is_some() {
            schema
                .columns
                .retain(|column| Some(column.name.as_str()) != weight);
        }
        Ok(PredictionInput {
            schema,
            format,
            filled_weight,
        })
    }

    /// Batches of `files`, one after another, laid out as the model's.
    pub fn batches(
        &self,
        files: &InputFiles,
        batch_size: usize,
    ) -> Result<BoxDataset<ColumnarBatch>, Error> {
        let read = batches(files, &self.schema, batch_size, &self.format)?;
        Ok(match self.filled_weight {
            None => read,
            Some(index) => read.map(move |batch| with_ones_at(batch, index)).boxed(),
        })
    }
}

/// `batch` with a dense column of ones inserted at `index`.
fn with_ones_at(mut batch: ColumnarBatch, index: usize) -> ColumnarBatch {
    let width = batch.dense_width;
    let mut dense = Vec::with_capacity(batch.rows * (width + 1));
    for row in 0..batch.rows {
        let values = &batch.dense[row * width..(row + 1) * width];
        dense.extend_from_slice(&values[..index]);
        dense.push(1.0);
        dense.extend_from_slice(&values[index..]);
    }
    batch.dense = dense;
    batch.dense_width = width + 1;
    batch
}

#[cfg(test)]
mod tests {
    use super::*;
    use estimator::datasets::{Example, Label};

    #[test]
    fn ones_go_in_at_the_weight_s_place_in_every_row() {
        let rows: Vec<Example> = [[1.0, 2.0], [3.0, 4.0]]
            .map(|dense| Example {
                dense: dense.to_vec(),
                categorical: Vec::new(),
                label: Label::None,
            })
            .to_vec();
        let batch = ColumnarBatch::from_examples(&rows).unwrap();
        let filled = with_ones_at(batch, 1);
        assert_eq!(filled.dense_width, 3);
        assert_eq!(filled.dense, [1.0, 1.0, 2.0, 3.0, 1.0, 4.0]);
    }

    #[test]
    fn a_label_column_in_the_input_is_not_read() {
        use estimator::datasets::{Dataset, Labels};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rows.csv");
        // A class the model was not trained on, and one id out of its range.
        std::fs::write(&path, "x,name,id\n1.5,bird,7\n").unwrap();
        let files = InputFiles::resolve(&path.display().to_string()).unwrap();
        for label in ["name", "id"] {
            let model = Schema::new()
                .float("x")
                .category("name")
                .int("id")
                .label(label);
            let model = match label {
                "id" => model.with_label_classes(3),
                _ => model,
            };
            let input = PredictionInput::new(&files, &model, None, &InputFormat::Csv).unwrap();
            let batch = input
                .batches(&files, 8)
                .unwrap()
                .next_item()
                .unwrap()
                .unwrap();
            assert_eq!((batch.rows, &batch.labels), (1, &Labels::None));
        }
    }
}
