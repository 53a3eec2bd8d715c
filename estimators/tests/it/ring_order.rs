//! A cluster whose tasks are listed with machines interleaved: the ring visits each
//! machine's tasks one after another, and training ends with every replica identical.

use std::process::Command;

use estimator::cluster::{HIERARCHICAL_ALLREDUCE, HOST_ID, RING_BY_HOST};

use crate::cli::iris;
use crate::cluster::{dnn_classifier, estimator_launch, run_launched};

/// A chief and 3 workers launched on this machine, told they are on two machines in turn
/// (chief:0 and worker:1 on "a", worker:0 and worker:2 on "b"), train Iris for 60 steps
/// with a network of `hidden` units, the ring grouped by machine or not, and
/// `hierarchical` or flat: the launcher's stderr.
fn four_tasks_on_two_machines(by_host: bool, hidden: &str, hierarchical: bool) -> String {
    let dir = tempfile::tempdir().unwrap();
    let model_dir = dir.path().join("model");
    let script = format!(
        r#"case "$TF_CONFIG" in
             *'"type":"chief"'*|*'"type":"worker","index":1'*) export {HOST_ID}=a ;;
             *) export {HOST_ID}=b ;;
           esac
           exec "$DNN" train --train "$TRAIN" --label-column label --hidden-units "$HIDDEN" \
             --batch-size 16 --max-steps 60 --intra-op-threads 1 --model-dir "$MODEL_DIR""#
    );
    // Exit 0 also means every worker's final weights had the chief's CRC.
    let (_, stderr) = run_launched(
        Command::new(estimator_launch())
            .args(["--workers", "3", "--grace-secs", "60", "--", "sh", "-c"])
            .arg(&script)
            .env("DNN", dnn_classifier())
            .env("TRAIN", iris("iris_train.csv"))
            .env("MODEL_DIR", &model_dir)
            .env("HIDDEN", hidden)
            .env(RING_BY_HOST, if by_host { "1" } else { "0" })
            .env(HIERARCHICAL_ALLREDUCE, if hierarchical { "1" } else { "0" }),
        dir.path(),
    );
    stderr
}

#[test]
fn the_ring_visits_the_tasks_of_each_machine_one_after_another() {
    let grouped = four_tasks_on_two_machines(true, "16", false);
    assert!(
        grouped.contains(
            "the all-reduce's ring visits 2 machines one after another: \
             chief:0 → worker:1 → worker:0 → worker:2"
        ),
        "{grouped}"
    );
    let in_rank_order = four_tasks_on_two_machines(false, "16", false);
    assert!(
        !in_rank_order.contains("the all-reduce's ring visits"),
        "{in_rank_order}"
    );
}

#[test]
fn large_gradients_reduce_hierarchically_and_every_replica_ends_identical() {
    // 4-1024-512-3: the 1024 x 512 weight (2 MiB) is above halving and doubling's bound, so
    // it is summed within each machine, across them in halves, and spread again.
    let stderr = four_tasks_on_two_machines(true, "1024,512", true);
    assert!(
        stderr.contains("hierarchical all-reduce over 2 machines of 2 tasks"),
        "{stderr}"
    );
    assert!(
        stderr
            .contains("chief:0 exited 0, worker:0 exited 0, worker:1 exited 0, worker:2 exited 0"),
        "{stderr}"
    );
}
