//! Each schedule against TF's formula at chosen steps, derived by hand.

use super::*;

fn close(a: f64, b: f64) {
    assert!((a - b).abs() < 1e-12, "{a} != {b}");
}

#[test]
fn exponential_decay_continuous_and_staircase() {
    let decay = |staircase| Decay::ExponentialDecay {
        decay_steps: 100,
        decay_rate: 0.5,
        staircase,
    };
    close(decay(false).rate(0.1, 0), 0.1);
    close(decay(false).rate(0.1, 50), 0.1 * 0.5f64.sqrt());
    close(decay(false).rate(0.1, 200), 0.025);
    close(decay(true).rate(0.1, 150), 0.05);
    close(decay(true).rate(0.1, 199), 0.05);
    close(decay(true).rate(0.1, 200), 0.025);
}

#[test]
fn piecewise_constant_takes_the_value_up_to_and_including_each_boundary() {
    let decay = Decay::PiecewiseConstant {
        boundaries: vec![100, 200],
        values: vec![1.0, 0.5, 0.1],
    };
    let at: Vec<f64> = [0, 100, 101, 200, 201, 10_000]
        .iter()
        .map(|&s| decay.rate(7.0, s))
        .collect();
    assert_eq!(at, [1.0, 1.0, 0.5, 0.5, 0.1, 0.1]);
}

#[test]
fn polynomial_decay_holds_the_end_rate_or_cycles() {
    let decay = |power, cycle| Decay::PolynomialDecay {
        decay_steps: 100,
        end_learning_rate: 0.01,
        power,
        cycle,
    };
    close(decay(1.0, false).rate(0.1, 50), 0.055);
    close(decay(2.0, false).rate(0.1, 50), 0.09 * 0.25 + 0.01);
    close(decay(1.0, false).rate(0.1, 150), 0.01);
    // Cycling: step 150 is a quarter from the end of a 200-step period.
    close(decay(1.0, true).rate(0.1, 150), 0.09 * 0.25 + 0.01);
    close(decay(1.0, true).rate(0.1, 0), 0.1);
}

#[test]
fn cosine_decay_reaches_its_floor_and_stays() {
    let decay = |alpha| Decay::CosineDecay {
        decay_steps: 100,
        alpha,
    };
    close(decay(0.0).rate(1.0, 0), 1.0);
    close(decay(0.0).rate(1.0, 25), 0.5 * (1.0 + (PI / 4.0).cos()));
    close(decay(0.0).rate(1.0, 50), 0.5);
    close(decay(0.0).rate(1.0, 100), 0.0);
    close(decay(0.1).rate(2.0, 100), 0.2);
    close(decay(0.1).rate(2.0, 500), 0.2);
}

#[test]
fn cosine_restarts_lengthen_the_periods_and_lower_their_start() {
    let decay = |t_mul| Decay::CosineDecayRestarts {
        first_decay_steps: 100,
        t_mul,
        m_mul: 0.5,
        alpha: 0.0,
    };
    close(decay(2.0).rate(1.0, 0), 1.0);
    close(decay(2.0).rate(1.0, 50), 0.5);
    // Second period: steps 100..300 at half the rate.
    close(decay(2.0).rate(1.0, 100), 0.5);
    close(decay(2.0).rate(1.0, 200), 0.25);
    // Third period starts at step 300 at a quarter of the rate.
    close(decay(2.0).rate(1.0, 300), 0.25);
    // Equal periods.
    close(decay(1.0).rate(1.0, 150), 0.25);
}

#[test]
fn a_warm_up_rises_linearly_then_the_decay_starts_from_its_first_step() {
    let schedule = Schedule::decay(Decay::ExponentialDecay {
        decay_steps: 100,
        decay_rate: 0.5,
        staircase: true,
    })
    .with_warmup_steps(10);
    close(schedule.rate(0.1, 0, 1), 0.01);
    close(schedule.rate(0.1, 4, 1), 0.05);
    close(schedule.rate(0.1, 9, 1), 0.1);
    close(schedule.rate(0.1, 10, 1), 0.1);
    close(schedule.rate(0.1, 110, 1), 0.05);
    // Horovod's recipe: times the replicas averaged per update, when asked.
    close(schedule.rate(0.1, 10, 4), 0.1);
    let scaled = schedule.with_scale_by_sync_replicas(true);
    close(scaled.rate(0.1, 10, 4), 0.4);
    assert!(!scaled.is_constant());
    assert!(Schedule::default().is_constant());
}

#[test]
fn bad_parameters_are_errors_naming_the_field() {
    let message = |decay| Schedule::decay(decay).validate().unwrap_err().to_string();
    assert!(message(Decay::CosineDecay {
        decay_steps: 0,
        alpha: 0.0
    })
    .contains("decay_steps must be at least 1"));
    assert!(message(Decay::PiecewiseConstant {
        boundaries: vec![10],
        values: vec![1.0]
    })
    .contains("one more value than boundaries"));
    assert!(message(Decay::PiecewiseConstant {
        boundaries: vec![10, 10],
        values: vec![1.0, 2.0, 3.0]
    })
    .contains("must increase"));
    let json = r#"{"decay": {"kind": "cosine_decay_restarts", "first_decay_steps": 10}}"#;
    let parsed: Schedule = serde_json::from_str(json).unwrap();
    assert_eq!(
        parsed.decay,
        Decay::CosineDecayRestarts {
            first_decay_steps: 10,
            t_mul: 2.0,
            m_mul: 1.0,
            alpha: 0.0
        }
    );
}
