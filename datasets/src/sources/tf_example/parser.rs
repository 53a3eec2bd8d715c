//! [`ExampleParser`]: a [`FeatureSpec`] compiled to decode tf.Examples straight into the
//! columns of a [`ColumnarBatch`], one row per record.
//!
//! Protobuf semantics as TensorFlow's parser has them: fields may come in any order and
//! unknown ones are skipped; a feature named twice takes its last entry (a map); a Feature
//! whose kind is not set counts as absent; a list present but empty is an empty list (no
//! default applies). What does not fit the spec is an error naming the feature, and the
//! batch is left as it was before the row.

use std::collections::HashSet;
use std::ops::Range;

use super::feature_locator::FeatureLocator;
use super::feature_values::{FeatureValues, ListKind};
use super::spec::{column_names, DType, FeatureConfig, FeatureSpec};
use crate::columnar::LabelKind;
use crate::{ColumnarBatch, Error, Labels};
use defaults::{compile_default, spec_error};
use feature::{Compiled, Target};
pub(crate) use row_fault::RowFault;

mod defaults;
mod feature;
mod row_fault;

/// The most values a spec's features hold together: each value is a column with a name of
/// its own, made when the spec is compiled, so a shape of `[4294967296]` would be billions.
const MAX_COLUMNS: usize = 1 << 22;

/// A compiled [`FeatureSpec`]; see the module documentation.
#[derive(Clone, Debug)]
pub(crate) struct ExampleParser {
    features: Vec<Compiled>,
    /// Finds the features' entries, by index in `features`.
    locator: FeatureLocator,
    dense_width: usize,
    categorical: usize,
    label: Option<LabelKind>,
    label_classes: Option<u32>,
}

/// Where each feature's map entry is in the record being parsed: reused between records.
pub(crate) type Found = Vec<Option<Range<usize>>>;

impl ExampleParser {
    /// Compiles `spec`; an [`Error::FeatureSpec`] if it cannot work.
    pub(crate) fn new(spec: &FeatureSpec) -> Result<Self, Error> {
        if spec.features.is_empty() {
            return Err(Error::FeatureSpec("no features".into()));
        }
        if let Some(label) = &spec.label {
            match spec.get(label) {
                None => {
                    return Err(Error::FeatureSpec(format!(
                        "label '{label}' is not one of the features"
                    )))
                }
                Some(FeatureConfig::Fixed(f)) if f.shape.iter().product::<usize>() == 1 => {}
                Some(_) => {
                    return Err(spec_error(
                        label,
                        "the label must be a fixed feature of one value (shape [] or [1])",
                    ))
                }
            }
        }
        let label_dtype = spec
            .label
            .as_deref()
            .and_then(|l| spec.get(l))
            .map(FeatureConfig::dtype);
        if let Some(n) = spec.label_classes {
            if label_dtype != Some(DType::Int64) {
                return Err(Error::FeatureSpec(format!(
                    "label_classes = {n} needs an int64 label of class ids"
                )));
            }
        }
        let mut features = Vec::with_capacity(spec.features.len());
        let (mut dense_width, mut categorical) = (0usize, 0usize);
        let mut columns = HashSet::new();
        let mut columns_total = 0usize;
        for (name, feature) in &spec.features {
            if name.is_empty() {
                return Err(Error::FeatureSpec("a feature with an empty name".into()));
            }
            let values = feature
                .values()
                .ok_or_else(|| spec_error(name, "its shape holds more values than memory"))?;
            if values == 0 {
                return Err(spec_error(name, "its shape holds no values"));
            }
            columns_total = columns_total.saturating_add(values);
            if columns_total > MAX_COLUMNS {
                return Err(spec_error(
                    name,
                    format!(
                        "its shape holds {values} values: with the features before it, more \
                         than the {MAX_COLUMNS} columns a spec can lay out"
                    ),
                ));
            }
            let is_label = spec.label.as_deref() == Some(name.as_str());
            for column in column_names(name, values) {
                if !columns.insert(column.clone()) {
                    return Err(spec_error(
                        name,
                        format!("its column '{column}' has the name of another column"),
                    ));
                }
            }
            let dtype = feature.dtype();
            let (target, shape, default) = match feature {
                FeatureConfig::Fixed(f) => {
                    let target = match dtype {
                        _ if is_label => Target::Label,
                        DType::String => {
                            categorical += values;
                            Target::Categories {
                                column: categorical - values,
                                values,
                            }
                        }
                        DType::Float32 | DType::Int64 => {
                            dense_width += values;
                            Target::Dense { values }
                        }
                    };
                    let default = f
                        .default_value
                        .as_ref()
                        .map(|d| {
                            compile_default(name, d, dtype, values, is_label, spec.label_classes)
                        })
                        .transpose()?;
                    (target, f.shape.clone(), default)
                }
                FeatureConfig::VarLen(_) if dtype == DType::Float32 => {
                    return Err(spec_error(
                        name,
                        "a var_len float32 feature cannot be read: var_len features are read \
                         as one category per row (string or int64 ids); give float values a \
                         fixed shape (with a default_value for examples that lack them)",
                    ))
                }
                FeatureConfig::VarLen(_) => {
                    categorical += 1;
                    (
                        Target::OneCategory {
                            column: categorical - 1,
                        },
                        Vec::new(),
                        None,
                    )
                }
            };
            features.push(Compiled {
                name: name.clone(),
                dtype,
                shape,
                target,
                default,
            });
        }
        let locator = FeatureLocator::new(features.iter().map(|f| &f.name));
        let label = label_dtype.map(|dtype| match dtype {
            DType::Int64 => LabelKind::Class,
            DType::Float32 => LabelKind::Float,
            DType::String => LabelKind::Name,
        });
        Ok(ExampleParser {
            features,
            locator,
            dense_width,
            categorical,
            label,
            label_classes: spec.label_classes,
        })
    }

    /// Empties `batch` and sets its layout to this spec's, keeping its allocations.
    pub(crate) fn begin(&self, batch: &mut ColumnarBatch) {
        batch.reset_layout(self.dense_width, self.categorical, self.label);
    }

    /// Appends `record`'s values as a row of `batch` (laid out by [`begin`](Self::begin));
    /// on an error, what is wrong (naming the feature), and `batch` is as it was.
    pub(crate) fn parse_row(
        &self,
        record: &[u8],
        batch: &mut ColumnarBatch,
        found: &mut Found,
    ) -> Result<(), RowFault> {
        let (rows, dense) = (batch.rows, batch.dense.len());
        let result = (self.locator.locate(record, found))
            .map_err(RowFault::from)
            .and_then(|_| self.fill(record, found, batch));
        match result {
            Ok(()) => {
                batch.rows += 1;
                Ok(())
            }
            Err(e) => {
                batch.dense.truncate(dense);
                for column in &mut batch.categorical {
                    column.truncate(rows);
                }
                match &mut batch.labels {
                    Labels::None => {}
                    Labels::Float(v) => v.truncate(rows),
                    Labels::Class(v) => v.truncate(rows),
                    Labels::Name(v) => v.truncate(rows),
                }
                Err(e)
            }
        }
    }

    /// Writes every feature's values, in spec order.
    fn fill(
        &self,
        record: &[u8],
        found: &Found,
        batch: &mut ColumnarBatch,
    ) -> Result<(), RowFault> {
        for (feature, at) in self.features.iter().zip(found) {
            let values = match at {
                Some(entry) => FeatureValues::of(&record[entry.clone()])
                    .map_err(|e| RowFault::from(e).in_feature(&feature.name))?,
                None => None,
            };
            let Some(values) = values else {
                feature.fill_missing(batch)?;
                continue;
            };
            let kind = values.kind();
            if kind != ListKind::of(feature.dtype) {
                return Err(RowFault::Mismatch(format!(
                    "feature '{}' holds {}, the spec says {}",
                    feature.name,
                    kind.holds(),
                    feature.dtype.name()
                )));
            }
            feature
                .fill(&values, batch, self.label_classes)
                .map_err(|e| e.in_feature(&feature.name))?;
        }
        Ok(())
    }
}

// Here rather than in spec.rs: validating is building a parser, and the spec's types import
// nothing of the parser that reads them.
impl FeatureSpec {
    /// Checks what the JSON form cannot: at least one feature, a label that is a fixed
    /// feature of one value, shapes with values, defaults of the feature's type and size,
    /// var-len features of strings or ids, and column names that do not collide.
    pub fn validate(&self) -> Result<(), Error> {
        ExampleParser::new(self).map(|_| ())
    }
}
