//! Loading an export whose signature no request could be served by.

use std::path::Path;

use burn::nn::{Linear, LinearConfig};
use burn::tensor::backend::Backend;
use burn::tensor::{Tensor, TensorData};
use serde::{Deserialize, Serialize};

use super::super::writer::EXPORT_FORMAT_VERSION;
use super::*;
use crate::device::CpuBackend;
use crate::estimator::RunConfig;
use crate::export::{DType, InputSpec};
use crate::io::write_json_atomic;
use crate::state::weights_to_safetensors;

/// y = w·x + b on two features.
#[derive(Serialize, Deserialize)]
struct Plane {
    run_config: RunConfig,
}

impl Estimator for Plane {
    type Model<Bk: Backend> = Linear<Bk>;
    type Batch = Vec<[f32; 2]>;
    type DeviceBatch<Bk: Backend> = Tensor<Bk, 2>;
    type Prediction = f32;

    fn run_config(&self) -> &RunConfig {
        &self.run_config
    }

    fn build_model<Bk: Backend>(&self, device: &Bk::Device) -> Linear<Bk> {
        LinearConfig::new(2, 1).init(device)
    }

    fn to_device<Bk: Backend>(
        &self,
        batch: &Self::Batch,
        device: &Bk::Device,
    ) -> Result<Tensor<Bk, 2>> {
        let x: Vec<f32> = batch.iter().flatten().copied().collect();
        Ok(Tensor::from_data(
            TensorData::new(x, [batch.len(), 2]),
            device,
        ))
    }

    fn loss<Bk: Backend>(
        &self,
        model: &Linear<Bk>,
        x: &Tensor<Bk, 2>,
        _: &Bk::Device,
    ) -> Result<Tensor<Bk, 1>> {
        Ok(model.forward(x.clone()).mean())
    }

    fn predictions<Bk: Backend>(
        &self,
        model: &Linear<Bk>,
        x: &Tensor<Bk, 2>,
        _: &Bk::Device,
    ) -> Result<Vec<f32>> {
        Ok(model
            .forward(x.clone())
            .into_data()
            .to_vec()
            .unwrap_or_default())
    }

    fn serving_signature(&self) -> Signature {
        Signature::new()
            .with_shaped_input("x", DType::Float32, vec![2])
            .with_output("y")
    }
}

/// Writes an export of a `Plane` to `dir`, with `signature` for its signature.
fn write_export(dir: &Path, signature: &Signature) {
    let estimator = Plane {
        run_config: RunConfig::new(dir.join("model")),
    };
    let model = estimator.build_model::<CpuBackend>(&Default::default());
    std::fs::create_dir_all(dir).unwrap();
    let weights = weights_to_safetensors(&model, &[]).unwrap();
    std::fs::write(dir.join(WEIGHTS_FILE), weights).unwrap();
    write_json_atomic(&dir.join(SIGNATURE_FILE), signature).unwrap();
    write_json_atomic(&dir.join(ESTIMATOR_FILE), &estimator).unwrap();
    let info = ExportInfo {
        format_version: EXPORT_FORMAT_VERSION,
        global_step: 1,
        estimator_type: "Plane".into(),
        estimator_name: None,
    };
    write_json_atomic(&dir.join(EXPORT_FILE), &info).unwrap();
}

fn input(name: &str, shape: Vec<usize>) -> InputSpec {
    InputSpec {
        name: name.into(),
        dtype: DType::Float32,
        shape,
    }
}

#[test]
fn signatures_no_request_could_be_served_by_are_refused_naming_the_file_and_input() {
    let dir = tempfile::tempdir().unwrap();
    let good = Plane {
        run_config: RunConfig::new(dir.path()),
    }
    .serving_signature();
    write_export(dir.path(), &good);
    let loaded = Predictor::<Plane>::load(dir.path()).unwrap();
    assert_eq!(loaded.signature(), &good);
    assert_eq!(loaded.predict(&vec![[1.0, 2.0]]).unwrap().len(), 1);

    let with = |inputs: Vec<InputSpec>, outputs: &[&str]| Signature {
        inputs,
        outputs: outputs.iter().map(|o| o.to_string()).collect(),
        ..Signature::default()
    };
    let cases = [
        (
            with(vec![input("x", vec![2]), input("m", vec![3, 0])], &["y"]),
            "input 'm' has shape [3, 0]: a dimension of 0 leaves it no values",
        ),
        (
            with(vec![input("deep", vec![1; 254])], &["y"]),
            "input 'deep' has 254 dimensions, which with the batch's are more than 254, the \
             most a tensor has",
        ),
        (
            with(vec![input("x", vec![2]), input("", vec![])], &["y"]),
            "input 1 (from 0) has an empty name",
        ),
        (
            with(
                vec![input("x", vec![2]), input("z", vec![]), input("x", vec![1])],
                &["y"],
            ),
            "inputs 0 and 2 (from 0) are both named 'x'",
        ),
        (
            with(vec![input("x", vec![2])], &["y", "p", "y"]),
            "outputs 0 and 2 (from 0) are both named 'y'",
        ),
        (
            Signature {
                output_shapes: [("q".to_string(), vec![2])].into(),
                ..with(vec![input("x", vec![2])], &["y"])
            },
            "a shape is given for 'q', which is not an output",
        ),
    ];
    for (signature, why) in cases {
        write_export(dir.path(), &signature);
        let error = Predictor::<Plane>::load(dir.path()).err().unwrap();
        let file = dir.path().join(SIGNATURE_FILE);
        assert_eq!(
            error.to_string(),
            format!("export {}: {why}", file.display())
        );
    }
    // The most dimensions a served tensor can have, with the batch's.
    write_export(dir.path(), &with(vec![input("deep", vec![1; 253])], &["y"]));
    assert!(Predictor::<Plane>::load(dir.path()).is_ok());
}
