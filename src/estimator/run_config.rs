//! Where and how an estimator runs: model directory, checkpoint and summary cadence, seed.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use crate::checkpoint::CheckpointEvery;
use crate::checkpoint::{CheckpointManager, WarmStartSettings};
use crate::cluster::{cluster_from_env, ClusterConfig};
use crate::device::DeviceSpec;
use crate::distribute::ps::{MinSizePartitioner, PsMode};
use crate::distribute::{Compression, Distribution, PowerSgd, TimelineSpec};
use crate::error::{Error, Result};
use crate::estimator::LossReadback;
use crate::io::write_json_atomic;
use crate::mixed_precision::MixedPrecision;

mod defaults;

pub use defaults::MAX_PREFETCH_TO_DEVICE;
use defaults::{
    default_allreduce_bucket_bytes, default_backward_passes_per_step, default_intra_op_threads,
    default_peer_timeout_secs, default_prefetch_to_device, default_stall_warning_secs,
    default_startup_timeout_secs,
};

/// Run-time settings of an estimator, as TF's `tf.estimator.RunConfig`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunConfig {
    /// Directory holding checkpoints, summaries and the saved config.
    pub model_dir: PathBuf,
    /// Checkpoint cadence (default: every 600 seconds, as TF).
    pub save_checkpoints: CheckpointEvery,
    /// How many recent checkpoints to keep; `None` keeps all (default 5).
    pub keep_checkpoint_max: Option<usize>,
    /// Of the checkpoints `keep_checkpoint_max` would delete, keep one for good whenever this
    /// many hours have passed since the last one kept so (default `None`: none). They leave
    /// the index (so evaluators and `latest` skip them) and stay in `model_dir`.
    #[serde(default)]
    pub keep_checkpoint_every_n_hours: Option<f64>,
    /// Write train summaries every N steps (default 100).
    pub save_summary_steps: u64,
    /// Log loss and global_step/sec every N steps (default 100).
    pub log_step_count_steps: u64,
    /// Seed for weight initialisation, dropout and shuffling (default 42).
    pub tf_random_seed: u64,
    /// Device to compute on (default: CPU).
    pub device: DeviceSpec,
    /// Show progress bars when stderr is a terminal (default true).
    pub progress: bool,
    /// How training is spread over replicas (default: by TF_CONFIG).
    #[serde(default)]
    pub train_distribute: Distribution,
    /// How ps tasks apply gradients in a cluster with ps tasks (asynchronously by default).
    #[serde(default)]
    pub ps_mode: PsMode,
    /// Cuts large variables into row blocks the ps tasks hold apart (none by default).
    #[serde(default)]
    pub variable_partitioner: Option<MinSizePartitioner>,
    /// The format gradients travel in when synchronous replicas (Mirrored,
    /// MultiWorkerMirrored) average them (default f32; Horovod's `Compression.fp16`):
    /// 16-bit formats halve the bytes on the wire, sums are kept in f32.
    #[serde(default)]
    pub allreduce_compression: Compression,
    /// Low-rank compression of large gradient matrices when synchronous replicas average
    /// them (PowerSGD, PyTorch DDP's `powerSGD_hook`; default none): each m × n matrix
    /// crosses as (m + n) · rank values, with error feedback. It changes what is applied
    /// (an approximation whose error is carried to the next step), and its state (error
    /// feedback, Q) lives in the process: a resumed run starts it afresh, averaging in full
    /// for `start_step` steps again.
    #[serde(default)]
    pub power_sgd: Option<PowerSgd>,
    /// Largest fusion bucket of a synchronous all-reduce, in bytes (default 4 MiB; Horovod's
    /// fusion threshold, DDP's `bucket_cap_mb`): smaller gradients are packed into buckets
    /// up to it, and on a GPU a larger gradient crosses in slices of this size, so that
    /// reading one slice off the device, reducing the previous one and uploading the one
    /// before overlap. At least 4 (one value); 0: chosen by trial in the first steps.
    #[serde(default = "default_allreduce_bucket_bytes")]
    pub allreduce_bucket_bytes: usize,
    /// Threads a synchronous all-reduce splits its passes over gradients (encoding, summing,
    /// dividing) over; 0 (the default): the replica's CPU threads per operation, at most 4,
    /// since those cores wait while gradients are averaged (on a GPU's host, this process's
    /// share of the cores).
    #[serde(default)]
    pub allreduce_threads: usize,
    /// Batches whose gradients make one update (default 1; Horovod's
    /// `backward_passes_per_step`, DDP's `no_sync`, Keras's `gradient_accumulation_steps`):
    /// each replica runs the forward and backward pass of this many batches one after
    /// another, adding up their gradients, and then averages them with the other replicas
    /// and applies them once, so an update weighs as one batch this many times larger and
    /// replicas synchronise once per that many batches. The global step counts updates; a
    /// step the input cannot fill is not taken. 0 counts as 1.
    #[serde(default = "default_backward_passes_per_step")]
    pub backward_passes_per_step: usize,
    /// Where the chief writes a trace of some steps in Chrome's format (Horovod's
    /// `HOROVOD_TIMELINE`; default none): each step's input, forward and backward passes,
    /// update and hooks, and its exchange with the other replicas bucket by bucket
    /// (Mirrored, MultiWorkerMirrored) or its pull and push (parameter servers).
    #[serde(default)]
    pub timeline: Option<TimelineSpec>,
    /// Seconds a replica waits for a silent peer before giving up on it (default 60).
    #[serde(default = "default_peer_timeout_secs")]
    pub peer_timeout_secs: u64,
    /// Seconds a wait for a peer may last before it is logged as a stall, naming the tasks
    /// that went quiet (default 60, as Horovod's stall inspector).
    #[serde(default = "default_stall_warning_secs")]
    pub stall_warning_secs: u64,
    /// Seconds a task waits at start for every peer to come up (default 300).
    #[serde(default = "default_startup_timeout_secs")]
    pub startup_timeout_secs: u64,
    /// Batches turned into device tensors ahead of the step, on a background thread (TF's
    /// `prefetch_to_device`; default 8: that thread sleeps until the loop has taken the
    /// batches it built, then builds the next ones, so it is woken once per 7 steps rather
    /// than at each). 0 builds each batch's tensors on the training thread, just before its
    /// step. The batches ahead hold device memory: lower it for batches of hundreds of MB.
    #[serde(default = "default_prefetch_to_device")]
    pub prefetch_to_device: usize,
    /// Bytes of device memory a cached training table may take to stay on the device
    /// whole, each step's batch gathered there by row number
    /// ([`DeviceCached`](crate::device_cache::DeviceCached)). `None` (default): a quarter
    /// of the device's memory on CUDA, none on the CPU; 0: never.
    #[serde(default)]
    pub device_cache_bytes: Option<u64>,
    /// Which steps' losses training reads back from the device (default `Auto`: every
    /// step's, one step late, on the CPU; only the wanted ones on CUDA; see [`LossReadback`]).
    #[serde(default)]
    pub loss_readback: LossReadback,
    /// Threads one CPU operation may use in training, evaluation and prediction (TF's
    /// `intra_op_parallelism_threads`): large matrix products and row-wise operations are
    /// split between them. 0 (default): at most `OMP_NUM_THREADS` when set
    /// (`estimator-launch` sets it per task), else the cores this process may use, shared
    /// among its `Mirrored` replicas; training takes one thread instead when a trial of a
    /// few steps on the first batch runs faster on one (small layers on fast cores), as
    /// MKL's dynamic threading does. 1 runs every operation on the training thread. An
    /// exported model's `Predictor` computes on its caller's thread (rayon's global pool,
    /// `RAYON_NUM_THREADS`).
    #[serde(default = "default_intra_op_threads")]
    pub intra_op_threads: usize,
    /// Initialise the model from another run's checkpoint when training starts in a model
    /// directory without one (TF's `warm_start_from`).
    #[serde(default)]
    pub warm_start_from: Option<WarmStartSettings>,
    /// The format the model computes in (default `None`: f32; Keras's mixed precision
    /// policy): see [`MixedPrecision`]. Weights, optimizer state and checkpoints stay f32.
    #[serde(default)]
    pub mixed_precision: MixedPrecision,
    /// The cluster this process belongs to, when the caller already knows it (a program
    /// that parsed TF_CONFIG itself); `None` reads TF_CONFIG once, when a run starts.
    #[serde(skip)]
    pub cluster: Option<ClusterConfig>,
}

impl RunConfig {
    /// A configuration writing to `model_dir`, with TF's defaults for everything else.
    pub fn new(model_dir: impl Into<PathBuf>) -> Self {
        Self {
            model_dir: model_dir.into(),
            save_checkpoints: CheckpointEvery::Secs(600),
            keep_checkpoint_max: Some(5),
            keep_checkpoint_every_n_hours: None,
            save_summary_steps: 100,
            log_step_count_steps: 100,
            tf_random_seed: 42,
            device: DeviceSpec::Cpu,
            progress: true,
            train_distribute: Distribution::Auto,
            ps_mode: PsMode::default(),
            variable_partitioner: None,
            allreduce_compression: Compression::None,
            power_sgd: None,
            allreduce_bucket_bytes: default_allreduce_bucket_bytes(),
            allreduce_threads: 0,
            backward_passes_per_step: default_backward_passes_per_step(),
            timeline: None,
            peer_timeout_secs: default_peer_timeout_secs(),
            startup_timeout_secs: default_startup_timeout_secs(),
            stall_warning_secs: default_stall_warning_secs(),
            prefetch_to_device: default_prefetch_to_device(),
            device_cache_bytes: None,
            loss_readback: LossReadback::default(),
            intra_op_threads: default_intra_op_threads(),
            warm_start_from: None,
            mixed_precision: MixedPrecision::None,
            cluster: None,
        }
    }

    /// Warm-starts training as `settings` say (TF's `warm_start_from`).
    pub fn with_warm_start_from(mut self, settings: WarmStartSettings) -> Self {
        self.warm_start_from = Some(settings);
        self
    }

    /// Train and evaluate in `precision` (f32 master weights; see [`MixedPrecision`]).
    pub fn with_mixed_precision(mut self, precision: MixedPrecision) -> Self {
        self.mixed_precision = precision;
        self
    }

    /// Run as the task `cluster` describes instead of TF_CONFIG's.
    pub fn with_cluster(mut self, cluster: ClusterConfig) -> Self {
        self.cluster = Some(cluster);
        self
    }

    /// The cluster this process belongs to: [`RunConfig::cluster`], or TF_CONFIG's.
    pub fn resolve_cluster(&self) -> Result<ClusterConfig> {
        match &self.cluster {
            Some(cluster) => Ok(cluster.clone()),
            None => Ok(cluster_from_env()?),
        }
    }

    /// Apply gradients on ps tasks as `mode` says (asynchronous or synchronous).
    pub fn with_ps_mode(mut self, mode: PsMode) -> Self {
        self.ps_mode = mode;
        self
    }

    /// Cut large variables into blocks the ps tasks hold apart, as `partitioner` says.
    pub fn with_variable_partitioner(mut self, partitioner: Option<MinSizePartitioner>) -> Self {
        self.variable_partitioner = partitioner;
        self
    }

    /// Send gradients in `compression`'s format when synchronous replicas average them.
    pub fn with_allreduce_compression(mut self, compression: Compression) -> Self {
        self.allreduce_compression = compression;
        self
    }

    /// Compress large gradient matrices to low rank as `power_sgd` says when synchronous
    /// replicas average them.
    pub fn with_power_sgd(mut self, power_sgd: PowerSgd) -> Self {
        self.power_sgd = Some(power_sgd);
        self
    }

    /// Fuse gradients into all-reduce buckets of at most `bytes` (4 or more; 0: by trial).
    pub fn with_allreduce_bucket_bytes(mut self, bytes: usize) -> Self {
        self.allreduce_bucket_bytes = bytes;
        self
    }

    /// Split a synchronous all-reduce's passes over gradients over `threads` threads (0:
    /// automatic).
    pub fn with_allreduce_threads(mut self, threads: usize) -> Self {
        self.allreduce_threads = threads;
        self
    }

    /// Add up the gradients of `passes` batches into each update (at least 1; see
    /// [`RunConfig::backward_passes_per_step`]).
    pub fn with_backward_passes_per_step(mut self, passes: usize) -> Self {
        self.backward_passes_per_step = passes.max(1);
        self
    }

    /// Record a trace of the synchronisation of the steps `spec` says (see
    /// [`RunConfig::timeline`]).
    pub fn with_timeline(mut self, spec: TimelineSpec) -> Self {
        self.timeline = Some(spec);
        self
    }

    /// Spread training as `distribution` says (TF's `train_distribute`).
    pub fn with_train_distribute(mut self, distribution: Distribution) -> Self {
        self.train_distribute = distribution;
        self
    }

    /// Give up on a peer that is silent for `secs` seconds.
    pub fn with_peer_timeout_secs(mut self, secs: u64) -> Self {
        self.peer_timeout_secs = secs.max(1);
        self
    }

    /// Log a stall, naming the tasks that went quiet, once a wait for a peer lasts `secs`
    /// seconds.
    pub fn with_stall_warning_secs(mut self, secs: u64) -> Self {
        self.stall_warning_secs = secs.max(1);
        self
    }

    /// Wait at most `secs` seconds at start for every peer to come up.
    pub fn with_startup_timeout_secs(mut self, secs: u64) -> Self {
        self.startup_timeout_secs = secs.max(1);
        self
    }

    /// Build the device tensors of `batches` batches ahead of the step on a background
    /// thread; 0 builds them on the training thread.
    pub fn with_prefetch_to_device(mut self, batches: usize) -> Self {
        self.prefetch_to_device = batches;
        self
    }

    /// Let a cached training table take up to `bytes` of device memory (0: keep it on the
    /// host); see [`RunConfig::device_cache_bytes`].
    pub fn with_device_cache_bytes(mut self, bytes: u64) -> Self {
        self.device_cache_bytes = Some(bytes);
        self
    }

    /// Read back the losses `readback` says.
    pub fn with_loss_readback(mut self, readback: LossReadback) -> Self {
        self.loss_readback = readback;
        self
    }

    /// Let one CPU operation use `threads` threads; 0: automatic (see the field).
    pub fn with_intra_op_threads(mut self, threads: usize) -> Self {
        self.intra_op_threads = threads;
        self
    }

    /// Save a checkpoint every `steps` global steps.
    pub fn with_save_checkpoints_steps(mut self, steps: u64) -> Self {
        self.save_checkpoints = CheckpointEvery::Steps(steps.max(1));
        self
    }

    /// Save a checkpoint whenever `secs` seconds have passed since the last one.
    pub fn with_save_checkpoints_secs(mut self, secs: u64) -> Self {
        self.save_checkpoints = CheckpointEvery::Secs(secs);
        self
    }

    /// Keep at most `n` checkpoints; 0 keeps all of them (TF semantics).
    pub fn with_keep_checkpoint_max(mut self, n: usize) -> Self {
        self.keep_checkpoint_max = (n > 0).then_some(n);
        self
    }

    /// Also keep for good one checkpoint every `hours` of those retention deletes (TF's
    /// `keep_checkpoint_every_n_hours`); 0 or less keeps none.
    pub fn with_keep_checkpoint_every_n_hours(mut self, hours: f64) -> Self {
        self.keep_checkpoint_every_n_hours = (hours > 0.0 && hours.is_finite()).then_some(hours);
        self
    }

    /// The manager that saves this run's checkpoints, with its retention.
    pub(crate) fn checkpoint_manager(&self) -> CheckpointManager {
        CheckpointManager::new(&self.model_dir, self.keep_checkpoint_max)
            .with_keep_checkpoint_every_n_hours(self.keep_checkpoint_every_n_hours)
    }

    /// Write train summaries every `steps` steps.
    pub fn with_save_summary_steps(mut self, steps: u64) -> Self {
        self.save_summary_steps = steps.max(1);
        self
    }

    /// Log loss and speed every `steps` steps.
    pub fn with_log_step_count_steps(mut self, steps: u64) -> Self {
        self.log_step_count_steps = steps.max(1);
        self
    }

    /// Seed everything random with `seed`.
    pub fn with_tf_random_seed(mut self, seed: u64) -> Self {
        self.tf_random_seed = seed;
        self
    }

    /// Compute on `device`.
    pub fn with_device(mut self, device: DeviceSpec) -> Self {
        self.device = device;
        self
    }

    /// Show (true) or never show (false) progress bars.
    pub fn with_progress(mut self, progress: bool) -> Self {
        self.progress = progress;
        self
    }

    /// Path of the saved copy of this configuration.
    pub fn path_in(model_dir: &Path) -> PathBuf {
        model_dir.join("run_config.json")
    }

    /// Writes this configuration to `model_dir/run_config.json` (atomically).
    pub fn save(&self) -> Result<()> {
        write_json_atomic(&Self::path_in(&self.model_dir), self)
    }

    /// Reads a configuration saved by [`RunConfig::save`].
    pub fn load(model_dir: &Path) -> Result<Self> {
        let path = Self::path_in(model_dir);
        let bytes = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
        serde_json::from_slice(&bytes).map_err(|e| Error::json(path, e))
    }
}

#[cfg(test)]
mod tests;
