use serde_json::json;

use super::*;
use crate::optimizer::Decay;

#[test]
fn json_keeps_the_rule_s_fields_next_to_the_rate() {
    let spec = OptimizerSpec::adam(0.001);
    let value = serde_json::to_value(&spec).unwrap();
    assert_eq!(
        value,
        json!({"kind": "adam", "learning_rate": 0.001, "beta_1": 0.9f32,
               "beta_2": 0.999f32, "epsilon": 1e-7f32})
    );
    let read: OptimizerSpec = serde_json::from_value(value).unwrap();
    assert_eq!(read, spec);
}

#[test]
fn json_round_trips_every_setting_and_a_part() {
    let spec = OptimizerSpec::adagrad(0.05)
        .with_schedule(Schedule::decay(Decay::ExponentialDecay {
            decay_steps: 10,
            decay_rate: 0.5,
            staircase: true,
        }))
        .with_clipping(Clipping::by_global_norm(5.0))
        .with_regularization(Regularization { l1: 0.0, l2: 0.1 })
        .with_part("linear", OptimizerSpec::ftrl(0.2));
    let text = serde_json::to_string(&spec).unwrap();
    assert_eq!(serde_json::from_str::<OptimizerSpec>(&text).unwrap(), spec);
    assert_eq!(spec.kind(), "adagrad+linear:ftrl");
}

#[test]
fn adagrad_written_without_its_accumulator_start_reads_tf_s() {
    let read: OptimizerSpec =
        serde_json::from_str(r#"{"kind": "adagrad", "learning_rate": 0.1, "epsilon": 1e-7}"#)
            .unwrap();
    assert_eq!(read, OptimizerSpec::adagrad(0.1));
}

#[test]
fn validation_names_the_field_at_fault() {
    let message = |spec: OptimizerSpec| spec.validate().unwrap_err().to_string();
    assert!(message(OptimizerSpec::sgd(f64::NAN)).contains("learning_rate NaN"));
    let part = OptimizerSpec::sgd(0.1).with_part("linear", OptimizerSpec::ftrl(-1.0));
    assert!(message(part).contains("part learning_rate -1"));
    let unnamed = OptimizerSpec::sgd(0.1).with_part("", OptimizerSpec::ftrl(0.1));
    assert!(message(unnamed).contains("part module"));
    assert!(OptimizerSpec::sgd(0.0).validate().is_ok());
}
