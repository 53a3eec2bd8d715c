//! [`FeatureSpec`]: which features of a tf.Example to read, as `tf.io.parse_example`'s
//! `features` argument, and how they lay out as columns.

use std::fmt;
use std::io::Read;
use std::path::Path;

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::{open_regular, ColumnType, Error, Schema};

/// The element type of a feature, as the `dtype` of TensorFlow's feature configurations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum DType {
    /// `float32`: a `float_list`.
    #[serde(rename = "float32", alias = "float", alias = "tf.float32")]
    Float32,
    /// `int64`: an `int64_list`.
    #[serde(rename = "int64", alias = "tf.int64")]
    Int64,
    /// `string`: a `bytes_list` (read as UTF-8 text).
    #[serde(rename = "string", alias = "bytes", alias = "tf.string")]
    String,
}

impl DType {
    /// The name used in specs and messages.
    pub fn name(self) -> &'static str {
        match self {
            DType::Float32 => "float32",
            DType::Int64 => "int64",
            DType::String => "string",
        }
    }
}

/// `tf.io.FixedLenFeature`: exactly `shape`'s number of values in every example, or
/// `default_value` when the example lacks the feature.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FixedLenFeature {
    /// Dimensions; `[]` is a scalar. Values are stored flat, row-major.
    pub shape: Vec<usize>,
    /// Element type.
    pub dtype: DType,
    /// Values for an example that lacks the feature: one value (repeated to fill the
    /// shape) or every value (flat, or nested as the shape). Absent: such an example is an
    /// error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_value: Option<serde_json::Value>,
}

/// `tf.io.VarLenFeature`: any number of values, read as a category. A columnar batch holds
/// one category per row and column, so an example may hold at most one value (none reads
/// as the empty category `""`, as an empty CSV cell).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VarLenFeature {
    /// Element type: `string` or `int64` (an id, read as its decimal text).
    pub dtype: DType,
}

/// How one feature is read: the `FixedLenFeature` / `VarLenFeature` of a TF parse spec,
/// tagged by `"kind"` in JSON.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind")]
pub enum FeatureConfig {
    /// `{"kind": "fixed", "shape": [784], "dtype": "float32"}`.
    #[serde(rename = "fixed", alias = "fixed_len", alias = "FixedLenFeature")]
    Fixed(FixedLenFeature),
    /// `{"kind": "var_len", "dtype": "string"}`.
    #[serde(rename = "var_len", alias = "VarLenFeature")]
    VarLen(VarLenFeature),
}

impl FeatureConfig {
    /// Element type.
    pub fn dtype(&self) -> DType {
        match self {
            FeatureConfig::Fixed(f) => f.dtype,
            FeatureConfig::VarLen(f) => f.dtype,
        }
    }

    /// Number of values per example: the product of a fixed feature's shape, 1 (one
    /// category) for a var-len one; `None` if it overflows.
    pub fn values(&self) -> Option<usize> {
        match self {
            FeatureConfig::Fixed(f) => f.shape.iter().try_fold(1usize, |n, d| n.checked_mul(*d)),
            FeatureConfig::VarLen(_) => Some(1),
        }
    }
}

/// The features to read from tf.Examples, in the order they are laid out, and the label:
/// what `tf.io.parse_example` takes as `features`, written as JSON.
///
/// ```json
/// {
///   "features": {
///     "image":  {"kind": "fixed", "shape": [784], "dtype": "float32"},
///     "colour": {"kind": "fixed", "shape": [], "dtype": "string", "default_value": ""},
///     "tags":   {"kind": "var_len", "dtype": "string"},
///     "label":  {"kind": "fixed", "shape": [], "dtype": "int64"}
///   },
///   "label": "label"
/// }
/// ```
///
/// Columns follow the order of `features`: a feature of one value (shape `[]` or `[1]`)
/// is one column named as the feature, one of `n` values is `n` columns `name[0]` ...
/// `name[n-1]` (flat, row-major). `float32` and `int64` features are numeric (the dense
/// values, as `f32`), `string` features and every var-len feature are categories. The label
/// is a fixed feature of one value: `int64` class ids, `float32` targets or `string` class
/// names. [`FeatureSpec::schema`] gives the layout as a [`Schema`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FeatureSpec {
    /// The features, in layout order.
    #[serde(serialize_with = "ordered_ser", deserialize_with = "ordered_de")]
    pub features: Vec<(String, FeatureConfig)>,
    /// The feature that is the label, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// For an `int64` label of class ids: how many classes there are; a record whose id is
    /// not below it is an error naming it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_classes: Option<u32>,
}

impl FeatureSpec {
    /// Reads and validates a spec written as JSON in `path`.
    pub fn read(path: impl AsRef<Path>) -> Result<Self, Error> {
        let path = path.as_ref();
        let mut text = String::new();
        open_regular(path)?
            .read_to_string(&mut text)
            .map_err(|e| Error::io(path, e))?;
        FeatureSpec::from_json(&text).map_err(|e| Error::Format {
            file: path.display().to_string(),
            message: e.to_string(),
        })
    }

    /// Parses and validates a spec written as JSON.
    pub fn from_json(text: &str) -> Result<Self, Error> {
        let spec: FeatureSpec =
            serde_json::from_str(text).map_err(|e| Error::FeatureSpec(e.to_string()))?;
        spec.validate()?;
        Ok(spec)
    }

    /// The same spec with an `int64` label's class count (see `label_classes`).
    pub fn with_label_classes(mut self, n_classes: u32) -> Self {
        self.label_classes = Some(n_classes);
        self
    }

    /// The same spec without its label, for examples that have none (prediction input).
    pub fn without_label(&self) -> Self {
        let mut spec = self.clone();
        spec.label_classes = None;
        if let Some(label) = spec.label.take() {
            spec.features.retain(|(name, _)| *name != label);
        }
        spec
    }

    /// The feature called `name`.
    pub fn get(&self, name: &str) -> Option<&FeatureConfig> {
        self.features
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, f)| f)
    }

    /// The layout of the rows read with this spec, as a [`Schema`]: one column per value
    /// (see the type's documentation for the names), the label column last in its place.
    pub fn schema(&self) -> Schema {
        let mut schema = Schema::new();
        for (name, feature) in &self.features {
            let kind = match feature {
                FeatureConfig::Fixed(f) => match f.dtype {
                    DType::Float32 => ColumnType::Float,
                    DType::Int64 => ColumnType::Int,
                    DType::String => ColumnType::Category,
                },
                FeatureConfig::VarLen(_) => ColumnType::Category,
            };
            for column in column_names(name, feature.values().unwrap_or(0)) {
                schema = schema.add(column, kind);
            }
        }
        if let Some(label) = &self.label {
            schema = schema.label(label.clone());
        }
        if let Some(n) = self.label_classes {
            schema = schema.with_label_classes(n);
        }
        schema
    }
}

/// The column names of a feature of `values` values.
pub(crate) fn column_names(name: &str, values: usize) -> Vec<String> {
    if values == 1 {
        vec![name.to_owned()]
    } else {
        (0..values).map(|i| format!("{name}[{i}]")).collect()
    }
}

/// Writes `features` as a JSON object, in order.
fn ordered_ser<S: Serializer>(
    features: &[(String, FeatureConfig)],
    serializer: S,
) -> Result<S::Ok, S::Error> {
    let mut map = serializer.serialize_map(Some(features.len()))?;
    for (name, feature) in features {
        map.serialize_entry(name, feature)?;
    }
    map.end()
}

/// Reads a JSON object of features in the order written (the layout order), refusing a
/// name given twice.
fn ordered_de<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<(String, FeatureConfig)>, D::Error> {
    struct Ordered;
    impl<'de> Visitor<'de> for Ordered {
        type Value = Vec<(String, FeatureConfig)>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an object of features by name")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut features: Vec<(String, FeatureConfig)> = Vec::new();
            while let Some((name, feature)) = map.next_entry::<String, FeatureConfig>()? {
                if features.iter().any(|(n, _)| *n == name) {
                    return Err(serde::de::Error::custom(format!(
                        "feature '{name}' appears twice"
                    )));
                }
                features.push((name, feature));
            }
            Ok(features)
        }
    }
    deserializer.deserialize_map(Ordered)
}
