//! TF Serving's metadata answer (`GET /v1/models/{name}/metadata`): every signature the
//! export answers to, its inputs' and outputs' types and shapes.

use estimator::export::DType;
use estimator::Signature;
use serde_json::{json, Value};

use crate::signatures::NamedSignature;
use crate::stacked::output_dtype;

fn tf_name(dtype: DType) -> &'static str {
    match dtype {
        DType::Float32 => "DT_FLOAT",
        DType::Int64 => "DT_INT64",
        DType::String => "DT_STRING",
    }
}

/// TF Serving's metadata answer: every signature the export answers to.
pub(super) fn metadata_json(model: &str, version: u64, signature: &Signature) -> Value {
    let tensor = |dtype: &str, per_example: &[usize], name: &str| {
        let mut dims = vec![json!({ "size": "-1", "name": "" })];
        dims.extend(
            per_example
                .iter()
                .map(|d| json!({ "size": d.to_string(), "name": "" })),
        );
        json!({
            "dtype": dtype,
            "tensor_shape": { "dim": dims, "unknown_rank": false },
            "name": format!("{name}:0")
        })
    };
    let inputs: serde_json::Map<String, Value> = signature
        .inputs
        .iter()
        .map(|i| (i.name.clone(), tensor(tf_name(i.dtype), &i.shape, &i.name)))
        .collect();
    let definitions: serde_json::Map<String, Value> = NamedSignature::all(signature)
        .into_iter()
        .map(|named| {
            let outputs: serde_json::Map<String, Value> = named
                .output_names(signature)
                .iter()
                .map(|name| {
                    let dtype = tf_name(output_dtype(named.key_of(name)));
                    let shape = named.output_shape(signature, name);
                    (name.clone(), tensor(dtype, shape, name))
                })
                .collect();
            let definition = json!({
                "inputs": inputs,
                "outputs": outputs,
                "method_name": named.method
            });
            (named.name.to_string(), definition)
        })
        .collect();
    json!({
        "model_spec": { "name": model, "signature_name": "", "version": version.to_string() },
        "metadata": { "signature_def": { "signature_def": definitions } }
    })
}
