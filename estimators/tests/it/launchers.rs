//! `dnn-classifier` started by launchers other than TF_CONFIG's writers: ranks with
//! torchrun's variables, and `mpirun` and `torchrun` themselves when they are installed,
//! meet at rank 0 and train to the same final weights as the same cluster under
//! `estimator-launch`.

use std::fs::File;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use estimator::checkpoint::CheckpointManager;

use crate::cli::iris;
use crate::cluster::{dnn_classifier, free_ports, wait_until, LIMIT};
use crate::ps_cluster::{train_args, Launched};

const MAX_STEPS: &str = "300";

/// The variables of launchers a test's processes must not inherit.
const LAUNCHER_VARIABLES: [&str; 12] = [
    "TF_CONFIG",
    "RANK",
    "WORLD_SIZE",
    "LOCAL_RANK",
    "MASTER_ADDR",
    "MASTER_PORT",
    "OMPI_COMM_WORLD_RANK",
    "OMPI_COMM_WORLD_SIZE",
    "PMI_RANK",
    "PMI_SIZE",
    "SLURM_PROCID",
    "ESTIMATOR_RENDEZVOUS_PORT",
];

/// Processes ended when the test ends, however it ends: SIGTERM first, so that `mpirun`
/// takes its ranks down with it, then SIGKILL.
struct Processes(Vec<Child>);

impl Drop for Processes {
    fn drop(&mut self) {
        for child in &mut self.0 {
            if child.try_wait().ok().flatten().is_none() {
                let _ = Command::new("kill")
                    .args(["-TERM", &child.id().to_string()])
                    .status();
                if wait_until(child, Instant::now() + Duration::from_secs(5)).is_none() {
                    let _ = child.kill();
                }
            }
            let _ = child.wait();
        }
    }
}

fn train(model_dir: &Path) -> Vec<String> {
    let train = iris("iris_train.csv");
    train_args(model_dir.to_str().unwrap(), MAX_STEPS, &["--train", &train])
        .into_iter()
        .map(String::from)
        .collect()
}

/// The weights of the chief's last checkpoint in `model_dir`, which must be at MAX_STEPS.
fn final_weights(model_dir: &Path, log: &str) -> Vec<u8> {
    let manager = CheckpointManager::new(model_dir, None);
    assert_eq!(
        manager.latest_step().unwrap(),
        Some(MAX_STEPS.parse().unwrap()),
        "{log}"
    );
    let last = manager.list().unwrap().into_iter().next_back().unwrap();
    let checkpoint = manager.load(&last).unwrap();
    checkpoint.section("model").unwrap().to_vec()
}

/// The final weights of a chief and one worker under `estimator-launch`, trained once for
/// every test of this file.
fn reference_weights() -> &'static [u8] {
    static REFERENCE: OnceLock<Vec<u8>> = OnceLock::new();
    REFERENCE.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let model_dir = dir.path().join("model");
        let args = train(&model_dir);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut cluster = Launched::start(dir.path(), &["--workers", "1"], &args);
        let code = cluster.wait(LIMIT);
        let stderr = cluster.stderr();
        assert_eq!(code, 0, "{stderr}");
        final_weights(&model_dir, &stderr)
    })
}

/// `dnn-classifier` with none of the launcher variables of the test's own environment.
fn bare(program: &str) -> Command {
    let mut cmd = Command::new(program);
    for name in LAUNCHER_VARIABLES {
        cmd.env_remove(name);
    }
    cmd.stdin(Stdio::null());
    cmd
}

#[test]
fn torchrun_ranks_train_to_the_weights_of_a_launched_cluster() {
    let reference = reference_weights();
    let dir = tempfile::tempdir().unwrap();
    let model_dir = dir.path().join("model");
    let [port] = free_ports::<1>();
    let mut ranks = Processes(Vec::new());
    // Rank 1 first: it waits for rank 0 to listen.
    for rank in [1, 0] {
        let log = |stream: &str| File::create(dir.path().join(format!("{stream}{rank}"))).unwrap();
        let child = bare(dnn_classifier())
            .args(train(&model_dir))
            .envs([
                ("RANK", rank.to_string()),
                ("LOCAL_RANK", rank.to_string()),
                ("WORLD_SIZE", "2".to_string()),
                ("LOCAL_WORLD_SIZE", "2".to_string()),
                ("MASTER_ADDR", "127.0.0.1".to_string()),
                ("MASTER_PORT", port.to_string()),
                // torchrun's own default for several processes on one host.
                ("OMP_NUM_THREADS", "1".to_string()),
            ])
            .stdout(log("stdout"))
            .stderr(log("stderr"))
            .spawn()
            .unwrap();
        ranks.0.push(child);
    }
    let deadline = Instant::now() + LIMIT;
    let codes: Vec<Option<i32>> = ranks
        .0
        .iter_mut()
        .map(|child| wait_until(child, deadline).and_then(|status| status.code()))
        .collect();
    let logs = (0..2)
        .map(|rank| {
            let stderr = std::fs::read_to_string(dir.path().join(format!("stderr{rank}")));
            format!("rank {rank}:\n{}", stderr.unwrap_or_default())
        })
        .collect::<Vec<_>>()
        .join("\n");
    assert_eq!(codes, [Some(0), Some(0)], "{logs}");
    assert!(
        final_weights(&model_dir, &logs) == reference,
        "final weights differ from estimator-launch --workers 1's\n{logs}"
    );
}

#[test]
fn mpirun_ranks_train_to_the_weights_of_a_launched_cluster() {
    let version = Command::new("mpirun").arg("--version").output();
    let Some(version) = version.ok().filter(|output| output.status.success()) else {
        println!("skipped: mpirun is not installed (Debian's openmpi-bin provides it)");
        return;
    };
    let open_mpi = String::from_utf8_lossy(&version.stdout).contains("Open MPI");
    let dir = tempfile::tempdir().unwrap();
    let model_dir = dir.path().join("model");
    let [port] = free_ports::<1>();
    let mut mpirun = bare("mpirun");
    if open_mpi {
        mpirun.args(["--allow-run-as-root", "--oversubscribe"]);
    }
    // No MASTER_ADDR: every rank is on this host, so rank 0 is met here, at MASTER_PORT
    // (which mpirun's ranks inherit).
    mpirun
        .args(["-np", "2", dnn_classifier()])
        .args(train(&model_dir))
        .env("MASTER_PORT", port.to_string())
        .env("OMP_NUM_THREADS", "1");
    trains_like_a_launched_cluster(mpirun, dir.path(), &model_dir);
}

#[test]
fn torchrun_itself_starts_ranks_that_train_to_the_weights_of_a_launched_cluster() {
    // PyTorch's launcher, from PyPI's `torch`: its elastic agent holds a store on
    // MASTER_PORT, so the ranks meet one port above it.
    let help = Command::new("torchrun").arg("--help").output();
    if !help.is_ok_and(|output| output.status.success()) {
        println!("skipped: torchrun is not installed (PyPI's torch provides it)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let model_dir = dir.path().join("model");
    let [port] = free_ports::<1>();
    let mut torchrun = bare("torchrun");
    torchrun
        .args(["--no-python", "--nnodes", "1", "--nproc-per-node", "2"])
        .args([
            "--master-addr",
            "127.0.0.1",
            "--master-port",
            &port.to_string(),
        ])
        .arg(dnn_classifier())
        .args(train(&model_dir));
    trains_like_a_launched_cluster(torchrun, dir.path(), &model_dir);
}

/// Runs `launcher` (which starts both ranks) to its end within the test's limit, and checks
/// that it exits 0 with the final weights of `estimator-launch --workers 1`.
fn trains_like_a_launched_cluster(mut launcher: Command, dir: &Path, model_dir: &Path) {
    let reference = reference_weights();
    launcher
        .stdout(File::create(dir.join("stdout")).unwrap())
        .stderr(File::create(dir.join("stderr")).unwrap());
    let mut processes = Processes(vec![launcher.spawn().unwrap()]);
    let status = wait_until(&mut processes.0[0], Instant::now() + LIMIT);
    let logs = std::fs::read_to_string(dir.join("stderr")).unwrap_or_default();
    assert_eq!(status.and_then(|s| s.code()), Some(0), "{logs}");
    assert!(
        final_weights(model_dir, &logs) == reference,
        "final weights differ from estimator-launch --workers 1's\n{logs}"
    );
}

#[test]
fn a_rank_whose_rank_0_never_comes_exits_1_naming_the_rendezvous() {
    let dir = tempfile::tempdir().unwrap();
    let [port] = free_ports::<1>();
    let started = Instant::now();
    let output = bare(dnn_classifier())
        .args(train(&dir.path().join("model")))
        .envs([
            ("RANK", "1".to_string()),
            ("WORLD_SIZE", "2".to_string()),
            ("MASTER_ADDR", "127.0.0.1".to_string()),
            ("MASTER_PORT", port.to_string()),
            ("ESTIMATOR_RENDEZVOUS_TIMEOUT_SECS", "2".to_string()),
        ])
        .output()
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    let error = crate::cluster::error_line(&stderr, "");
    assert!(
        error.contains(&format!(
            "rank 1 cannot reach rank 0's rendezvous at 127.0.0.1:{port} (MASTER_ADDR, \
             MASTER_PORT) within 2 s"
        )),
        "{error}"
    );
}

#[test]
fn unusable_launcher_variables_exit_1_naming_the_variable() {
    let dir = tempfile::tempdir().unwrap();
    for (i, (vars, expected)) in [
        (
            &[("RANK", "0"), ("WORLD_SIZE", "two")][..],
            "WORLD_SIZE = 'two' is not",
        ),
        (
            &[("OMPI_COMM_WORLD_RANK", "2"), ("OMPI_COMM_WORLD_SIZE", "2")][..],
            "OMPI_COMM_WORLD_RANK = 2 but OMPI_COMM_WORLD_SIZE = 2",
        ),
        (
            &[
                ("PMI_RANK", "1"),
                ("PMI_SIZE", "4"),
                ("MPI_LOCALNRANKS", "2"),
            ][..],
            "MASTER_ADDR is not set",
        ),
        (
            &[
                ("RANK", "1"),
                ("WORLD_SIZE", "2"),
                ("MASTER_ADDR", "h"),
                ("MASTER_PORT", "0"),
            ][..],
            "MASTER_PORT = '0' is not a port",
        ),
        (
            // Read before any peer is dialled: nothing listens at these addresses.
            &[
                (
                    "TF_CONFIG",
                    r#"{"cluster":{"worker":["127.0.0.1:1","127.0.0.1:2"]},"task":{"type":"worker","index":0}}"#,
                ),
                ("ESTIMATOR_BUSY_POLL_US", "soon"),
            ][..],
            "ESTIMATOR_BUSY_POLL_US=\"soon\" is not a number of microseconds",
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let output = bare(dnn_classifier())
            .args(train(&dir.path().join(format!("m{i}"))))
            .envs(vars.iter().copied())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{vars:?}: {stderr}");
        let error = crate::cluster::error_line(&stderr, "");
        assert!(error.contains(expected), "{vars:?}: {error}");
        assert_eq!(
            stderr.lines().filter(|l| l.contains("error:")).count(),
            1,
            "{stderr}"
        );
    }
}
