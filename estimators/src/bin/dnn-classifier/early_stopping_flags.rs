//! Early stopping in train-and-evaluate: training stops once an evaluated metric has not
//! improved for a number of global steps (TF's `stop_if_no_decrease_hook` and
//! `stop_if_no_increase_hook`), or once it is past a threshold (`stop_if_higher_hook`,
//! `stop_if_lower_hook`), judged on the evaluations in `MODEL_DIR/eval`, which the local
//! run or the cluster's evaluator writes.

use std::path::Path;
use std::str::FromStr;

use clap::Args;
use estimator::hooks::{EarlyStoppingHook, Improvement};

/// The early-stopping flags of `train-and-evaluate`.
#[derive(Debug, Args)]
pub struct EarlyStoppingFlags {
    /// train-and-evaluate: stop training once the evaluated METRIC has not decreased for
    /// STEPS global steps (TF's `stop_if_no_decrease_hook`).
    /// Example: `--stop-if-no-decrease loss:1000`.
    #[arg(long, value_name = "METRIC:STEPS", group = "early_stopping")]
    pub stop_if_no_decrease: Option<Patience>,
    /// train-and-evaluate: stop training once the evaluated METRIC has not increased for
    /// STEPS global steps (TF's `stop_if_no_increase_hook`).
    /// Example: `--stop-if-no-increase accuracy:1000`.
    #[arg(long, value_name = "METRIC:STEPS", group = "early_stopping")]
    pub stop_if_no_increase: Option<Patience>,
    /// train-and-evaluate: stop training once an evaluation has METRIC above VALUE (TF's
    /// `stop_if_higher_hook`).
    /// Example: `--stop-if-higher accuracy:0.97`.
    #[arg(long, value_name = "METRIC:VALUE", group = "early_stopping")]
    pub stop_if_higher: Option<Threshold>,
    /// train-and-evaluate: stop training once an evaluation has METRIC below VALUE (TF's
    /// `stop_if_lower_hook`).
    /// Example: `--stop-if-lower loss:0.05`.
    #[arg(long, value_name = "METRIC:VALUE", group = "early_stopping")]
    pub stop_if_lower: Option<Threshold>,
    /// With early stopping: never stop before this global step (TF's `min_steps`, default
    /// 0).
    /// Example: `--early-stopping-min-steps 2000`.
    #[arg(long, value_name = "N")]
    pub early_stopping_min_steps: Option<u64>,
}

/// A metric and how many global steps it may go without improving.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Patience {
    metric: String,
    steps: u64,
}

impl FromStr for Patience {
    type Err = String;

    /// Parses `METRIC:STEPS`, as `loss:1000`.
    fn from_str(text: &str) -> Result<Self, String> {
        let (metric, steps) = metric_and(text, "METRIC:STEPS, as loss:1000")?;
        match steps.parse::<u64>() {
            Ok(steps) if steps > 0 => Ok(Patience { metric, steps }),
            _ => Err(format!("'{steps}' is not a number of steps (1, 2, …)")),
        }
    }
}

/// A metric and the value past which training stops.
#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    metric: String,
    value: f64,
}

impl FromStr for Threshold {
    type Err = String;

    /// Parses `METRIC:VALUE`, as `accuracy:0.97`.
    fn from_str(text: &str) -> Result<Self, String> {
        let (metric, value) = metric_and(text, "METRIC:VALUE, as accuracy:0.97")?;
        match value.parse::<f64>() {
            Ok(value) if value.is_finite() => Ok(Threshold { metric, value }),
            _ => Err(format!("'{value}' is not a finite number")),
        }
    }
}

/// `text` split at its last colon into a metric (not empty) and the rest; `form` says what
/// was expected when it does not split so.
fn metric_and<'a>(text: &'a str, form: &str) -> Result<(String, &'a str), String> {
    match text.rsplit_once(':') {
        None => Err(format!("expected {form}")),
        Some(("", _)) => Err(format!("the metric is missing: expected {form}")),
        Some((metric, rest)) => Ok((metric.to_string(), rest)),
    }
}

impl EarlyStoppingFlags {
    /// Whether any of the flags was given.
    pub fn given(&self) -> bool {
        self.stop_if_no_decrease.is_some()
            || self.stop_if_no_increase.is_some()
            || self.stop_if_higher.is_some()
            || self.stop_if_lower.is_some()
            || self.early_stopping_min_steps.is_some()
    }

    /// The hook the flags ask for, watching the evaluations of `model_dir`.
    pub fn hook(&self, model_dir: &Path) -> Option<EarlyStoppingHook> {
        let eval_dir = model_dir.join("eval");
        let patience = |patience: &Patience, improvement| {
            EarlyStoppingHook::new(&eval_dir, &patience.metric, improvement, patience.steps)
        };
        let threshold = |threshold: &Threshold, improvement| {
            let (metric, value) = (&threshold.metric, threshold.value);
            EarlyStoppingHook::past_threshold(&eval_dir, metric, improvement, value)
        };
        let hook = if let Some(p) = &self.stop_if_no_decrease {
            patience(p, Improvement::Decrease)
        } else if let Some(p) = &self.stop_if_no_increase {
            patience(p, Improvement::Increase)
        } else if let Some(t) = &self.stop_if_higher {
            threshold(t, Improvement::Increase)
        } else if let Some(t) = &self.stop_if_lower {
            threshold(t, Improvement::Decrease)
        } else {
            return None;
        };
        Some(hook.with_min_steps(self.early_stopping_min_steps.unwrap_or(0)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_metric_and_steps_and_names_what_is_wrong() {
        let parse = |text: &str| text.parse::<Patience>();
        let patience = parse("auc_precision_recall:500").unwrap();
        assert_eq!(
            (patience.metric.as_str(), patience.steps),
            ("auc_precision_recall", 500)
        );
        assert!(parse("loss").unwrap_err().contains("METRIC:STEPS"));
        assert!(parse(":5").unwrap_err().contains("metric is missing"));
        assert!(parse("loss:0").unwrap_err().contains("'0' is not a number"));
        assert!(parse("loss:x").unwrap_err().contains("'x' is not a number"));
        let threshold = |text: &str| text.parse::<Threshold>();
        let accuracy = threshold("accuracy:0.97").unwrap();
        assert_eq!(
            (accuracy.metric.as_str(), accuracy.value),
            ("accuracy", 0.97)
        );
        assert_eq!(threshold("loss:-1").unwrap().value, -1.0);
        assert!(threshold("loss").unwrap_err().contains("METRIC:VALUE"));
        assert!(threshold(":5").unwrap_err().contains("metric is missing"));
        assert!(threshold("loss:inf")
            .unwrap_err()
            .contains("'inf' is not a finite number"));
    }
}
