//! TF Serving's flags that change nothing here, taken out of the command line and named in
//! a warning, so that a `tensorflow_model_server` command line runs unchanged instead of
//! stopping at a flag it does not need.

use std::ffi::OsString;

/// Each flag (this program's spelling of TF Serving's) and why it changes nothing here.
const IGNORED: [(&str, &str); 20] = [
    (
        "allow-version-labels-for-unavailable-models",
        "a label of a version not loaded is kept and answers once the version loads",
    ),
    ("enable-profiler", "there is no profiler service"),
    (
        "flush-filesystem-caches",
        "nothing read from the file system is kept",
    ),
    (
        "grpc-max-threads",
        "the gRPC API runs on the --rest-api-num-threads threads",
    ),
    ("mixed-precision", "exports serve in float32"),
    ("num-load-threads", "versions load one at a time"),
    (
        "num-tflite-interpreters-per-pool",
        "there are no TF Lite models",
    ),
    ("num-tflite-pools", "there are no TF Lite models"),
    (
        "num-unload-threads",
        "a version unloads when its last request ends",
    ),
    (
        "per-process-gpu-memory-fraction",
        "CUDA memory is the backend's pool, grown as needed",
    ),
    (
        "platform-config-file",
        "estimators load as exports; batching is --batching-parameters-file",
    ),
    ("prefer-tflite-model", "there are no TF Lite models"),
    (
        "remove-unused-fields-from-bundle-metagraph",
        "an export has no MetaGraphDef",
    ),
    (
        "saved-model-tags",
        "an export holds one model, with no tags",
    ),
    ("skip-initialize-tpu", "there are no TPUs"),
    (
        "tensorflow-session-config-file",
        "there is no TF session: the threads are the --tensorflow-*-parallelism flags",
    ),
    (
        "thread-pool-factory-config-file",
        "the threads are the --tensorflow-*-parallelism flags",
    ),
    (
        "use-alts-credentials",
        "there is no ALTS: --ssl-config-file gives the gRPC API TLS",
    ),
    ("xla-cpu-compilation-enabled", "there is no XLA"),
    ("xla-gpu-compilation-enabled", "there is no XLA"),
];

/// `args` without the flags of [`IGNORED`] (`--flag` or `--flag=value`, as TF Serving's
/// flags are written), and a warning naming each one taken out.
pub(crate) fn without_ignored(args: Vec<OsString>) -> (Vec<OsString>, Vec<String>) {
    let mut warnings = Vec::new();
    let kept = args
        .into_iter()
        .filter(|arg| {
            let Some(flag) = arg.to_str().and_then(|a| a.strip_prefix("--")) else {
                return true;
            };
            let name = flag.split_once('=').map_or(flag, |(name, _)| name);
            match IGNORED.iter().find(|(ignored, _)| *ignored == name) {
                Some((_, why)) => {
                    warnings.push(format!("--{flag}: ignored, as {why}"));
                    false
                }
                None => true,
            }
        })
        .collect();
    (kept, warnings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tf_serving_s_flags_with_no_effect_here_are_taken_out_and_named() {
        let args = [
            "x",
            "--model-name=m",
            "--num-load-threads=4",
            "--enable-profiler",
            "--port=1",
        ];
        let (kept, warnings) = without_ignored(args.map(OsString::from).to_vec());
        assert_eq!(
            kept,
            ["x", "--model-name=m", "--port=1"].map(OsString::from)
        );
        assert_eq!(warnings.len(), 2);
        assert_eq!(
            warnings[0],
            "--num-load-threads=4: ignored, as versions load one at a time"
        );
        assert!(
            warnings[1].starts_with("--enable-profiler: ignored"),
            "{warnings:?}"
        );
    }

    #[test]
    fn no_ignored_flag_is_one_this_program_reads() {
        use clap::CommandFactory;
        let command = crate::cli::Cli::command();
        let names: Vec<&str> = command
            .get_arguments()
            .filter_map(|a| a.get_long())
            .collect();
        for (ignored, _) in IGNORED {
            assert!(
                !names.contains(&ignored),
                "--{ignored} is read, not ignored"
            );
        }
    }
}
