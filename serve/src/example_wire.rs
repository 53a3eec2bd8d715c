//! Serialized tf.Examples read where they lie, straight into a signature's input tensors:
//! the common case of `example_tensors.rs` without building each example's map of features
//! (walked as datasets' TFRecord reader walks them). Anything unusual — a feature named
//! twice, bytes that are not a tf.Example — is left to that decoded path, which takes the
//! same requests and names what is wrong with the others.

use std::ops::Range;

use datasets::{FeatureLocator, FeatureValues, ListKind, WireError};
use estimator::export::{DType, InputTensors, TensorElements};
use estimator::Signature;

/// The input tensors of the serialized `examples`, each with the features of the serialized
/// `context` (empty for none) under its own; `None` where one is not of the common case.
pub(crate) fn serialized_example_tensors<B: AsRef<[u8]>>(
    signature: &Signature,
    examples: &[B],
    context: &[u8],
) -> Option<InputTensors> {
    let locator = FeatureLocator::new(signature.inputs.iter().map(|input| &input.name));
    let mut in_context = Vec::new();
    let located = locator.locate(context, &mut in_context).ok()?;
    if located.others || located.repeated {
        return None;
    }
    // The context's features are read only where an example lacks one, but all of them must
    // be what prost decodes, as the decoded path decodes the whole context.
    for entry in in_context.iter().flatten() {
        if let Some(feature) = FeatureValues::of(entry_of(context, entry)).ok()? {
            readable(&feature)?;
        }
    }
    let mut columns = (signature.inputs.iter())
        .map(|input| {
            // A shape holding no values is left to the instances, as the decoded path does.
            let width = (input.shape.iter()).try_fold(1usize, |n, &d| n.checked_mul(d));
            let width = width.filter(|&n| n > 0)?;
            let count = width.checked_mul(examples.len())?;
            Some(Column::new(input.dtype, width, count))
        })
        .collect::<Option<Vec<_>>>()?;
    let mut found = Vec::new();
    for example in examples {
        let example = example.as_ref();
        let located = locator.locate(example, &mut found).ok()?;
        if located.others || located.repeated {
            return None;
        }
        for ((column, own), shared) in columns.iter_mut().zip(&found).zip(&in_context) {
            let feature = match own {
                Some(entry) => entry_of(example, entry),
                None => entry_of(context, shared.as_ref()?),
            };
            let feature = FeatureValues::of(feature).ok()??;
            // Lists of other kinds, merged away, would not be read here: prost reads them.
            if feature.lists() != 1 {
                return None;
            }
            column.push(feature)?;
        }
    }
    let elements = columns.into_iter().map(|column| column.elements).collect();
    InputTensors::new(signature, examples.len(), elements)
}

fn entry_of<'a>(record: &'a [u8], entry: &Range<usize>) -> &'a [u8] {
    &record[entry.clone()]
}

/// `Some` if `feature` is one list whose every value reads.
fn readable(feature: &FeatureValues<'_>) -> Option<()> {
    let read = match feature.kind() {
        _ if feature.lists() != 1 => Err("lists merged"),
        ListKind::Float => feature.floats::<WireError>(|_| {}),
        ListKind::Int64 => feature.ints::<WireError>(|_| Ok(())),
        ListKind::Bytes => feature.bytes::<WireError>(|_| Ok(())),
    };
    read.ok()
}

/// One input's elements, each example's feature appended as it is read.
struct Column {
    elements: TensorElements,
    width: usize,
}

/// A feature that does not fit its input: the request goes the decoded way.
struct Declined;

impl From<WireError> for Declined {
    fn from(_: WireError) -> Self {
        Declined
    }
}

impl Column {
    fn new(dtype: DType, width: usize, count: usize) -> Self {
        let elements = match dtype {
            DType::Float32 => TensorElements::Float32(Vec::with_capacity(count)),
            DType::Int64 => TensorElements::Int64(Vec::with_capacity(count)),
            DType::String => TensorElements::String(Vec::with_capacity(count)),
        };
        Column { elements, width }
    }

    /// Appends the feature's values if they are `width` of a kind the input's type takes:
    /// floats from finite floats or from integers, integers from integers, text from UTF-8
    /// bytes or from integers (their decimal text), as an instance's checks read them.
    fn push(&mut self, feature: FeatureValues<'_>) -> Option<()> {
        let before = self.elements.len();
        let read = match (&mut self.elements, feature.kind()) {
            (TensorElements::Float32(out), ListKind::Float) => {
                feature.floats::<Declined>(|bytes| {
                    let (values, _) = bytes.as_chunks::<4>();
                    out.extend(values.iter().map(|b| f32::from_le_bytes(*b)));
                })
            }
            (TensorElements::Float32(out), ListKind::Int64) => feature.ints(|v| {
                out.push(v as f32);
                Ok(())
            }),
            (TensorElements::Int64(out), ListKind::Int64) => feature.ints(|v| {
                out.push(v);
                Ok(())
            }),
            (TensorElements::String(out), ListKind::Bytes) => feature.bytes(|bytes| {
                let text = std::str::from_utf8(bytes).map_err(|_| Declined)?;
                out.push(text.to_string());
                Ok(())
            }),
            (TensorElements::String(out), ListKind::Int64) => feature.ints(|v| {
                out.push(v.to_string());
                Ok(())
            }),
            _ => Err(Declined),
        };
        read.ok()?;
        let fits = self.elements.len() - before == self.width;
        let finite = match &self.elements {
            TensorElements::Float32(out) => out[before..].iter().all(|x| x.is_finite()),
            _ => true,
        };
        (fits && finite).then_some(())
    }
}

#[cfg(test)]
mod properties;
#[cfg(test)]
mod tests;
