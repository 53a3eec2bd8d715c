use super::*;

fn fake(address: &str) -> std::io::Result<IpAddr> {
    match address.split_once(".invalid") {
        Some(_) => Err(std::io::Error::other("Name or service not known")),
        None => Ok("10.0.0.7".parse().unwrap()),
    }
}

fn parse(text: &str) -> ClusterConfig {
    ClusterConfig::parse(text).unwrap()
}

#[test]
fn a_kubeflow_worker_with_ps_and_an_unresolvable_peer() {
    let config = parse(
        r#"{"cluster": {"chief": ["job-chief-0:2222"], "worker": ["job-worker-0:2222",
                "job-worker-1.invalid:2222"], "ps": ["job-ps-0:2222"]},
                "task": {"type": "worker", "index": 1}, "environment": "cloud"}"#,
    );
    let seen = Seen {
        cuda_visible_devices: Some("1"),
        omp_num_threads: Some("2"),
        cores: 16,
    };
    let text = render(&config, Some(Path::new("/model/iris")), seen, fake);
    let expected = "\
task:      worker:1
chief:     no (the chief is chief:0 at job-chief-0:2222)
rank:      2 (world size 3)
model_dir: /model/iris
strategy:  ParameterServer (1 ps)
gpus:      cuda is GPU 1 (CUDA_VISIBLE_DEVICES=1)
threads:   up to 2 per operation (OMP_NUM_THREADS=2)
peers:
  chief:0               job-chief-0:2222           resolves to 10.0.0.7
  worker:0              job-worker-0:2222          resolves to 10.0.0.7
  worker:1 (this task)  job-worker-1.invalid:2222  does not resolve: Name or service not known
  ps:0                  job-ps-0:2222              resolves to 10.0.0.7
";
    assert_eq!(text, expected);
}

#[test]
fn chief_ps_and_evaluator_outside_the_cluster() {
    let chief = render(
        &parse(r#"{"cluster": {"worker": ["a:1", "b:2"]}, "task": {"type": "worker"}}"#),
        None,
        Seen::default(),
        fake,
    );
    assert!(
        chief.contains("chief:     yes (worker:0 at a:1)"),
        "{chief}"
    );
    assert!(chief.contains("rank:      0 (world size 2)"), "{chief}");
    assert!(chief.contains("model_dir: (not given)"), "{chief}");
    assert!(
        chief.contains("MultiWorkerMirrored (2 replicas)"),
        "{chief}"
    );

    let ps = render(
        &parse(r#"{"cluster": {"chief": ["c:1"], "ps": ["p:2"]}, "task": {"type": "ps"}}"#),
        None,
        Seen::default(),
        fake,
    );
    assert!(ps.contains("rank:      none: ps tasks"), "{ps}");

    let evaluator = render(
        &parse(r#"{"cluster": {"chief": ["c:1"]}, "task": {"type": "evaluator"}}"#),
        None,
        Seen::default(),
        fake,
    );
    assert!(
        evaluator.contains("evaluator:0 (this task)  -    not listed in the cluster"),
        "{evaluator}"
    );
}

#[test]
fn local_is_one_device() {
    let seen = Seen {
        cores: 4,
        ..Seen::default()
    };
    let text = render(&ClusterConfig::Local, None, seen, fake);
    assert!(text.starts_with("task:      local"), "{text}");
    assert!(text.contains("strategy:  OneDevice (local)"), "{text}");
    assert!(text.contains("peers:     none"), "{text}");
    assert!(
        text.contains("gpus:      all (CUDA_VISIBLE_DEVICES not set)"),
        "{text}"
    );
    assert!(
        text.contains("threads:   up to 4 per operation (the cores; OMP_NUM_THREADS not set)"),
        "{text}"
    );
}

#[test]
fn a_torchrun_rank_is_described_before_the_rendezvous() {
    let rank = estimator_cluster::launched_rank(|name| {
        let value = match name {
            "RANK" => "2",
            "WORLD_SIZE" => "3",
            "LOCAL_RANK" => "0",
            "MASTER_ADDR" => "job-master-0",
            "MASTER_PORT" => "23456",
            _ => return None,
        };
        Some(value.to_string())
    })
    .unwrap()
    .unwrap();
    let seen = Seen {
        cores: 4,
        ..Seen::default()
    };
    let text = render_source(&ClusterSource::Launched(rank), None, seen, fake);
    let expected = "\
source:    torchrun (RANK=2, WORLD_SIZE=3)
task:      worker:1
chief:     no (the chief is rank 0, on job-master-0)
rank:      2 (world size 3, local rank 0)
model_dir: (not given)
strategy:  MultiWorkerMirrored (3 replicas)
gpus:      all (CUDA_VISIBLE_DEVICES not set): cuda:N is GPU N
threads:   up to 4 per operation (the cores; OMP_NUM_THREADS not set)
peers:     from the rendezvous at job-master-0:23456 (MASTER_ADDR, MASTER_PORT), which resolves to 10.0.0.7
";
    assert_eq!(text, expected);
}

#[test]
fn tf_config_says_it_wins_and_local_says_why() {
    let config = parse(r#"{"cluster": {"chief": ["c:1"]}, "task": {"type": "chief"}}"#);
    let source = ClusterSource::TfConfig {
        config,
        over: Some(estimator_cluster::Launcher::OpenMpi),
    };
    let text = render_source(&source, None, Seen::default(), fake);
    assert!(
        text.starts_with(
            "source:    TF_CONFIG (it wins over OMPI_COMM_WORLD_RANK and \
                 OMPI_COMM_WORLD_SIZE, also set by Open MPI's mpirun)\ntask:      chief:0\n"
        ),
        "{text}"
    );
    let local = render_source(&ClusterSource::Local, None, Seen::default(), fake);
    assert!(
        local.starts_with("source:    none (no TF_CONFIG, and no rank from torchrun")
            && local.contains("\ntask:      local"),
        "{local}"
    );
}

#[test]
fn the_system_resolver_reads_ip_literals_and_names_a_failure() {
    let ip: IpAddr = "127.0.0.1".parse().unwrap();
    assert_eq!(resolve("127.0.0.1:80").unwrap(), ip);
    assert!(resolve("no-port").is_err());
}
