//! How often a training run checkpoints, keeps checkpoints, writes summaries and logs: the
//! run's own settings (TF's `RunConfig` of each run), so a resumed run takes them from its
//! command line, and a flag left out means TF's default, not the previous run's value.

use clap::Args;
use estimator::RunConfig;

use crate::values::parse_hours;

/// The cadence flags of `train` and `train-and-evaluate`.
#[derive(Debug, Args)]
pub struct CadenceFlags {
    /// Save a checkpoint every N steps (default: every 600 s, and at the end).
    /// Example: `--save-checkpoints-steps 500`.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub save_checkpoints_steps: Option<u64>,
    /// Save a checkpoint whenever N seconds have passed since the last one, and at the end
    /// (default 600).
    /// Example: `--save-checkpoints-secs 60`.
    #[arg(
        long,
        value_name = "N",
        conflicts_with = "save_checkpoints_steps",
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub save_checkpoints_secs: Option<u64>,
    /// Keep the N most recent checkpoints, deleting older ones; 0 keeps all (default 5).
    /// Example: `--keep-checkpoint-max 10`.
    #[arg(long, value_name = "N")]
    pub keep_checkpoint_max: Option<usize>,
    /// Of the checkpoints --keep-checkpoint-max deletes, keep one for good whenever HOURS
    /// have passed since the last one kept so (default: none).
    /// Example: `--keep-checkpoint-every-n-hours 2`.
    #[arg(long, value_name = "HOURS", value_parser = parse_hours)]
    pub keep_checkpoint_every_n_hours: Option<f64>,
    /// Write the training summaries (loss, speed, histograms) every N steps (default 100).
    /// Example: `--save-summary-steps 10`.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub save_summary_steps: Option<u64>,
    /// Log the loss and global_step/sec every N steps (default 100).
    /// Example: `--log-step-count-steps 1000`.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub log_step_count_steps: Option<u64>,
}

impl CadenceFlags {
    /// `run_config` with this run's cadence: the flags given, TF's defaults for the rest.
    pub fn apply(&self, run_config: RunConfig) -> RunConfig {
        let defaults = RunConfig::new(&run_config.model_dir);
        let mut run_config = RunConfig {
            save_checkpoints: defaults.save_checkpoints,
            keep_checkpoint_max: defaults.keep_checkpoint_max,
            keep_checkpoint_every_n_hours: defaults.keep_checkpoint_every_n_hours,
            save_summary_steps: defaults.save_summary_steps,
            log_step_count_steps: defaults.log_step_count_steps,
            ..run_config
        };
        if let Some(steps) = self.save_checkpoints_steps {
            run_config = run_config.with_save_checkpoints_steps(steps);
        }
        if let Some(secs) = self.save_checkpoints_secs {
            run_config = run_config.with_save_checkpoints_secs(secs);
        }
        if let Some(n) = self.keep_checkpoint_max {
            run_config = run_config.with_keep_checkpoint_max(n);
        }
        if let Some(hours) = self.keep_checkpoint_every_n_hours {
            run_config = run_config.with_keep_checkpoint_every_n_hours(hours);
        }
        if let Some(steps) = self.save_summary_steps {
            run_config = run_config.with_save_summary_steps(steps);
        }
        if let Some(steps) = self.log_step_count_steps {
            run_config = run_config.with_log_step_count_steps(steps);
        }
        run_config
    }
}
