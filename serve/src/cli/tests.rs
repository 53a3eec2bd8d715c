use super::*;

/// The flags of one model, and `extra`.
fn cli(extra: &[&str]) -> Result<Cli, clap::Error> {
    let model = [
        "estimator-serve",
        "--model-name",
        "m",
        "--model-base-path",
        "b",
    ];
    Cli::try_parse_from(model.iter().chain(extra))
}

#[test]
fn tf_serving_s_rest_timeout_sets_the_three_timeouts_and_cannot_contradict_them() {
    let limits_of = |extra: &[&str]| cli(extra).unwrap().limits().unwrap();
    let limits = limits_of(&["--rest-api-timeout-in-ms", "5000"]);
    let five = Some(Duration::from_secs(5));
    let timeouts = (
        limits.header_read_timeout,
        limits.idle_timeout,
        limits.body_read_timeout,
    );
    assert_eq!(timeouts, (five, five, five));
    let off = limits_of(&["--rest-api-timeout-in-ms", "0"]);
    assert_eq!(off.idle_timeout, None);
    assert!(cli(&["--rest-api-timeout-in-ms", "5000", "--idle-timeout-ms", "1"]).is_err());
}

#[test]
fn model_warmup_is_on_unless_turned_off_in_either_spelling() {
    assert!(cli(&[]).unwrap().enable_model_warmup);
    assert!(
        !cli(&["--enable-model-warmup=false"])
            .unwrap()
            .enable_model_warmup
    );
    assert!(!tf_spelled("--enable_model_warmup=false").enable_model_warmup);
}

/// The command line of one model and `flag`, spelled as TF Serving spells it.
fn tf_spelled(flag: &str) -> Cli {
    let args = ["x", "--model_name=m", "--model_base_path=b", flag];
    let respelled = crate::flag_spelling::respelled(args.map(std::ffi::OsString::from));
    Cli::try_parse_from(respelled).unwrap()
}

#[test]
fn the_signature_method_check_is_off_unless_asked_for_in_either_spelling() {
    assert!(!cli(&[]).unwrap().enable_signature_method_name_check);
    let parsed = |flag: &str| tf_spelled(flag).enable_signature_method_name_check;
    assert!(parsed("--enable_signature_method_name_check=true"));
    assert!(parsed("--enable-signature-method-name-check"));
    assert!(!parsed("--enable_signature_method_name_check=false"));
    let cors = |flag: &str| tf_spelled(flag).rest_api_enable_cors_support;
    assert!(cors("--rest_api_enable_cors_support=true"));
    assert!(!cors("--rest_api_enable_cors_support=false"));
    let packed = |flag: &str| tf_spelled(flag).enable_serialization_as_tensor_content;
    assert!(packed("--enable_serialization_as_tensor_content=true"));
    assert!(!packed("--enable_serialization_as_tensor_content=false"));
    assert!(!cli(&[]).unwrap().enable_serialization_as_tensor_content);
}

#[test]
fn prediction_threads_are_read_as_tf_serving_reads_its_three_parallelism_flags() {
    let threads = |args: &[&str]| {
        let threads = cli(args).unwrap().prediction_threads().unwrap();
        let pool = threads.pool.as_ref().map(|p| p.current_num_threads());
        (pool, threads.concurrent)
    };
    assert_eq!(threads(&[]), (None, None));
    let session = ["--tensorflow-session-parallelism", "3"];
    assert_eq!(threads(&session), (Some(3), Some(3)));
    let intra = [
        "--tensorflow-session-parallelism",
        "3",
        "--tensorflow-intra-op-parallelism",
        "1",
    ];
    assert_eq!(
        threads(&intra),
        (Some(1), None),
        "given, the two override the session's"
    );
    let too_many = cli(&["--tensorflow-intra-op-parallelism", "100000"]).unwrap();
    let err = too_many.prediction_threads().unwrap_err().to_string();
    assert!(err.contains("more than"), "{err}");
    let copies = cli(&["--tensorflow-session-parallelism", "100000"]).unwrap();
    let err = copies.prediction_threads().unwrap_err().to_string();
    assert!(
        err.starts_with("--tensorflow-intra-op-parallelism 100000"),
        "{err}"
    );
    let copies = cli(&["--tensorflow-inter-op-parallelism", "100000"]).unwrap();
    let err = copies.prediction_threads().unwrap_err().to_string();
    assert!(
        err.starts_with("--tensorflow-inter-op-parallelism 100000"),
        "{err}"
    );
    let workers = cli(&["--rest-api-num-threads", "100000"]).unwrap();
    let err = workers.connection_threads().unwrap_err().to_string();
    assert!(err.starts_with("--rest-api-num-threads 100000"), "{err}");
    assert_eq!(cli(&[]).unwrap().connection_threads().unwrap(), None);
    let two = cli(&["--rest-api-num-threads", "2"]).unwrap();
    assert_eq!(two.connection_threads().unwrap(), Some(2));
}
