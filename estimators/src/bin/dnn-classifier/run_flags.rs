//! The training flags as the library's settings: the run configuration's cluster,
//! distribution and timing settings, and the evaluation spec of train-and-evaluate.

use anyhow::{bail, Result};
use estimator::cluster::ClusterConfig;
use estimator::distribute::ps::{MinSizePartitioner, PsMode};
use estimator::distribute::{PowerSgd, TimelineSpec, DEFAULT_BUCKET_BYTES};
use estimator::{Distribution, EvalSpec, Exporter, RunConfig, VarsToWarmStart, WarmStartSettings};

use crate::flag_names::{ExporterName, PsModeName};
use crate::train_args::TrainArgs;

/// Evaluation of train-and-evaluate: the whole eval file, with the exporters asked for
/// (latest and final by default).
pub fn eval_spec(args: &TrainArgs) -> EvalSpec {
    let default = [ExporterName::Latest, ExporterName::Final];
    args.exporters
        .as_deref()
        .unwrap_or(&default)
        .iter()
        .fold(EvalSpec::new(), |spec, exporter| {
            spec.with_exporter(match exporter {
                ExporterName::Latest => Exporter::latest("latest"),
                ExporterName::Best => Exporter::best("best", "loss", false),
                ExporterName::Final => Exporter::final_exporter("final"),
            })
        })
}

fn ps_mode(args: &TrainArgs) -> PsMode {
    match args.ps_mode {
        PsModeName::Async => PsMode::Async {
            max_staleness: args.max_staleness,
        },
        PsModeName::Sync => PsMode::Sync {
            replicas_to_aggregate: args.replicas_to_aggregate.map(|n| n as usize),
        },
    }
}

/// `--replicas-to-aggregate` against the training tasks the cluster has: more could never
/// be gathered, and TF's `SyncReplicasOptimizer` refuses them too.
pub fn check_replicas_to_aggregate(args: &TrainArgs, cluster: &ClusterConfig) -> Result<()> {
    let Some(wanted) = args.replicas_to_aggregate else {
        return Ok(());
    };
    if args.ps_mode != PsModeName::Sync {
        bail!("--replicas-to-aggregate {wanted} applies to --ps-mode sync only");
    }
    if let ClusterConfig::Distributed { cluster, .. } = cluster {
        let training = cluster.training_tasks().len();
        if wanted as usize > training {
            bail!(
                "--replicas-to-aggregate {wanted}: the cluster has {training} training task(s) \
                 (chief and workers) to gather gradients from"
            );
        }
    }
    Ok(())
}

/// `model`'s run configuration with the command line's cluster settings, also for a model
/// resumed from its saved configuration; and the replicas this process trains, each on its
/// own batch of every step.
pub fn cluster_run_config(
    args: &TrainArgs,
    model: &RunConfig,
    cluster: &ClusterConfig,
) -> Result<(RunConfig, usize)> {
    let mut run_config = args
        .cadence
        .apply(model.clone())
        .with_ps_mode(ps_mode(args))
        .with_variable_partitioner(args.ps_min_shard_bytes.map(|bytes| MinSizePartitioner {
            min_shard_bytes: bytes,
            max_shards: args.ps_max_shards.map(|n| n as usize),
        }))
        .with_allreduce_compression(args.allreduce_compression)
        .with_allreduce_threads(args.allreduce_threads)
        .with_backward_passes_per_step(args.backward_passes_per_step as usize)
        .with_cluster(cluster.clone())
        .with_intra_op_threads(args.intra_op_threads)
        .with_loss_readback(args.loss_readback)
        .with_mixed_precision(args.mixed_precision)
        .with_prefetch_to_device(args.prefetch_to_device);
    // The flag's value, not the saved run's: a resumed run without it gets the default.
    run_config.device_cache_bytes = args.device_cache_bytes;
    run_config.allreduce_bucket_bytes = args.allreduce_bucket_bytes.unwrap_or(DEFAULT_BUCKET_BYTES);
    if let Some(rank) = args.powersgd_rank {
        let mut power_sgd = PowerSgd::new(rank as usize);
        if let Some(step) = args.powersgd_start_step {
            power_sgd = power_sgd.with_start_step(step);
        }
        run_config = run_config.with_power_sgd(power_sgd);
    }
    if let Some(path) = &args.timeline {
        let mut spec = TimelineSpec::new(path);
        if let Some(steps) = args.timeline_steps {
            spec = spec.with_steps(steps.skip, steps.count);
        }
        run_config = run_config.with_timeline(spec);
    }
    if let Some(secs) = args.peer_timeout_secs {
        run_config = run_config.with_peer_timeout_secs(secs);
    }
    if let Some(secs) = args.stall_warning_secs {
        run_config = run_config.with_stall_warning_secs(secs);
    }
    if let Some(secs) = args.startup_timeout_secs {
        run_config = run_config.with_startup_timeout_secs(secs);
    }
    if let Some(from) = &args.warm_start_from {
        let mut settings = WarmStartSettings::new(from);
        if let Some(regex) = &args.warm_start_vars {
            settings = settings.with_vars(VarsToWarmStart::Regex(regex.clone()));
        }
        run_config = run_config.with_warm_start_from(settings);
    }
    let mut in_process = 1;
    if let Some(mirrored) = args.mirrored {
        let resolved = mirrored.on_device(run_config.device)?;
        if let Distribution::Mirrored { replicas } = resolved {
            in_process = replicas;
        }
        run_config = run_config.with_train_distribute(resolved);
    }
    Ok((run_config, in_process))
}
