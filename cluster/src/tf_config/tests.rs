use super::*;

fn distributed(text: &str) -> (ClusterSpec, Task) {
    match ClusterConfig::parse(text).unwrap() {
        ClusterConfig::Distributed { cluster, task } => (cluster, task),
        ClusterConfig::Local => panic!("expected a cluster"),
    }
}

#[test]
fn no_cluster_is_a_local_chief() {
    for text in [
        "",
        "{}",
        r#"{"cluster": {}}"#,
        r#"{"task": {"type": "worker", "index": 0}}"#,
        r#"{"cluster": {}, "task": {"type": "worker", "index": "0"}}"#,
        r#"{"cluster": null, "task": {}}"#,
        r#"{"task": null}"#,
    ] {
        let config = ClusterConfig::parse(text).unwrap();
        assert_eq!(config, ClusterConfig::Local);
        assert!(config.is_chief());
    }
}

#[test]
fn a_task_other_than_worker_0_without_a_cluster_is_refused_naming_it() {
    let cases = [
        (
            r#"{"cluster": {}, "task": {"type": "ps", "index": 0}}"#,
            "TF_CONFIG.task.type = 'ps' but .cluster names no task",
        ),
        (
            r#"{"task": {"type": "chief"}}"#,
            "TF_CONFIG.task.type = 'chief' but .cluster names no task",
        ),
        (
            r#"{"cluster": null, "task": {"type": "evaluator", "index": 0}}"#,
            "TF_CONFIG.task.type = 'evaluator' but",
        ),
        (
            r#"{"cluster": {}, "task": {"type": "worker", "index": 1}}"#,
            "TF_CONFIG.task.index = 1 but .cluster names no task: without a cluster a \
             process is worker 0",
        ),
        (
            r#"{"cluster": {}, "task": {"type": "worker", "index": 99999999999999999999}}"#,
            "TF_CONFIG.task.index = 1e+20 is not a non-negative integer",
        ),
        (
            r#"{"task": {"type": "worker", "index": "99999999999999999999"}}"#,
            "TF_CONFIG.task.index = '99999999999999999999' is not",
        ),
        (
            r#"{"task": {"type": "boss"}}"#,
            "TF_CONFIG.task.type = 'boss' is not one of",
        ),
        (
            r#"{"cluster": {}, "task": 5}"#,
            "TF_CONFIG.task = 5 is not an object",
        ),
    ];
    for (text, expected) in cases {
        let message = ClusterConfig::parse(text).unwrap_err().to_string();
        assert!(message.starts_with(expected), "{text}: {message}");
    }
}

#[test]
fn kubeflow_tfjob_config_with_environment_and_master_alias() {
    let (cluster, task) = distributed(
        r#"{"cluster": {"master": ["job-master-0:2222"], "worker": ["w0:2222", "w1:2222"],
            "ps": ["ps0:2222"]}, "task": {"type": "worker", "index": 1},
            "environment": "cloud"}"#,
    );
    assert_eq!(cluster.chief.as_deref(), Some("job-master-0:2222"));
    assert_eq!(
        task,
        Task {
            kind: TaskType::Worker,
            index: 1
        }
    );
    assert_eq!(cluster.global_rank(task), Some(2));
    assert_eq!(
        cluster.global_rank(Task {
            kind: TaskType::Ps,
            index: 0
        }),
        None
    );
}

#[test]
fn worker_zero_is_chief_without_a_chief() {
    let text = r#"{"cluster": {"worker": ["a:1", "b:2"]}, "task": {"type": "worker", "index": 0}}"#;
    assert!(ClusterConfig::parse(text).unwrap().is_chief());
    let (cluster, _) = distributed(text);
    assert_eq!(
        cluster.chief_task(),
        Task {
            kind: TaskType::Worker,
            index: 0
        }
    );
}

#[test]
fn sparse_form_is_accepted_when_complete_and_rejected_when_not() {
    let (cluster, _) = distributed(
        r#"{"cluster": {"worker": {"1": "b:2", "0": "a:1"}}, "task": {"type": "worker", "index": 1}}"#,
    );
    assert_eq!(cluster.workers, ["a:1", "b:2"]);
    let err = ClusterConfig::parse(
        r#"{"cluster": {"worker": {"1": "b:2"}}, "task": {"type": "worker", "index": 1}}"#,
    )
    .unwrap_err();
    assert!(err.to_string().contains("lacks index 0"), "{err}");
}

#[test]
fn distinct_sockets_on_one_port_are_accepted() {
    let (cluster, _) = distributed(
        r#"{"cluster": {"chief": ["127.0.0.1:5000"], "worker": ["127.0.0.2:5000",
            "[::1]:5000", "w-1.svc:5000", "w-2.svc:5000"]},
            "task": {"type": "worker", "index": 1}}"#,
    );
    // The addresses are kept as written: they are what peers dial.
    assert_eq!(cluster.workers[1], "[::1]:5000");
    let (cluster, _) =
        distributed(r#"{"cluster": {"worker": ["a:08080"]}, "task": {"type": "worker"}}"#);
    assert_eq!(cluster.workers, ["a:08080"]);
}

#[test]
fn an_evaluator_may_stand_outside_the_cluster() {
    let (_, task) = distributed(
        r#"{"cluster": {"chief": ["c:1"]}, "task": {"type": "evaluator", "index": 0}}"#,
    );
    assert_eq!(task.kind, TaskType::Evaluator);
}

#[test]
fn errors_name_the_field() {
    let cases = [
        (
            r#"{"cluster": {"worker": ["a:1", "b:2"]}, "task": {"type": "worker", "index": 3}}"#,
            "TF_CONFIG.task.index = 3 but cluster.worker has 2 entries",
        ),
        (
            r#"{"cluster": {"chief": ["a:1", "b:2"]}, "task": {"type": "chief"}}"#,
            "TF_CONFIG.cluster.chief has 2 entries",
        ),
        (
            r#"{"cluster": {"chief": ["a:1"], "master": ["b:1"]}, "task": {"type": "chief"}}"#,
            "both",
        ),
        (
            r#"{"cluster": {"worker": ["a:1"]}}"#,
            "TF_CONFIG.task is missing",
        ),
        (
            r#"{"cluster": {"worker": ["a:1"]}, "task": {"type": "boss"}}"#,
            "TF_CONFIG.task.type = 'boss'",
        ),
        (
            r#"{"cluster": {"worker": ["nohostport"]}, "task": {"type": "worker"}}"#,
            "TF_CONFIG.cluster.worker[0] = 'nohostport'",
        ),
        (
            r#"{"cluster": {"gpu": ["a:1"]}, "task": {"type": "worker"}}"#,
            "cluster.gpu",
        ),
        ("{not json", "not valid JSON"),
        (
            r#"{"cluster": {"ps": ["a:1"]}, "task": {"type": "ps"}}"#,
            "neither a chief nor a worker",
        ),
        (
            r#"{"cluster": {"chief": ["127.0.0.1:0"]}, "task": {"type": "chief"}}"#,
            "TF_CONFIG.cluster.chief[0] = '127.0.0.1:0': port 0 is no address",
        ),
        (
            r#"{"cluster": {"chief": ["h:1"], "worker": ["h:2", "h:1"]},
                "task": {"type": "worker"}}"#,
            "TF_CONFIG.cluster gives chief:0 and worker:1 the same address 'h:1'",
        ),
        (
            r#"{"cluster": {"worker": ["h:1"], "ps": ["h:2", "h:2"]},
                "task": {"type": "worker"}}"#,
            "gives ps:0 and ps:1 the same address 'h:2'",
        ),
        (
            r#"{"cluster": {"chief": ["127.0.0.1:5000"], "worker": ["127.0.0.1:05000"]},
                "task": {"type": "worker"}}"#,
            "TF_CONFIG.cluster gives chief:0 '127.0.0.1:5000' and worker:0 \
             '127.0.0.1:05000': the same address (port 5000 of one host)",
        ),
        (
            r#"{"cluster": {"chief": ["127.0.0.1:5000"], "worker": ["LocalHost:5000"]},
                "task": {"type": "chief"}}"#,
            "gives chief:0 '127.0.0.1:5000' and worker:0 'LocalHost:5000'",
        ),
        (
            r#"{"cluster": {"worker": ["[::1]:7", "w:1"], "evaluator": ["localhost:7"]},
                "task": {"type": "worker"}}"#,
            "gives worker:0 '[::1]:7' and evaluator:0 'localhost:7'",
        ),
        (
            r#"{"cluster": {"worker": ["Host-A:2222", "host-a.:2222"]},
                "task": {"type": "worker"}}"#,
            "gives worker:0 'Host-A:2222' and worker:1 'host-a.:2222'",
        ),
        (
            r#"{"cluster": {"chief": ["h:00"]}, "task": {"type": "chief"}}"#,
            "TF_CONFIG.cluster.chief[0] = 'h:00': port 0 is no address",
        ),
        (
            r#"{"cluster": {"chief": ["h:+80"]}, "task": {"type": "chief"}}"#,
            "TF_CONFIG.cluster.chief[0] = 'h:+80' is not \"host:port\"",
        ),
    ];
    for (text, expected) in cases {
        let message = ClusterConfig::parse(text).unwrap_err().to_string();
        assert!(message.contains(expected), "{text}: {message}");
    }
}
