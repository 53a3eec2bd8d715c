//! Stops training when an eval metric stops improving (TF's `stop_if_no_decrease_hook`), or
//! once it is past a threshold (TF's `stop_if_higher_hook` and `stop_if_lower_hook`).

use std::path::PathBuf;

use super::hook::{Emit, Hook, StepInfo};
use super::Control;
use crate::error::{Error, Result};
use crate::metrics::{EvalHistory, EvalRecord};

/// Whether smaller or larger values of the watched metric are better.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Improvement {
    /// Smaller is better (loss).
    Decrease,
    /// Larger is better (accuracy, AUC).
    Increase,
}

/// When an [`EarlyStoppingHook`] stops training.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Rule {
    /// The metric has not improved for this many global steps.
    Patience(u64),
    /// An evaluation has the metric better than this value.
    Threshold(f64),
}

/// Stops training when `metric` has not improved for `max_steps_without_improvement`
/// global steps, or once it is past a threshold, judged on the evaluation results written
/// to an eval directory.
#[derive(Debug)]
pub struct EarlyStoppingHook {
    eval_dir: PathBuf,
    metric: String,
    improvement: Improvement,
    rule: Rule,
    min_steps: u64,
    run_every_steps: u64,
}

impl EarlyStoppingHook {
    /// Watches `metric` in `eval_dir` (e.g. `model_dir/eval`), checking every 60 steps.
    pub fn new(
        eval_dir: impl Into<PathBuf>,
        metric: impl Into<String>,
        improvement: Improvement,
        max_steps_without_improvement: u64,
    ) -> Self {
        Self {
            eval_dir: eval_dir.into(),
            metric: metric.into(),
            improvement,
            rule: Rule::Patience(max_steps_without_improvement),
            min_steps: 0,
            run_every_steps: 60,
        }
    }

    /// Watches `metric` in `eval_dir` and stops training once an evaluation has it above
    /// `threshold` (`Improvement::Increase`: TF's `stop_if_higher_hook`) or below it
    /// (`Decrease`: `stop_if_lower_hook`), checking every 60 steps.
    pub fn past_threshold(
        eval_dir: impl Into<PathBuf>,
        metric: impl Into<String>,
        improvement: Improvement,
        threshold: f64,
    ) -> Self {
        Self {
            rule: Rule::Threshold(threshold),
            ..Self::new(eval_dir, metric, improvement, 0)
        }
    }

    /// Never stop before global step `min_steps`.
    pub fn with_min_steps(mut self, min_steps: u64) -> Self {
        self.min_steps = min_steps;
        self
    }

    /// Read the eval results every `steps` steps.
    pub fn with_run_every_steps(mut self, steps: u64) -> Self {
        self.run_every_steps = steps.max(1);
        self
    }
}

/// The policy: given eval results, should training stop? (TF's
/// `_stop_if_no_metric_improvement_fn`: stop once the latest evaluated step is at least
/// `max_steps_without_improvement` past the step of the best value.)
pub fn should_stop(
    history: &[EvalRecord],
    metric: &str,
    improvement: Improvement,
    max_steps_without_improvement: u64,
    min_steps: u64,
) -> bool {
    let mut points: Vec<(u64, f64)> = history
        .iter()
        .filter_map(|r| r.metrics.get(metric).map(|v| (r.global_step, *v)))
        .collect();
    points.sort_by_key(|(step, _)| *step);
    let mut best: Option<(u64, f64)> = None;
    for (step, value) in points {
        let better = match (best, improvement) {
            // A diverged first evaluation (NaN, as the history reads a non-finite value
            // back) would stay the best forever: nothing compares better than NaN.
            (None, _) => !value.is_nan(),
            (Some((_, b)), Improvement::Decrease) => value < b,
            (Some((_, b)), Improvement::Increase) => value > b,
        };
        if better {
            best = Some((step, value));
        }
        if let Some((best_step, _)) = best {
            if step >= min_steps && step - best_step >= max_steps_without_improvement {
                return true;
            }
        }
    }
    false
}

/// The first evaluation (by step, from `min_steps` on) whose `metric` is above `threshold`
/// (`Increase`) or below it (`Decrease`), as `(step, value)`: TF's
/// `_stop_if_threshold_crossed_fn`. A NaN crosses nothing.
pub fn threshold_crossed(
    history: &[EvalRecord],
    metric: &str,
    improvement: Improvement,
    threshold: f64,
    min_steps: u64,
) -> Option<(u64, f64)> {
    let mut points: Vec<(u64, f64)> = (history.iter())
        .filter(|r| r.global_step >= min_steps)
        .filter_map(|r| r.metrics.get(metric).map(|v| (r.global_step, *v)))
        .collect();
    points.sort_by_key(|(step, _)| *step);
    points.into_iter().find(|(_, value)| match improvement {
        Improvement::Increase => *value > threshold,
        Improvement::Decrease => *value < threshold,
    })
}

impl Hook for EarlyStoppingHook {
    fn name(&self) -> &str {
        "early_stopping"
    }

    fn after_step(&mut self, step: &StepInfo, emit: &mut Emit) -> Result<Control> {
        if !step.global_step.is_multiple_of(self.run_every_steps) {
            return Ok(Control::Continue);
        }
        let history = EvalHistory::read(&self.eval_dir)?;
        // As TF: a metric the evaluations do not report could never stop training.
        if let Some(latest) = history.iter().max_by_key(|r| r.global_step) {
            if !latest.metrics.contains_key(&self.metric) {
                let reported: Vec<&str> = latest.metrics.keys().map(String::as_str).collect();
                return Err(Error::Config(format!(
                    "early stopping: the evaluations in {} report no metric '{}' (they report: \
                     {})",
                    self.eval_dir.display(),
                    self.metric,
                    reported.join(", ")
                )));
            }
        }
        let (metric, improvement, min_steps) = (&self.metric, self.improvement, self.min_steps);
        let why = match self.rule {
            Rule::Patience(steps) => should_stop(&history, metric, improvement, steps, min_steps)
                .then(|| format!("{metric} has not improved for {steps} steps")),
            Rule::Threshold(threshold) => {
                threshold_crossed(&history, metric, improvement, threshold, min_steps).map(
                    |(step, value)| {
                        let side = match improvement {
                            Improvement::Increase => "above",
                            Improvement::Decrease => "below",
                        };
                        format!("at step {step}, {metric} = {value} is {side} {threshold}")
                    },
                )
            }
        };
        match why {
            Some(why) => {
                emit.log(format!("early stopping: {why}"));
                Ok(Control::Stop)
            }
            None => Ok(Control::Continue),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(step: u64, loss: f64) -> EvalRecord {
        EvalRecord {
            global_step: step,
            metrics: [("loss".to_string(), loss)].into(),
        }
    }

    #[test]
    fn stops_only_after_enough_steps_without_decrease() {
        // Best loss 0.5 at step 200; 0.6 at 300, 0.55 at 400.
        let h = [
            record(100, 0.9),
            record(200, 0.5),
            record(300, 0.6),
            record(400, 0.55),
        ];
        assert!(!should_stop(&h, "loss", Improvement::Decrease, 300, 0)); // 400-200 = 200 < 300
        assert!(should_stop(&h, "loss", Improvement::Decrease, 200, 0)); // 400-200 = 200
        assert!(!should_stop(&h, "loss", Improvement::Decrease, 200, 500)); // min_steps

        // Where larger is better: best 0.9 at step 100, so 300 steps without gain.
        assert!(should_stop(&h, "loss", Improvement::Increase, 300, 0));
        assert!(!should_stop(&h, "accuracy", Improvement::Increase, 1, 0)); // metric absent
    }

    #[test]
    fn stops_at_the_first_evaluation_past_the_threshold_from_min_steps_on() {
        let h = [
            record(300, 0.4),
            record(100, 0.9),
            record(200, 0.5),
            record(400, f64::NAN),
        ];
        let crossed = |improvement, threshold, min_steps| {
            threshold_crossed(&h, "loss", improvement, threshold, min_steps)
        };
        assert_eq!(crossed(Improvement::Decrease, 0.6, 0), Some((200, 0.5)));
        assert_eq!(crossed(Improvement::Decrease, 0.6, 250), Some((300, 0.4)));
        assert_eq!(crossed(Improvement::Decrease, 0.5, 0), Some((300, 0.4)));
        assert_eq!(crossed(Improvement::Decrease, 0.3, 0), None);
        assert_eq!(crossed(Improvement::Increase, 0.8, 0), Some((100, 0.9)));
        assert_eq!(crossed(Improvement::Increase, 0.9, 0), None);
        assert_eq!(
            threshold_crossed(&h, "auc", Improvement::Increase, 0.0, 0),
            None
        );
    }

    #[test]
    fn a_nan_evaluation_is_never_the_best_one() {
        // A diverged first evaluation (NaN loss), then steady improvement: no stop.
        let h = [
            record(100, f64::NAN),
            record(200, 0.9),
            record(300, 0.8),
            record(400, 0.7),
        ];
        assert!(!should_stop(&h, "loss", Improvement::Decrease, 200, 0));
        assert!(!should_stop(&h, "loss", Improvement::Increase, 400, 0));
    }

    #[test]
    fn a_metric_the_evaluations_do_not_report_is_an_error_naming_those_they_do() {
        let dir = tempfile::tempdir().unwrap();
        let mut hook = EarlyStoppingHook::new(dir.path(), "los", Improvement::Decrease, 10)
            .with_run_every_steps(1);
        let step = StepInfo {
            global_step: 5,
            loss: 0.5,
            loss_step: 5,
            now: std::time::Instant::now(),
            duration: std::time::Duration::ZERO,
        };
        let mut emit = Emit::default();
        // No evaluation yet: nothing to judge.
        assert!(matches!(
            hook.after_step(&step, &mut emit),
            Ok(Control::Continue)
        ));
        EvalHistory::append(dir.path(), &record(4, 0.5)).unwrap();
        let err = hook.after_step(&step, &mut emit).unwrap_err().to_string();
        assert!(
            err.contains("report no metric 'los' (they report: loss)"),
            "{err}"
        );
    }
}
