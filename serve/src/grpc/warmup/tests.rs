use std::collections::HashMap;
use std::sync::Mutex;

use datasets::tf_proto::{feature, FloatList};
use datasets::{TfRecordCompression, TfRecordWriter};
use estimator::export::DType;
use estimator::Signature;

use super::super::examples::example;
use super::super::proto::tensorflow::serving::{
    input, ClassificationRequest, ClassifyLog, ExampleList, InferenceTask, Input, ModelSpec,
    MultiInferenceLog, MultiInferenceRequest, PredictLog, PredictRequest, RegressLog,
    RegressionRequest,
};
use super::super::proto::tensorflow::tensor_shape_proto::Dim;
use super::super::proto::tensorflow::{DataType, TensorProto, TensorShapeProto};
use super::*;
use crate::servable::Predictions;

/// Answers every instance with `prediction` (a classifier's and a regressor's outputs at
/// once, unless told otherwise), or fails each batch with `failure`; keeps the batch sizes it
/// saw.
struct Recording {
    signature: Signature,
    prediction: serde_json::Map<String, serde_json::Value>,
    batches: Mutex<Vec<usize>>,
    failure: Option<fn() -> ServeError>,
}

impl Recording {
    fn new(failure: Option<fn() -> ServeError>) -> Self {
        Self::answering(
            serde_json::json!({"all_classes": ["0", "1"], "probabilities": [0.25, 0.75],
                "predictions": [1.5]}),
            failure,
        )
    }

    fn answering(prediction: serde_json::Value, failure: Option<fn() -> ServeError>) -> Self {
        let serde_json::Value::Object(prediction) = prediction else {
            panic!("a prediction is an object")
        };
        let mut signature = Signature::new().with_input("x", DType::Float32);
        signature.outputs = prediction.keys().cloned().collect();
        Self {
            signature,
            prediction,
            batches: Mutex::new(Vec::new()),
            failure,
        }
    }

    fn batches(&self) -> Vec<usize> {
        self.batches.lock().unwrap().clone()
    }
}

impl Servable for Recording {
    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn predict(&self, instances: &[Instance]) -> Predictions {
        self.batches.lock().unwrap().push(instances.len());
        match self.failure {
            Some(failure) => Err(failure()),
            None => Ok(instances.iter().map(|_| self.prediction.clone()).collect()),
        }
    }
}

fn predict(input: &str, values: Vec<f32>) -> PredictionLog {
    let mut x = TensorProto {
        tensor_shape: Some(TensorShapeProto {
            dim: vec![Dim {
                size: values.len() as i64,
                name: String::new(),
            }],
            unknown_rank: false,
        }),
        float_val: values,
        ..TensorProto::default()
    };
    x.set_dtype(DataType::DtFloat);
    let request = PredictRequest {
        inputs: HashMap::from([(input.to_string(), x)]),
        ..PredictRequest::default()
    };
    PredictionLog {
        log_type: Some(LogType::PredictLog(PredictLog {
            request: Some(request),
            response: None,
        })),
    }
}

fn examples(n: usize) -> Option<Input> {
    let x = feature::Kind::FloatList(FloatList { value: vec![1.5] });
    Some(Input {
        kind: Some(input::Kind::ExampleList(ExampleList {
            examples: vec![example("x", x).encode_to_vec().into(); n],
        })),
    })
}

fn multi_inference(tasks: &[(&str, &str)], n: usize) -> PredictionLog {
    let tasks = tasks
        .iter()
        .map(|(signature, method)| InferenceTask {
            model_spec: Some(ModelSpec {
                name: "m".into(),
                signature_name: signature.to_string(),
                ..ModelSpec::default()
            }),
            method_name: method.to_string(),
        })
        .collect();
    PredictionLog {
        log_type: Some(LogType::MultiInferenceLog(MultiInferenceLog {
            request: Some(MultiInferenceRequest {
                tasks,
                input: examples(n),
            }),
            response: None,
        })),
    }
}

/// A version directory whose warmup file holds `records`.
fn version_with(records: &[Vec<u8>]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(WARMUP_FILE);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut writer = TfRecordWriter::create(&path, TfRecordCompression::None).unwrap();
    for record in records {
        writer.write_record(record).unwrap();
    }
    writer.finish().unwrap();
    dir
}

#[test]
fn each_predict_classify_and_regress_request_is_answered_before_the_version_serves() {
    let classify = PredictionLog {
        log_type: Some(LogType::ClassifyLog(ClassifyLog {
            request: Some(ClassificationRequest {
                model_spec: None,
                input: examples(3),
            }),
            response: None,
        })),
    };
    let regress = PredictionLog {
        log_type: Some(LogType::RegressLog(RegressLog {
            request: Some(RegressionRequest {
                model_spec: None,
                input: examples(1),
            }),
            response: None,
        })),
    };
    let both = multi_inference(
        &[
            ("classification", "tensorflow/serving/classify"),
            ("regression", "tensorflow/serving/regress"),
        ],
        4,
    );
    let records = [predict("x", vec![1.0, 2.0]), classify, regress, both];
    let dir = version_with(&records.map(|l| l.encode_to_vec()));
    let servable = Recording::new(None);
    assert_eq!(warm_up(dir.path(), &servable, 1, false), Ok(4));
    assert_eq!(servable.batches(), [2, 3, 1, 4]);
    // TF Serving's --num_request_iterations_for_warmup: each request answered that often.
    let repeating = Recording::new(None);
    assert_eq!(warm_up(dir.path(), &repeating, 3, false), Ok(4));
    assert_eq!(repeating.batches(), [2, 2, 2, 3, 3, 3, 1, 1, 1, 4, 4, 4]);

    let none = tempfile::tempdir().unwrap();
    assert_eq!(
        warm_up(none.path(), &servable, 1, false),
        Ok(0),
        "no file, no warmup"
    );
}

#[test]
fn a_record_that_cannot_be_answered_refuses_the_version_naming_the_file_and_the_record() {
    let fault = |records: &[Vec<u8>], failure: Option<fn() -> ServeError>| {
        let dir = version_with(records);
        let err = warm_up(dir.path(), &Recording::new(failure), 1, false).unwrap_err();
        let LoadFault::Warmup { path, .. } = &err else {
            panic!("{err:?}")
        };
        assert_eq!(path, &dir.path().join(WARMUP_FILE));
        err.to_string()
    };
    let good = predict("x", vec![1.0]).encode_to_vec();
    let err = fault(&[good.clone(), b"\xff\xff".to_vec()], None);
    assert!(
        err.contains("warmup record 1: not a PredictionLog"),
        "{err}"
    );
    let unknown = fault(&[PredictionLog { log_type: None }.encode_to_vec()], None);
    assert!(
        unknown.contains("warmup record 0: a log of no kind"),
        "{unknown}"
    );
    let wrong_input = fault(&[predict("y", vec![1.0]).encode_to_vec()], None);
    assert!(
        wrong_input.contains("warmup record 0: input tensor alias not found in signature: y"),
        "{wrong_input}"
    );
    let bad_request = || ServeError::BadRequest("no such class".into());
    let refused = fault(std::slice::from_ref(&good), Some(bad_request));
    assert!(
        refused.contains("warmup record 0: the model refused it: no such class"),
        "{refused}"
    );
    // A model that fails (a device out of memory) is a load to retry, naming the record.
    let dir = version_with(std::slice::from_ref(&good));
    let out_of_memory = || ServeError::Internal("out of memory".into());
    let failed = warm_up(dir.path(), &Recording::new(Some(out_of_memory)), 1, false).unwrap_err();
    assert!(matches!(failed, LoadFault::Load { .. }), "{failed:?}");
    let message = failed.to_string();
    assert!(
        message.contains("warmup record 0: the model failed: out of memory"),
        "{message}"
    );
    // A MultiInference a call would refuse, and a Classify of a model that is not a classifier.
    let predict_task = multi_inference(&[("", "tensorflow/serving/predict")], 1);
    let unimplemented = fault(&[predict_task.encode_to_vec()], None);
    assert!(
        unimplemented.contains("warmup record 0: Unsupported signature method_name"),
        "{unimplemented}"
    );
    let classify = multi_inference(&[("", "tensorflow/serving/classify")], 1).encode_to_vec();
    let dir = version_with(&[good.clone(), classify]);
    let regressor = Recording::answering(serde_json::json!({"predictions": [2.0]}), None);
    let not_a_classifier = warm_up(dir.path(), &regressor, 1, false)
        .unwrap_err()
        .to_string();
    assert!(
        not_a_classifier
            .contains("warmup record 1: the model refused it: this model is not a classifier"),
        "{not_a_classifier}"
    );
    let too_many = fault(&vec![good; MAX_RECORDS + 1], None);
    assert!(
        too_many.contains("more than 1000 warmup records"),
        "{too_many}"
    );

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(WARMUP_FILE);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, b"not a TFRecord file").unwrap();
    let torn = warm_up(dir.path(), &Recording::new(None), 1, false).unwrap_err();
    assert!(matches!(torn, LoadFault::Warmup { .. }), "{torn:?}");
}
