//! The tensors of a Predict answer as `TensorProto`s, numbers packed in `tensor_content`
//! when asked.

use std::collections::HashMap;

use estimator::export::{ServingTensor, TensorElements};

use super::proto::tensorflow::tensor_shape_proto::Dim;
use super::proto::tensorflow::{DataType, TensorProto, TensorShapeProto};

/// The Predict answer's outputs, each tensor under its name; numbers packed in
/// `tensor_content` when `packed`.
pub(crate) fn outputs(
    tensors: impl IntoIterator<Item = (String, ServingTensor)>,
    packed: bool,
) -> HashMap<String, TensorProto> {
    (tensors.into_iter())
        .map(|(name, tensor)| (name, proto(tensor, packed)))
        .collect()
}

/// `tensor` as a `TensorProto`: with `packed`, floats and integers little-endian in
/// `tensor_content` as TF's `AsProtoTensorContent` writes them; strings stay in
/// `string_val`.
fn proto(tensor: ServingTensor, packed: bool) -> TensorProto {
    let dim = (tensor.shape.iter())
        .map(|&size| Dim {
            size: size as i64,
            name: String::new(),
        })
        .collect();
    let mut proto = TensorProto {
        tensor_shape: Some(TensorShapeProto {
            dim,
            unknown_rank: false,
        }),
        ..TensorProto::default()
    };
    match tensor.elements {
        TensorElements::Float32(values) => {
            proto.set_dtype(DataType::DtFloat);
            match packed {
                true => {
                    proto.tensor_content = values.iter().flat_map(|x| x.to_le_bytes()).collect()
                }
                false => proto.float_val = values,
            }
        }
        TensorElements::Int64(values) => {
            proto.set_dtype(DataType::DtInt64);
            match packed {
                true => {
                    proto.tensor_content = values.iter().flat_map(|x| x.to_le_bytes()).collect()
                }
                false => proto.int64_val = values,
            }
        }
        TensorElements::String(values) => {
            proto.set_dtype(DataType::DtString);
            proto.string_val = values.into_iter().map(String::into_bytes).collect();
        }
    }
    proto
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dims(tensor: &TensorProto) -> Vec<i64> {
        let shape = tensor.tensor_shape.as_ref().unwrap();
        shape.dim.iter().map(|d| d.size).collect()
    }

    fn answer(packed: bool) -> HashMap<String, TensorProto> {
        let tensor = |shape: &[usize], elements| ServingTensor {
            shape: shape.to_vec(),
            elements,
        };
        let tensors = [
            (
                "probabilities",
                tensor(&[2, 2], TensorElements::Float32(vec![0.25, 0.75, 0.5, 0.5])),
            ),
            (
                "class_ids",
                tensor(&[2, 1], TensorElements::Int64(vec![1, -2])),
            ),
            (
                "classes",
                tensor(
                    &[2, 1],
                    TensorElements::String(vec!["b".into(), "a".into()]),
                ),
            ),
        ];
        outputs(tensors.map(|(name, t)| (name.to_string(), t)), packed)
    }

    #[test]
    fn each_tensor_is_its_proto_under_its_name() {
        let out = answer(false);
        assert_eq!(dims(&out["probabilities"]), [2, 2]);
        assert_eq!(out["probabilities"].float_val, [0.25, 0.75, 0.5, 0.5]);
        assert_eq!(out["probabilities"].dtype(), DataType::DtFloat);
        assert_eq!(out["class_ids"].int64_val, [1, -2]);
        assert_eq!(out["class_ids"].dtype(), DataType::DtInt64);
        assert_eq!(out["classes"].string_val, [b"b".to_vec(), b"a".to_vec()]);
        assert_eq!(out["classes"].dtype(), DataType::DtString);
    }

    #[test]
    fn packed_numbers_are_the_fields_bytes_little_endian_and_strings_stay() {
        let (fields, packed) = (answer(false), answer(true));
        let floats = &packed["probabilities"];
        assert!(floats.float_val.is_empty());
        let unpacked: Vec<f32> = (floats.tensor_content.chunks_exact(4))
            .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
            .collect();
        assert_eq!(unpacked, fields["probabilities"].float_val);
        assert_eq!(dims(floats), dims(&fields["probabilities"]));
        let ids = &packed["class_ids"];
        assert!(ids.int64_val.is_empty());
        assert_eq!(
            ids.tensor_content,
            [1i64, -2].map(i64::to_le_bytes).concat()
        );
        assert_eq!(packed["classes"], fields["classes"]);
    }
}
