use super::*;
use estimator::Signature;

const PREDICT: &str = "tensorflow/serving/predict";

fn task(model: &str, signature: &str, method: &str) -> InferenceTask {
    InferenceTask {
        model_spec: Some(ModelSpec {
            name: model.into(),
            signature_name: signature.into(),
            ..ModelSpec::default()
        }),
        method_name: method.into(),
    }
}

fn classifier() -> Signature {
    let mut signature = Signature::new();
    signature.outputs = ["class_ids", "classes", "all_classes", "probabilities"]
        .map(String::from)
        .to_vec();
    signature
}

fn message(error: ServeError) -> String {
    error.to_string()
}

#[test]
fn every_task_names_the_same_model_and_a_name() {
    let tasks = [task("m", "", CLASSIFY), task("m", "predict", CLASSIFY)];
    assert_eq!(model_name(&tasks).unwrap(), "m");
    let two = [task("m", "", CLASSIFY), task("n", "predict", CLASSIFY)];
    assert!(message(model_name(&two).unwrap_err()).contains("the same model name"));
    let unnamed = [task("m", "", CLASSIFY), task("", "predict", CLASSIFY)];
    assert!(message(model_name(&unnamed).unwrap_err()).contains("empty model name"));
    let no_spec = [InferenceTask::default()];
    assert!(message(model_name(&no_spec).unwrap_err()).contains("empty model name"));
    let none = model_name(&[]).unwrap_err();
    assert!(matches!(none, ServeError::BadRequest(_)), "{none:?}");
    assert!(message(none).contains("no tasks"));
}

#[test]
fn tasks_are_planned_in_order_with_their_signatures_resolved() {
    let tasks = [
        task("m", "", CLASSIFY),
        task("m", "classification", CLASSIFY),
    ];
    let plan = planned(&tasks, &classifier(), true).unwrap();
    let got: Vec<(Method, &str)> = plan.iter().map(|(_, m, n)| (*m, n.name)).collect();
    assert_eq!(
        got,
        [
            (Method::Classify, DEFAULT_SIGNATURE),
            (Method::Classify, "classification")
        ]
    );
    let mut regressor = Signature::new();
    regressor.outputs = vec!["predictions".into()];
    let tasks = [task("m", "regression", REGRESS)];
    let plan = planned(&tasks, &regressor, true).unwrap();
    assert_eq!((plan[0].1, plan[0].2.name), (Method::Regress, "regression"));
}

#[test]
fn what_tf_serving_refuses_is_refused_naming_it() {
    let signature = classifier();
    let refused = |tasks: &[InferenceTask]| planned(tasks, &signature, false).unwrap_err();

    // The default signature named twice, once by its name and once by none.
    let twice = refused(&[
        task("m", "", CLASSIFY),
        task("m", "serving_default", CLASSIFY),
    ]);
    assert!(
        message(twice).contains("Duplicate evaluation of signature: serving_default"),
        "twice"
    );
    let unknown = refused(&[task("m", "other", CLASSIFY)]);
    assert!(message(unknown).contains("\"other\" not found"));
    let predict = refused(&[task("m", "", PREDICT)]);
    assert!(
        matches!(predict, ServeError::Unimplemented(_)),
        "{predict:?}"
    );
    assert!(
        message(predict).contains("Unsupported signature method_name: tensorflow/serving/predict")
    );
    // A task of one method on a signature of the other: taken, as TF Serving takes it by
    // default, and refused with the method check on.
    let mut both = classifier();
    both.outputs.push("predictions".into());
    let crossed_task = [task("m", "classification", REGRESS)];
    assert!(planned(&crossed_task, &both, false).is_ok());
    let crossed = planned(&crossed_task, &both, true).unwrap_err();
    assert!(matches!(crossed, ServeError::BadRequest(_)), "{crossed:?}");
    assert!(message(crossed).contains(
        "Expected regression signature method_name to be tensorflow/serving/regress. \
             Was: tensorflow/serving/classify"
    ),);
}

#[test]
fn an_unimplemented_method_is_unimplemented_over_grpc_and_501_over_http() {
    let error = ServeError::Unimplemented("x".into());
    assert_eq!(error.status(), axum::http::StatusCode::NOT_IMPLEMENTED);
    assert_eq!(
        tonic::Status::from(error).code(),
        tonic::Code::Unimplemented
    );
}

#[test]
fn each_task_reads_its_own_outputs_from_the_tensors_of_all_tasks() {
    use estimator::export::TensorElements;
    let tensor = |shape: &[usize], elements| ServingTensor {
        shape: shape.to_vec(),
        elements,
    };
    let keys = ["predictions", "all_classes", "probabilities"].map(String::from);
    let tensors = [
        tensor(&[1, 1], TensorElements::Float32(vec![2.5])),
        tensor(
            &[1, 2],
            TensorElements::String(vec!["a".into(), "b".into()]),
        ),
        tensor(&[1, 2], TensorElements::Float32(vec![0.25, 0.75])),
    ];
    let Ok(TaskResult::RegressionResult(regressed)) = Method::Regress.result_of(&keys, &tensors)
    else {
        panic!("not a regression");
    };
    assert_eq!(regressed.regressions[0].value, 2.5);
    let Ok(TaskResult::ClassificationResult(classified)) =
        Method::Classify.result_of(&keys, &tensors)
    else {
        panic!("not a classification");
    };
    let classes = &classified.classifications[0].classes;
    assert_eq!((classes[1].label.as_str(), classes[1].score), ("b", 0.75));
    let missing = Method::Classify.result_of(&keys[..1], &tensors[..1]);
    assert!(
        matches!(missing, Err(ServeError::Internal(_))),
        "{missing:?}"
    );
}
