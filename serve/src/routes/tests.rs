use estimator::export::DType;

use super::*;
use crate::limits::Limits;
use crate::server::testing::serving;

#[tokio::test]
async fn only_the_methods_there_are_get_a_latency_and_every_request_is_counted() {
    let signature = Signature::new().with_input("x", DType::Float32);
    let server = serving("m", signature, Limits::default());
    for verb in ["predict", "no_such_method_0", "no_such_method_1"] {
        let body = Ok(Bytes::from_static(b"{}"));
        let answer = run(server.clone(), "m".into(), Which::Newest, verb.into(), body).await;
        assert!(answer.is_err());
    }
    let text = server.metrics.render();
    assert!(text.contains("API=\"predict\""), "{text}");
    assert!(!text.contains("no_such_method"), "{text}");
    let errors = r#"request_count{model_name="m",status="ERROR"} 3"#;
    assert!(text.contains(errors), "{text}");
}

#[test]
fn common_bodies_are_read_into_tensors_and_the_rest_as_json_with_the_same_errors() {
    let signature = Signature::new()
        .with_input("x", DType::Float32)
        .with_input("city", DType::String);
    let signature = Signature {
        outputs: vec!["all_classes".into(), "probabilities".into()],
        ..signature
    };
    let tensors = |verb: &str, body: &str| {
        let call = Call::from_tensors(verb, body.as_bytes(), &signature, true);
        call.map(|call| call.map(|call| (call.inputs.len(), call.answer)))
    };
    let json = |verb: &str, body: &str| {
        let body = serde_json::from_str(body).unwrap();
        Call::parse(verb, body, &signature, true).map(|call| call.inputs.len())
    };
    let rows = r#"[{"x": 1, "city": "a"}, {"x": 2, "city": "b"}]"#;
    let predict = format!(r#"{{"instances": {rows}}}"#);
    assert!(matches!(
        tensors("predict", &predict),
        Ok(Some((2, Answer::Predict(Format::Row, _, _))))
    ));
    let classify = format!(r#"{{"examples": {rows}, "signature_name": "classification"}}"#);
    assert!(matches!(
        tensors("classify", &classify),
        Ok(Some((2, Answer::Classify)))
    ));
    // A form left to the JSON reading, and a verb that is no method.
    let twice = r#"{"instances": [], "instances": [{"x": 1, "city": "a"}]}"#;
    assert!(matches!(tensors("predict", twice), Ok(None)));
    assert_eq!(json("predict", twice).unwrap(), 1);
    assert!(matches!(tensors("explain", &predict), Ok(None)));
    // Read into tensors, refused as the JSON reading refuses it.
    for (verb, body) in [
        ("regress", classify.clone()),
        (
            "predict",
            format!(r#"{{"instances": {rows}, "signature_name": "no"}}"#),
        ),
    ] {
        let Err(from_tensors) = tensors(verb, &body) else {
            panic!("{verb} {body} was accepted");
        };
        let from_json = json(verb, &body).unwrap_err();
        assert_eq!(from_tensors.to_string(), from_json.to_string());
    }
}
