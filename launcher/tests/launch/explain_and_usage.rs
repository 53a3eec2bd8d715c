//! `explain`, and one-line errors for what the launcher cannot use.

use std::time::{Duration, Instant};

use crate::harness::{run, Launcher};

#[test]
fn explain_describes_a_kubeflow_task() {
    let tf_config = r#"{"cluster": {"chief": ["127.0.0.1:2222"],
        "worker": ["127.0.0.1:2223", "iris-worker-1.invalid:2222"],
        "ps": ["127.0.0.1:2224"]},
        "task": {"type": "worker", "index": 1}, "environment": "cloud"}"#;
    let done =
        Launcher::start(&["explain", "--model-dir", "/model/iris"], Some(tf_config)).finish();
    assert_eq!(done.code, Some(0), "{:#?}", done.stderr);
    let text = done.stdout.join("\n");
    for expected in [
        "task:      worker:1",
        "chief:     no (the chief is chief:0 at 127.0.0.1:2222)",
        "rank:      2 (world size 3)",
        "model_dir: /model/iris",
        "strategy:  ParameterServer (1 ps)",
    ] {
        assert!(text.contains(expected), "{expected:?} not in:\n{text}");
    }
    let peer = |name: &str| {
        done.stdout
            .iter()
            .find(|l| l.trim_start().starts_with(name))
            .unwrap_or_else(|| panic!("no {name} in:\n{text}"))
            .clone()
    };
    assert!(peer("chief:0").ends_with("resolves to 127.0.0.1"), "{text}");
    let unresolvable = peer("worker:1 (this task)");
    assert!(
        unresolvable.contains("iris-worker-1.invalid:2222  does not resolve: "),
        "{text}"
    );
}

#[test]
fn explain_names_a_torchrun_rank_without_waiting_for_the_rendezvous() {
    // No rank 0 listens at the rendezvous address: explain reads the variables only.
    let env = [
        ("RANK", "1"),
        ("WORLD_SIZE", "2"),
        ("LOCAL_RANK", "1"),
        ("MASTER_ADDR", "127.0.0.1"),
        ("MASTER_PORT", "29999"),
    ];
    let started = Instant::now();
    let done = Launcher::start_with(&["explain"], None, &env).finish();
    assert_eq!(done.code, Some(0), "{:#?}", done.stderr);
    assert!(started.elapsed() < Duration::from_secs(10));
    let text = done.stdout.join("\n");
    for expected in [
        "source:    torchrun (RANK=1, WORLD_SIZE=2)",
        "task:      worker:0",
        "rank:      1 (world size 2, local rank 1)",
        "strategy:  MultiWorkerMirrored (2 replicas)",
        "peers:     from the rendezvous at 127.0.0.1:29999 (MASTER_ADDR, MASTER_PORT), which \
         resolves to 127.0.0.1",
    ] {
        assert!(text.contains(expected), "{expected:?} not in:\n{text}");
    }
    // TF_CONFIG wins, and says so.
    let tf_config = r#"{"cluster": {"chief": ["127.0.0.1:2222"]}, "task": {"type": "chief"}}"#;
    let done = Launcher::start_with(&["explain"], Some(tf_config), &env).finish();
    assert_eq!(done.code, Some(0), "{:#?}", done.stderr);
    assert_eq!(
        done.stdout[0],
        "source:    TF_CONFIG (it wins over RANK and WORLD_SIZE, also set by torchrun)"
    );
}

#[test]
fn explain_rejects_an_unusable_launcher_variable_in_one_line() {
    let env = [("RANK", "one"), ("WORLD_SIZE", "2")];
    let done = Launcher::start_with(&["explain"], None, &env).finish();
    assert_eq!(done.code, Some(1));
    assert_eq!(
        done.stderr,
        ["estimator-launch: error: RANK = 'one' is not a non-negative integer (torchrun)"]
    );
}

#[test]
fn explain_rejects_a_malformed_tf_config_in_one_line() {
    let done = Launcher::start(&["explain"], Some(r#"{"cluster": {"worker": ["a:1"]}}"#)).finish();
    assert_eq!(done.code, Some(1));
    assert_eq!(
        done.stderr,
        ["estimator-launch: error: TF_CONFIG.task is missing (a cluster needs task.type and task.index)"]
    );
}

#[test]
fn usage_errors_exit_2_with_one_line() {
    for (args, expected) in [
        (&["--workers", "2"][..], "no command to run"),
        (
            &["--workers", "two", "--", "true"],
            "invalid value 'two' for '--workers <N>'",
        ),
        (
            &["--no-chief", "--workers", "0", "--", "true"],
            "--no-chief needs --workers 1",
        ),
        (&["sh", "-c", "true"], "unexpected argument 'sh'"),
    ] {
        let done = run(args);
        assert_eq!(done.code, Some(2), "{args:?}: {:#?}", done.stderr);
        assert_eq!(done.stderr.len(), 1, "{args:?}: {:#?}", done.stderr);
        assert!(
            done.stderr[0].starts_with("estimator-launch: error: ")
                && done.stderr[0].contains(expected),
            "{args:?}: {}",
            done.stderr[0]
        );
        assert!(done.stdout.is_empty());
    }
}

#[test]
fn a_command_that_does_not_exist_is_named_and_exits_127() {
    let done = run(&["--", "no-such-command-for-estimator-launch"]);
    assert_eq!(done.code, Some(127));
    assert_eq!(
        done.stderr,
        ["estimator-launch: error: cannot run 'no-such-command-for-estimator-launch': command not found"]
    );
}
