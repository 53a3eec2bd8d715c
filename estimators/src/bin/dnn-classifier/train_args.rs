//! Flags of `train` and `train-and-evaluate`: the model, its optimizer, the input and the
//! cluster settings a training run takes from the command line.

use std::path::PathBuf;

use clap::Args;
use estimator::datasets::AutoShardPolicy;
use estimator::distribute::Compression;
use estimator::optimizer::Decay;
use estimator::{Distribution, LossReadback, MixedPrecision};
use estimators::Activation;

use crate::cadence_flags::CadenceFlags;
use crate::early_stopping_flags::EarlyStoppingFlags;
use crate::flag_names::{ExporterName, LossReductionName, OptimizerName, PsModeName};
use crate::values::{
    parse_activation, parse_bucket_bytes, parse_decay, parse_embedding_dimension,
    parse_layer_width, parse_learning_rate, parse_mirrored, parse_n_classes, parse_vocabulary_file,
    TimelineSteps,
};

/// Hidden layer sizes without `--hidden-units`.
pub const DEFAULT_HIDDEN_UNITS: [usize; 2] = [128, 64];

/// Flags of `train` and `train-and-evaluate`.
#[derive(Debug, Args)]
pub struct TrainArgs {
    /// Training CSV (header row; `.gz` accepted), Parquet (`*.parquet`, `*.pq`), or with
    /// --feature-spec TFRecord files of tf.Example (`.gz` GZIP, `.zlib` ZLIB): one file, a
    /// comma-separated list, or globs (`*`, `?`, `[..]`, `**`; matches sorted by path).
    /// Example: `--train 'data/train-*.csv'`.
    #[arg(long, value_name = "FILES")]
    pub train: String,
    /// Evaluation CSV or Parquet, or TFRecord files with --feature-spec (required by
    /// train-and-evaluate); a list or globs as for --train, read one after another.
    /// Example: `--eval data/test.csv`.
    #[arg(long, value_name = "FILES")]
    pub eval: Option<String>,
    /// In a cluster: how the training tasks split the --train files (TF's
    /// AutoShardPolicy): file (file i to task i % tasks: each file read by one task; needs
    /// at least as many files as tasks), data (every task reads every file, keeping every
    /// n-th row), off (every task reads everything), or auto (file when there are at least
    /// as many files as tasks, else data).
    /// Example: `--auto-shard-policy file`.
    #[arg(long, value_name = "auto|file|data|off", default_value = "auto")]
    pub auto_shard_policy: AutoShardPolicy,
    /// Training files read at a time, rows taken from each in turn (tf.data's interleave
    /// cycle_length); 1 reads them one after another.
    /// Example: `--cycle-length 4`.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    pub cycle_length: u64,
    /// Rows taken from one training file before going on to the next of the cycle
    /// (interleave's block_length).
    /// Example: `--block-length 16`.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    pub block_length: u64,
    /// Name of the label column, required for a new model on CSV input (with
    /// --feature-spec: the label feature, by default the spec's "label"; resuming: the
    /// saved model's, and giving another is an error).
    /// Example: `--label-column label`.
    #[arg(long, value_name = "NAME")]
    pub label_column: Option<String>,
    /// Column types as JSON (a `datasets::Schema`); inferred from the header and first rows
    /// when absent. Resuming: the saved model's, and giving another is an error.
    /// Example: `--schema schema.json`.
    #[arg(long, value_name = "schema.json", conflicts_with = "feature_spec")]
    pub schema: Option<PathBuf>,
    /// Read --train and --eval as TFRecord files of tf.Example, through this feature spec
    /// (JSON, as tf.io.parse_example's: `{"features": {"x": {"kind": "fixed", "shape":
    /// [784], "dtype": "float32"}, "label": {"kind": "fixed", "shape": [], "dtype":
    /// "int64"}}, "label": "label"}`); saved in --model-dir for evaluate and predict.
    /// Example: `--feature-spec spec.json`.
    #[arg(long, value_name = "spec.json")]
    pub feature_spec: Option<PathBuf>,
    /// Hidden layer sizes (default 128,64). A resumed model keeps its own; giving other
    /// sizes is an error.
    /// Example: `--hidden-units 256,128,64`.
    #[arg(long, value_delimiter = ',', value_name = "N,N,...", value_parser = parse_layer_width)]
    pub hidden_units: Option<Vec<usize>>,
    /// Activation of the hidden layers: relu (the default), tanh, sigmoid, elu or leaky_relu
    /// (TF's `activation_fn`). A resumed model keeps its own; giving another is an error.
    /// Example: `--activation-fn tanh`.
    #[arg(long, value_name = "NAME", value_parser = parse_activation)]
    pub activation_fn: Option<Activation>,
    /// Number of classes (inferred from the training labels when absent). A resumed model
    /// keeps its own; giving another is an error.
    /// Example: `--n-classes 3`.
    #[arg(long, value_name = "N", value_parser = parse_n_classes)]
    pub n_classes: Option<usize>,
    /// A numeric input column weighting each example in the loss and the metrics (TF's
    /// `weight_column`); it is not a feature, and prediction does not need it. A resumed
    /// model keeps its own; giving another is an error.
    /// Example: `--weight-column weight`.
    #[arg(long, value_name = "NAME")]
    pub weight_column: Option<String>,
    /// Class names in id order, for string labels (sorted distinct labels when absent). A
    /// resumed model keeps its own; giving another is an error.
    /// Example: `--label-vocabulary setosa,versicolor,virginica`.
    #[arg(long, value_delimiter = ',')]
    pub label_vocabulary: Option<Vec<String>>,
    /// Probabilities of the positive class at which a binary classifier's evaluations also
    /// report accuracy, precision and recall (TF's `thresholds`); kept with the model, and
    /// replaced on resume.
    /// Example: `--thresholds 0.3,0.7`.
    #[arg(long, value_delimiter = ',', value_name = "P,P,...")]
    pub thresholds: Option<Vec<f32>>,
    /// How a batch's training loss reduces its examples (TF's `loss_reduction`): their
    /// mean (sum_over_batch_size, the default) or their sum, whose replicas and accumulated
    /// batches add up into an update instead of averaging. Kept with the model, and
    /// replaced on resume.
    /// Example: `--loss-reduction sum`.
    #[arg(long, value_enum, value_name = "sum_over_batch_size|sum")]
    pub loss_reduction: Option<LossReductionName>,
    /// A categorical input column's vocabulary, read from a file of one value a line (TF's
    /// `categorical_column_with_vocabulary_file`), instead of the values seen in training;
    /// a value outside it takes the one out-of-vocabulary id. Repeat it for several
    /// columns. A resumed model keeps its own; giving another is an error.
    /// Example: `--vocabulary-file city=cities.txt`.
    #[arg(long, value_name = "COLUMN=FILE", value_parser = parse_vocabulary_file)]
    pub vocabulary_file: Vec<(String, PathBuf)>,
    /// Feeds a categorical input column as a learned vector of N values (TF's
    /// `embedding_column`) instead of a one-hot indicator: for columns of many values.
    /// Repeat it for several columns. A resumed model keeps its own; giving another is an
    /// error.
    /// Example: `--embedding-dimension city=8`.
    #[arg(long, value_name = "COLUMN=N", value_parser = parse_embedding_dimension)]
    pub embedding_dimension: Vec<(String, usize)>,
    /// Optimizer (default adagrad). A resumed model keeps its own; giving another is an
    /// error.
    /// Example: `--optimizer adam`.
    #[arg(long, value_enum)]
    pub optimizer: Option<OptimizerName>,
    /// Learning rate (default: 0.05 for adagrad as TF, 0.1 for ftrl, 0.01 for sgd, 0.001
    /// for adam, adamw and rmsprop). On a resumed model it replaces the saved rate, saying
    /// so.
    /// Example: `--learning-rate 0.01`.
    #[arg(long, value_parser = parse_learning_rate)]
    pub learning_rate: Option<f64>,
    /// Examples per batch.
    /// Example: `--batch-size 256`.
    #[arg(long, default_value_t = 128)]
    pub batch_size: usize,
    /// Train until this global step (at least 1).
    /// Example: `--max-steps 1000`.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_steps: u64,
    /// Directory for checkpoints, summaries and the model configuration.
    /// Example: `--model-dir /tmp/iris`.
    #[arg(long, value_name = "DIR")]
    pub model_dir: PathBuf,
    /// Seed for initialisation, dropout and shuffling.
    /// Example: `--seed 7`.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Dropout probability of the hidden layers. On a resumed model it replaces the saved
    /// one, saying so.
    /// Example: `--dropout 0.2`.
    #[arg(long)]
    pub dropout: Option<f64>,
    /// Batch normalisation after each hidden layer.
    /// Example: `--batch-norm`.
    #[arg(long)]
    pub batch_norm: bool,
    /// Do not standardise numeric columns with the training data's mean and std (a new
    /// model only: resuming one trained with them is an error).
    /// Example: `--no-normalize`.
    #[arg(long)]
    pub no_normalize: bool,
    /// Shuffle buffer size (examples).
    /// Example: `--shuffle-buffer 1000`.
    #[arg(long, default_value_t = 10_000)]
    pub shuffle_buffer: usize,
    #[command(flatten)]
    pub cadence: CadenceFlags,
    #[command(flatten)]
    pub early_stopping: EarlyStoppingFlags,
    /// Compute device: cpu, cuda (CUDA device 0), cuda:N, or auto (CUDA when this build
    /// has it and a driver is installed, else the CPU). CUDA needs a build with the `cuda`
    /// feature.
    /// Example: `--device cuda:1`.
    #[arg(long, value_name = "DEVICE", default_value = "cpu")]
    pub device: String,
    /// Threads one CPU operation may use (TF's intra_op_parallelism_threads); large matrix
    /// products are split between them. 0: at most OMP_NUM_THREADS when set (estimator-launch
    /// sets it per task), else the cores shared among the --mirrored replicas, and one when
    /// a short trial on the first batch trains faster on one. 1: every operation on the
    /// training thread.
    /// Example: `--intra-op-threads 4`.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub intra_op_threads: usize,
    /// Which steps' losses training reads back from the device: every-step (one step late),
    /// when-wanted (only logged, summarised and checkpointed steps', so that a GPU never
    /// drains between them; a NaN is then caught at the next step read) or auto (every-step
    /// on the CPU, where a read costs nothing; when-wanted on CUDA).
    /// Example: `--loss-readback every-step`.
    #[arg(long, value_name = "WHICH", default_value = "auto")]
    pub loss_readback: LossReadback,
    /// Batches whose device tensors (feature columns applied) are built ahead of the step
    /// (TF's prefetch_to_device): by the CPU threads of --intra-op-threads when there are
    /// several, else on a thread of their own; 0 builds each batch on the training thread,
    /// just before its step.
    /// Example: `--prefetch-to-device 0`.
    #[arg(long, value_name = "N", default_value_t = 8)]
    pub prefetch_to_device: usize,
    /// Device memory the training rows may take to stay on the device whole: uploaded once,
    /// each step's batch gathered there by row number, so a step uploads 4 bytes a row.
    /// 0 uploads each batch. Default: a quarter of the GPU's memory on CUDA, 0 on the CPU.
    /// Example: `--device-cache-bytes 0`.
    #[arg(long, value_name = "BYTES")]
    pub device_cache_bytes: Option<u64>,
    /// The format the DNN's layers compute in while training and evaluating (Keras's
    /// mixed precision): none (f32), bf16, or fp16 with dynamic loss scaling. Weights,
    /// optimizer state, loss, checkpoints, predictions and exports stay f32.
    /// Example: `--mixed-precision bf16`.
    #[arg(long, value_name = "none|bf16|fp16", default_value = "none")]
    pub mixed_precision: MixedPrecision,
    /// How the learning rate changes with the global step (TF's schedules), as
    /// KIND:key=value,…; lists separated by '/'. KIND: exponential_decay (decay_steps,
    /// decay_rate, staircase), piecewise_constant (boundaries, values), polynomial_decay
    /// (decay_steps, end_learning_rate, power, cycle), cosine_decay (decay_steps, alpha),
    /// cosine_decay_restarts (first_decay_steps, t_mul, m_mul, alpha).
    /// Example: `--learning-rate-schedule exponential_decay:decay_steps=1000,decay_rate=0.96`.
    #[arg(long, value_name = "KIND:KEY=VALUE,...", value_parser = parse_decay)]
    pub learning_rate_schedule: Option<Decay>,
    /// Raise the learning rate linearly over the first N steps; the schedule starts after.
    /// Example: `--warmup-steps 500`.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub warmup_steps: u64,
    /// Multiply the learning rate by the number of replicas averaged per update (Horovod's
    /// recipe for a larger global batch).
    /// Example: `--scale-learning-rate-by-replicas --warmup-steps 500`.
    #[arg(long)]
    pub scale_learning_rate_by_replicas: bool,
    /// Scale the gradients so that their global L2 norm is at most this (TF's
    /// clip_gradients_by_norm, Keras' global_clipnorm); under MultiWorkerMirrored the
    /// averaged gradient is clipped, with parameter servers each pushed one.
    /// Example: `--clip-global-norm 1.0`.
    #[arg(long, value_name = "NORM")]
    pub clip_global_norm: Option<f32>,
    /// Scale each variable's gradient so that its L2 norm is at most this (Keras' clipnorm).
    /// Example: `--clip-norm 5.0`.
    #[arg(long, value_name = "NORM")]
    pub clip_norm: Option<f32>,
    /// Clamp every gradient value into [-VALUE, VALUE] (Keras' clipvalue).
    /// Example: `--clip-value 0.5`.
    #[arg(long, value_name = "VALUE")]
    pub clip_value: Option<f32>,
    /// L1 penalty on the kernels (weights, embedding tables; not biases), added to the loss.
    /// Example: `--l1-regularization 0.001`.
    #[arg(long, value_name = "STRENGTH", default_value_t = 0.0)]
    pub l1_regularization: f32,
    /// L2 penalty (strength · Σw²) on the kernels, added to the loss.
    /// Example: `--l2-regularization 0.01`.
    #[arg(long, value_name = "STRENGTH", default_value_t = 0.0)]
    pub l2_regularization: f32,
    /// Initialise the model from another run before the first step (TF's warm start): a
    /// model directory (its latest checkpoint) or a checkpoint file. Only when MODEL_DIR has
    /// no checkpoint yet; optimizer state is not carried over.
    /// Example: `--warm-start-from /tmp/iris`.
    #[arg(long, value_name = "DIR|FILE")]
    pub warm_start_from: Option<PathBuf>,
    /// With --warm-start-from: only the variables whose name matches this regular
    /// expression from its start (default: every trainable variable), e.g. 'hidden' to
    /// leave the logits layer fresh.
    /// Example: `--warm-start-vars hidden`.
    #[arg(long, value_name = "REGEX", requires = "warm_start_from")]
    pub warm_start_vars: Option<String>,
    /// Train N replicas in this process, each on its own batch, averaging their gradients
    /// (TF's MirroredStrategy; on CUDA replica i uses device cuda:i from --device's on, so N
    /// GPUs must be visible from there);
    /// `all`: one replica per visible GPU (one on the CPU). Not with TF_CONFIG.
    /// Example: `--mirrored 2`.
    #[arg(long, value_name = "N|all", value_parser = parse_mirrored)]
    pub mirrored: Option<Distribution>,
    /// Print the final metrics as one JSON line on stdout (with examples_per_sec after
    /// start-up, startup_secs and total_examples_per_sec when training; with synchronous
    /// replicas also sync_secs_per_step and its copy / wire / reduce / apply parts).
    /// Example: `--json`.
    #[arg(long)]
    pub json: bool,
    /// With ps tasks in TF_CONFIG: apply each worker's gradients on arrival (async) or
    /// average them into one update per step (sync).
    /// Example: `--ps-mode sync`.
    #[arg(long, value_enum, default_value = "async")]
    pub ps_mode: PsModeName,
    /// Sync mode: gradients averaged per update (default: every training task; at least 1,
    /// at most the training tasks); extra workers are backups whose late gradients are
    /// dropped.
    /// Example: `--replicas-to-aggregate 2`.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub replicas_to_aggregate: Option<u32>,
    /// Async mode: drop gradients computed from variables more than K steps old.
    /// Example: `--max-staleness 10`.
    #[arg(long, value_name = "K")]
    pub max_staleness: Option<u64>,
    /// With ps tasks: cut each variable into blocks of rows of at least BYTES, at most one
    /// per ps task, that the ps tasks hold apart (TF's `MinSizePartitioner`; TF's default
    /// block is 262144), so that no ps serves a large layer alone. Checkpoints hold whole
    /// variables. Every task of the job must be given the same.
    /// Example: `--ps-min-shard-bytes 262144`.
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u64).range(1..))]
    pub ps_min_shard_bytes: Option<u64>,
    /// With `--ps-min-shard-bytes`: the most blocks per variable (default: the number of
    /// ps tasks). Example: `--ps-max-shards 4`.
    #[arg(long, value_name = "N", requires = "ps_min_shard_bytes",
          value_parser = clap::value_parser!(u32).range(1..))]
    pub ps_max_shards: Option<u32>,
    /// MultiWorkerMirrored and Mirrored: the format gradients travel in when replicas
    /// average them (`none`: f32; `bf16` or `fp16`: half the bytes, sums kept in f32).
    /// Example: `--allreduce-compression bf16`.
    #[arg(long, value_name = "none|fp16|bf16", default_value = "none")]
    pub allreduce_compression: Compression,
    /// MultiWorkerMirrored and Mirrored: compress each large gradient matrix to rank R
    /// (PowerSGD, PyTorch DDP's `powerSGD_hook`): a rows x columns gradient crosses as
    /// (rows + columns) x R values, and what the approximation leaves out is added to the
    /// next step's gradient. Example: `--powersgd-rank 4`.
    #[arg(long, value_name = "R", value_parser = clap::value_parser!(u32).range(1..))]
    pub powersgd_rank: Option<u32>,
    /// With `--powersgd-rank`: steps of each run averaged in full before compressing
    /// (default 1000, as PyTorch's `start_powerSGD_iter`). Example: `--powersgd-start-step 0`.
    #[arg(long, value_name = "N", requires = "powersgd_rank")]
    pub powersgd_start_step: Option<u64>,
    /// MultiWorkerMirrored and Mirrored: the largest fusion bucket in bytes (default
    /// 4194304, 4 MiB): smaller gradients are packed into buckets up to it, and on a GPU a
    /// larger one is reduced in slices of this size, overlapping copies and the wire.
    /// `auto`: 1, 4, 16 and 64 MiB in turns, 10 steps each after 10, and the one whose
    /// synchronisation the ranks timed fastest kept (Horovod's autotune).
    /// Example: `--allreduce-bucket-bytes 16777216`.
    #[arg(long, value_name = "BYTES|auto", value_parser = parse_bucket_bytes)]
    pub allreduce_bucket_bytes: Option<usize>,
    /// MultiWorkerMirrored and Mirrored: threads that share the all-reduce's passes over
    /// gradients (default 0: the replica's CPU threads per operation, at most 4; on a GPU,
    /// this process's share of the host's cores). Example: `--allreduce-threads 8`.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub allreduce_threads: usize,
    /// Batches whose gradients are added up into each update (default 1; Horovod's
    /// `backward_passes_per_step`): an update weighs as one batch N times larger, and
    /// MultiWorkerMirrored replicas synchronise once per N batches. `--max-steps` counts
    /// updates. Example: `--backward-passes-per-step 4`.
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub backward_passes_per_step: u32,
    /// The chief writes a trace of some steps to PATH, in Chrome's trace format (Horovod's
    /// timeline; open it in Perfetto or chrome://tracing): each step's input, forward and
    /// backward passes, update and hooks, and with MultiWorkerMirrored or Mirrored each
    /// gradient bucket's read off the device, all-reduce and upload, with ps tasks the pull
    /// and the push. Example: `--timeline /tmp/timeline.json`.
    #[arg(long, value_name = "PATH")]
    pub timeline: Option<PathBuf>,
    /// With --timeline: the training steps to pass over first (default 10: start-up),
    /// then how many to record (default 10). Example: `--timeline-steps 100,20`.
    #[arg(long, value_name = "SKIP,COUNT", requires = "timeline")]
    pub timeline_steps: Option<TimelineSteps>,
    /// In a cluster: seconds a task waits for a silent peer (the chief, a ps, a worker)
    /// before it exits with a retryable code naming it (default 60; at least 1).
    /// Example: `--peer-timeout-secs 30`.
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..))]
    pub peer_timeout_secs: Option<u64>,
    /// In a cluster: seconds a wait for a peer may last before this task logs a stall
    /// warning naming the tasks that have not arrived (default 60).
    /// Example: `--stall-warning-secs 10`.
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..))]
    pub stall_warning_secs: Option<u64>,
    /// In a cluster: seconds to wait at start for every peer to come up before exiting with
    /// a retryable code naming the missing one (default 300).
    /// Example: `--startup-timeout-secs 60`.
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..))]
    pub startup_timeout_secs: Option<u64>,
    /// train-and-evaluate: exporters run after evaluations, into `MODEL_DIR/export/<name>`
    /// (latest: every evaluation; best: when the loss improves; final: at the end; default
    /// latest,final). `train` exports nothing, and refuses the flag.
    /// Example: `--exporters latest,best,final`.
    #[arg(long, value_enum, value_delimiter = ',')]
    pub exporters: Option<Vec<ExporterName>>,
}
