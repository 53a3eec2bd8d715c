//! A request's inputs and a batch's outputs as tensors, the batch first: what TF Serving's
//! Predict call carries, laid out for an estimator without a JSON value per element between.

use serde_json::{Map, Value};

use super::{DType, Signature};

/// The elements of a tensor, row-major.
#[derive(Debug, Clone, PartialEq)]
pub enum TensorElements {
    /// 32-bit floats.
    Float32(Vec<f32>),
    /// 64-bit integers.
    Int64(Vec<i64>),
    /// UTF-8 strings.
    String(Vec<String>),
}

impl TensorElements {
    /// The element type.
    pub fn dtype(&self) -> DType {
        match self {
            TensorElements::Float32(_) => DType::Float32,
            TensorElements::Int64(_) => DType::Int64,
            TensorElements::String(_) => DType::String,
        }
    }

    /// How many elements.
    pub fn len(&self) -> usize {
        match self {
            TensorElements::Float32(v) => v.len(),
            TensorElements::Int64(v) => v.len(),
            TensorElements::String(v) => v.len(),
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Elements `range`, copied.
    fn slice(&self, range: std::ops::Range<usize>) -> Self {
        match self {
            TensorElements::Float32(v) => TensorElements::Float32(v[range].to_vec()),
            TensorElements::Int64(v) => TensorElements::Int64(v[range].to_vec()),
            TensorElements::String(v) => TensorElements::String(v[range].to_vec()),
        }
    }

    /// `other`'s elements after these; `false` (and nothing appended) if its type differs.
    fn append(&mut self, other: &Self) -> bool {
        match (self, other) {
            (TensorElements::Float32(a), TensorElements::Float32(b)) => a.extend_from_slice(b),
            (TensorElements::Int64(a), TensorElements::Int64(b)) => a.extend_from_slice(b),
            (TensorElements::String(a), TensorElements::String(b)) => a.extend_from_slice(b),
            _ => return false,
        }
        true
    }

    /// Element `i` as the JSON value a request instance holds for it.
    fn value(&self, i: usize) -> Value {
        match self {
            TensorElements::Float32(v) => Value::from(f64::from(v[i])),
            TensorElements::Int64(v) => Value::from(v[i]),
            TensorElements::String(v) => Value::from(v[i].as_str()),
        }
    }
}

/// A tensor of a served model: its shape, the batch first, and its elements.
#[derive(Debug, Clone, PartialEq)]
pub struct ServingTensor {
    /// The dimensions, the batch's first.
    pub shape: Vec<usize>,
    /// `shape.iter().product()` elements, row-major.
    pub elements: TensorElements,
}

impl ServingTensor {
    /// Whether it holds `batch` rows, its first dimension, and as many elements as its
    /// shape.
    pub fn is_batch_of(&self, batch: usize) -> bool {
        let count = self.shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d));
        self.shape.first() == Some(&batch) && count == Some(self.elements.len())
    }

    /// Rows `range` of the first dimension, copied; `None` past the last row.
    pub fn rows(&self, range: std::ops::Range<usize>) -> Option<ServingTensor> {
        let (&batch, row_shape) = self.shape.split_first()?;
        if range.start > range.end || range.end > batch {
            return None;
        }
        let width: usize = row_shape.iter().product();
        let shape = std::iter::once(range.len()).chain(row_shape.iter().copied());
        Some(ServingTensor {
            shape: shape.collect(),
            elements: self.elements.slice(range.start * width..range.end * width),
        })
    }
}

/// A request's inputs as tensors: one for each input of the signature, in its order, of the
/// input's type and of shape `[batch] + the input's shape`.
#[derive(Debug, Clone, PartialEq)]
pub struct InputTensors {
    batch: usize,
    inputs: Vec<(String, ServingTensor)>,
}

impl InputTensors {
    /// `elements[i]` as the tensor of input `i` of `signature`, for a batch of `batch`;
    /// `None` unless there is one per input, each of its input's type holding `batch` times
    /// as many elements as the input's shape.
    pub fn new(signature: &Signature, batch: usize, elements: Vec<TensorElements>) -> Option<Self> {
        if elements.len() != signature.inputs.len() {
            return None;
        }
        let inputs = (signature.inputs.iter().zip(elements))
            .map(|(input, elements)| {
                let shape: Vec<usize> = std::iter::once(batch)
                    .chain(input.shape.iter().copied())
                    .collect();
                let count = shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d));
                let fits = elements.dtype() == input.dtype && count == Some(elements.len());
                fits.then(|| (input.name.clone(), ServingTensor { shape, elements }))
            })
            .collect::<Option<Vec<_>>>()?;
        Some(Self { batch, inputs })
    }

    /// Rows in the batch.
    pub fn batch(&self) -> usize {
        self.batch
    }

    /// The tensor of input `name`.
    pub fn get(&self, name: &str) -> Option<&ServingTensor> {
        (self.inputs.iter())
            .find(|(input, _)| input == name)
            .map(|(_, tensor)| tensor)
    }

    /// Each input's name and tensor, in the signature's order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &ServingTensor)> {
        self.inputs
            .iter()
            .map(|(name, tensor)| (name.as_str(), tensor))
    }

    /// The batches of `all`, one after another, as one; `None` unless they hold the same
    /// inputs, of the same types and shapes per row (as requests to one signature do).
    pub fn concat(all: &[&InputTensors]) -> Option<InputTensors> {
        let (first, rest) = all.split_first()?;
        let mut joined = (*first).clone();
        for next in rest {
            if next.inputs.len() != joined.inputs.len() {
                return None;
            }
            for ((name, tensor), (other_name, other)) in joined.inputs.iter_mut().zip(&next.inputs)
            {
                let fits = name == other_name && tensor.shape[1..] == other.shape[1..];
                if !fits || !tensor.elements.append(&other.elements) {
                    return None;
                }
                tensor.shape[0] += other.shape[0];
            }
            joined.batch += next.batch;
        }
        Some(joined)
    }

    /// The request's instances: each input's tensor cut along the batch, one value per row
    /// nested as the input's shape (a scalar for a scalar input), as a REST request writes
    /// them.
    pub fn instances(&self) -> Vec<Map<String, Value>> {
        let mut instances = vec![Map::new(); self.batch];
        for (name, tensor) in &self.inputs {
            let mut next = 0;
            for instance in &mut instances {
                let value = nest(&tensor.elements, &mut next, &tensor.shape[1..]);
                instance.insert(name.clone(), value);
            }
        }
        instances
    }
}

/// The elements from `*next` on, nested as `shape`.
fn nest(elements: &TensorElements, next: &mut usize, shape: &[usize]) -> Value {
    match shape.split_first() {
        None => {
            *next += 1;
            elements.value(*next - 1)
        }
        Some((&len, inner)) => {
            Value::Array((0..len).map(|_| nest(elements, next, inner)).collect())
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn signature() -> Signature {
        Signature::new()
            .with_shaped_input("x", DType::Float32, vec![2])
            .with_input("city", DType::String)
            .with_input("n", DType::Int64)
    }

    fn elements() -> Vec<TensorElements> {
        vec![
            TensorElements::Float32(vec![1.5, 2.0, 3.0, 4.25]),
            TensorElements::String(vec!["a".into(), "b".into()]),
            TensorElements::Int64(vec![7, 8]),
        ]
    }

    #[test]
    fn a_batch_of_rows_fills_its_shape() {
        let tensor = |shape: Vec<usize>, n: usize| ServingTensor {
            shape,
            elements: TensorElements::Float32(vec![0.0; n]),
        };
        assert!(tensor(vec![2, 3], 6).is_batch_of(2));
        assert!(tensor(vec![0, 3], 0).is_batch_of(0));
        assert!(!tensor(vec![2, 3], 6).is_batch_of(3));
        assert!(!tensor(vec![2, 3], 5).is_batch_of(2));
        assert!(!tensor(vec![], 1).is_batch_of(1));
        assert!(!tensor(vec![2, usize::MAX], 6).is_batch_of(2));
    }

    #[test]
    fn tensors_cut_along_the_batch_are_the_requests_instances() {
        let inputs = InputTensors::new(&signature(), 2, elements()).unwrap();
        assert_eq!(inputs.batch(), 2);
        assert_eq!(inputs.get("x").unwrap().shape, [2, 2]);
        let instances: Vec<Value> = inputs.instances().into_iter().map(Value::Object).collect();
        assert_eq!(
            instances,
            [
                json!({"x": [1.5, 2.0], "city": "a", "n": 7}),
                json!({"x": [3.0, 4.25], "city": "b", "n": 8}),
            ]
        );
        let names: Vec<&str> = inputs.iter().map(|(name, _)| name).collect();
        assert_eq!(names, ["x", "city", "n"]);
    }

    #[test]
    fn tensors_that_do_not_fit_the_signature_are_none() {
        assert!(InputTensors::new(&signature(), 3, elements()).is_none());
        assert!(InputTensors::new(&signature(), 2, elements()[..2].to_vec()).is_none());
        let mut wrong_type = elements();
        wrong_type[2] = TensorElements::Float32(vec![7.0, 8.0]);
        assert!(InputTensors::new(&signature(), 2, wrong_type).is_none());
        let huge = Signature::new().with_shaped_input("x", DType::Float32, vec![usize::MAX]);
        let one = vec![TensorElements::Float32(vec![1.0])];
        assert!(InputTensors::new(&huge, 2, one).is_none());
        let empty = InputTensors::new(
            &signature(),
            0,
            vec![
                TensorElements::Float32(Vec::new()),
                TensorElements::String(Vec::new()),
                TensorElements::Int64(Vec::new()),
            ],
        );
        assert_eq!(empty.unwrap().instances(), Vec::<Map<String, Value>>::new());
    }

    #[test]
    fn batches_join_and_their_outputs_split_by_rows() {
        let first = InputTensors::new(&signature(), 2, elements()).unwrap();
        let second = InputTensors::new(
            &signature(),
            1,
            vec![
                TensorElements::Float32(vec![5.0, 6.0]),
                TensorElements::String(vec!["c".into()]),
                TensorElements::Int64(vec![9]),
            ],
        )
        .unwrap();
        let joined = InputTensors::concat(&[&first, &second]).unwrap();
        assert_eq!(joined.batch(), 3);
        assert_eq!(joined.get("x").unwrap().shape, [3, 2]);
        let cities = TensorElements::String(vec!["a".into(), "b".into(), "c".into()]);
        assert_eq!(joined.get("city").unwrap().elements, cities);
        let mut rows = first.instances();
        rows.extend(second.instances());
        assert_eq!(joined.instances(), rows);
        let other = Signature::new().with_input("x", DType::Float32);
        let one = InputTensors::new(&other, 1, vec![TensorElements::Float32(vec![1.0])]);
        assert!(InputTensors::concat(&[&first, &one.unwrap()]).is_none());
        assert!(InputTensors::concat(&[]).is_none());

        let x = joined.get("x").unwrap();
        let middle = x.rows(1..3).unwrap();
        assert_eq!(middle.shape, [2, 2]);
        assert_eq!(
            middle.elements,
            TensorElements::Float32(vec![3.0, 4.25, 5.0, 6.0])
        );
        assert_eq!(x.rows(3..3).unwrap().shape, [0, 2]);
        assert!(x.rows(2..4).is_none());
    }
}
