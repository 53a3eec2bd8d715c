//! Start-up apart from the steady state: on CUDA the first steps compile kernels and fill
//! the memory pools, so a rate over the whole run understates what training runs at.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use estimator::hooks::{Control, Emit, Hook, RunStart, StepInfo};

/// Steps of this run counted as start-up: 10 % of the run, at most 100, at least 1.
pub fn startup_steps(planned_steps: u64) -> u64 {
    (planned_steps / 10).clamp(1, 100)
}

/// When the start-up steps ended and when the last step ended, as the hook saw them.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
struct Marks {
    /// Steps counted as start-up, known once training begins.
    startup_steps: u64,
    /// Steps this task ran so far.
    steps: u64,
    /// Global step and time at the end of the start-up steps.
    warm: Option<(u64, Instant)>,
    /// Global step and time at the end of the last step.
    last: Option<(u64, Instant)>,
}

/// The timings of one training run, read after training by whoever made the hook.
#[derive(Debug, Clone, Default)]
pub struct Timing(Arc<Mutex<Marks>>);

impl Timing {
    /// A hook recording into this timing; give it to the run's `TrainSpec`.
    pub fn hook(&self) -> StartupHook {
        StartupHook(self.clone())
    }

    fn marks(&self) -> MutexGuard<'_, Marks> {
        // A panicking hook leaves plain timestamps behind, still worth reading.
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The rates of a run that began at `started` (the process start), ended at `ended`,
    /// advanced the global step by `global_steps`, and trained `examples_per_step` examples
    /// per global step.
    pub fn report(
        &self,
        started: Instant,
        ended: Instant,
        global_steps: u64,
        examples_per_step: u64,
    ) -> Rates {
        let marks = *self.marks();
        let total_secs = (ended - started).as_secs_f64();
        let total = rate(global_steps * examples_per_step, total_secs);
        // A run no longer than its start-up has no steady state: its whole-run rate stands in.
        let (startup_end, steady) = match (marks.warm, marks.last) {
            (Some((warm_step, warm)), Some((last_step, last))) if last > warm => (
                warm,
                rate(
                    last_step.saturating_sub(warm_step) * examples_per_step,
                    (last - warm).as_secs_f64(),
                ),
            ),
            (_, Some((_, last))) => (last, total),
            (_, None) => (ended, total),
        };
        Rates {
            startup_secs: (startup_end - started).as_secs_f64(),
            examples_per_sec: steady,
            total_examples_per_sec: total,
        }
    }
}

fn rate(examples: u64, secs: f64) -> f64 {
    if secs > 0.0 {
        examples as f64 / secs
    } else {
        0.0
    }
}

/// What `--json` reports about speed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rates {
    /// Seconds from the process start to the end of the start-up steps.
    pub startup_secs: f64,
    /// Examples per second after the start-up steps (the steady state).
    pub examples_per_sec: f64,
    /// Examples per second over the whole process, start-up included.
    pub total_examples_per_sec: f64,
}

/// Records when the start-up steps and the last step end (see [`startup_steps`]).
pub struct StartupHook(Timing);

impl Hook for StartupHook {
    fn name(&self) -> &str {
        "startup_timer"
    }

    fn begin(&mut self, start: &RunStart<'_>) -> estimator::Result<()> {
        let mut marks = self.0.marks();
        marks.startup_steps = startup_steps(start.last_step.saturating_sub(start.global_step));
        Ok(())
    }

    fn after_step(&mut self, step: &StepInfo, _: &mut Emit) -> estimator::Result<Control> {
        let mut marks = self.0.marks();
        marks.steps += 1;
        if marks.steps == marks.startup_steps {
            marks.warm = Some((step.global_step, step.now));
        }
        marks.last = Some((step.global_step, step.now));
        Ok(Control::Continue)
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::time::Duration;

    use super::*;

    fn run(t0: Instant, first_step: u64, steps: u64, step_time: Duration) -> Timing {
        let timing = Timing::default();
        let mut hook = timing.hook();
        hook.begin(&RunStart {
            global_step: first_step,
            last_step: first_step + steps,
            model_dir: Path::new("m"),
            now: t0,
        })
        .unwrap();
        for i in 1..=steps {
            // The first step is slow, as kernel compilation makes it.
            let now = t0 + Duration::from_secs(10) + step_time * i as u32;
            let info = StepInfo {
                global_step: first_step + i,
                loss_step: first_step + i,
                loss: 1.0,
                now,
                duration: step_time,
            };
            hook.after_step(&info, &mut Emit::default()).unwrap();
        }
        timing
    }

    #[test]
    fn startup_is_ten_percent_of_the_run_at_most_a_hundred_steps() {
        assert_eq!(startup_steps(0), 1);
        assert_eq!(startup_steps(5), 1);
        assert_eq!(startup_steps(300), 30);
        assert_eq!(startup_steps(1000), 100);
        assert_eq!(startup_steps(1_000_000), 100);
    }

    #[test]
    fn steady_rate_leaves_out_the_startup_steps() {
        let t0 = Instant::now();
        let timing = run(t0, 0, 300, Duration::from_millis(100));
        let end = t0 + Duration::from_secs(41);
        let rates = timing.report(t0, end, 300, 10);
        // Start-up: 10 s, then 30 steps of 0.1 s.
        assert!((rates.startup_secs - 13.0).abs() < 1e-9, "{rates:?}");
        // 270 steps of 10 examples in 27 s.
        assert!((rates.examples_per_sec - 100.0).abs() < 1e-9, "{rates:?}");
        assert!(
            (rates.total_examples_per_sec - 3000.0 / 41.0).abs() < 1e-9,
            "{rates:?}"
        );
    }

    #[test]
    fn a_resumed_run_counts_its_own_steps() {
        let t0 = Instant::now();
        let timing = run(t0, 500, 100, Duration::from_secs(1));
        let rates = timing.report(t0, t0 + Duration::from_secs(110), 100, 1);
        assert!((rates.startup_secs - 20.0).abs() < 1e-9, "{rates:?}");
        assert!((rates.examples_per_sec - 1.0).abs() < 1e-9, "{rates:?}");
    }

    #[test]
    fn a_run_without_steady_steps_reports_its_whole_rate() {
        let t0 = Instant::now();
        let one = run(t0, 0, 1, Duration::from_secs(1));
        let rates = one.report(t0, t0 + Duration::from_secs(20), 1, 10);
        assert!((rates.startup_secs - 11.0).abs() < 1e-9, "{rates:?}");
        assert_eq!(rates.examples_per_sec, rates.total_examples_per_sec);
        let none = Timing::default().report(t0, t0 + Duration::from_secs(2), 0, 10);
        assert_eq!(none.startup_secs, 2.0);
        assert_eq!(none.examples_per_sec, 0.0);
    }
}
