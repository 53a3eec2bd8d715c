//! What every task is given: its TF_CONFIG, its output relayed with its name, its GPUs,
//! its cores and heap settings.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use crate::harness::{run, started_pids, Launcher};

#[test]
fn every_task_gets_its_tf_config_and_its_output_comes_back_prefixed() {
    let done = run(&["--workers", "2", "--", "sh", "-c", "echo \"$TF_CONFIG\""]);
    assert_eq!(done.code, Some(0), "{:#?}", done.stderr);
    assert_eq!(done.stdout.len(), 3, "{:#?}", done.stdout);
    let mut prefixes = HashSet::new();
    let mut clusters = Vec::new();
    for line in &done.stdout {
        let (prefix, json) = line.split_once("] ").expect("a prefixed line");
        let prefix = prefix.strip_prefix('[').unwrap();
        let config: Value = serde_json::from_str(json).unwrap();
        let task = &config["task"];
        assert_eq!(
            format!("{}:{}", task["type"].as_str().unwrap(), task["index"]),
            prefix
        );
        assert_eq!(config["environment"], "cloud");
        prefixes.insert(prefix.to_string());
        clusters.push(config["cluster"].clone());
    }
    assert_eq!(
        prefixes,
        HashSet::from(["chief:0", "worker:0", "worker:1"].map(String::from))
    );
    assert!(clusters.iter().all(|c| *c == clusters[0]), "{clusters:?}");
    let cluster = clusters[0].as_object().unwrap();
    assert_eq!(
        cluster.keys().collect::<HashSet<_>>(),
        HashSet::from([&"chief".to_string(), &"worker".to_string()])
    );
    assert_eq!(cluster["chief"].as_array().unwrap().len(), 1);
    assert_eq!(cluster["worker"].as_array().unwrap().len(), 2);
    let ports: HashSet<&str> = ["chief", "worker"]
        .iter()
        .flat_map(|role| cluster[*role].as_array().unwrap())
        .map(|a| a.as_str().unwrap().strip_prefix("127.0.0.1:").unwrap())
        .collect();
    assert_eq!(ports.len(), 3, "{cluster:?}");
    assert_eq!(started_pids(&done.stderr).len(), 3, "{:#?}", done.stderr);
}

/// Each task's stdout lines by task name (`chief:0`), without the prefix.
fn lines_by_task(stdout: &[String]) -> HashMap<String, Vec<String>> {
    let mut by_task: HashMap<String, Vec<String>> = HashMap::new();
    for line in stdout {
        let (prefix, rest) = line.split_once("] ").expect("a prefixed line");
        let task = prefix.strip_prefix('[').unwrap().to_string();
        by_task.entry(task).or_default().push(rest.to_string());
    }
    by_task
}

#[test]
fn gpus_are_shared_out_one_per_task_and_ps_tasks_get_none() {
    let done = run(&[
        "--workers",
        "3",
        "--ps",
        "1",
        "--evaluator",
        "--gpus",
        "2",
        "--",
        "sh",
        "-c",
        "echo \"gpu=${CUDA_VISIBLE_DEVICES-unset}\"",
    ]);
    assert_eq!(done.code, Some(0), "{:#?}", done.stderr);
    let seen = lines_by_task(&done.stdout);
    // Round-robin in rank order (chief, workers), then the evaluator: slot 4 of 2 GPUs.
    for (task, gpu) in [
        ("chief:0", "gpu=0"),
        ("worker:0", "gpu=1"),
        ("worker:1", "gpu=0"),
        ("worker:2", "gpu=1"),
        ("evaluator:0", "gpu=0"),
        ("ps:0", "gpu="),
    ] {
        assert_eq!(seen.get(task), Some(&vec![gpu.to_string()]), "{seen:#?}");
    }
    let stderr = done.stderr.join("\n");
    assert!(
        stderr.contains("with GPU 1 (CUDA_VISIBLE_DEVICES=1)"),
        "{stderr}"
    );
    assert!(
        stderr.contains("with no GPU (CUDA_VISIBLE_DEVICES=\"\")"),
        "{stderr}"
    );
    assert_eq!(started_pids(&done.stderr).len(), 6, "{stderr}");
}

#[test]
fn gpus_come_from_the_launchers_own_visible_devices_and_explain_names_them() {
    let launcher = env!("CARGO_BIN_EXE_estimator-launch");
    let done = Launcher::start_with(
        &["--workers", "1", "--gpus", "2", "--", launcher, "explain"],
        None,
        &[("CUDA_VISIBLE_DEVICES", "4,6,7")],
    )
    .finish();
    assert_eq!(done.code, Some(0), "{:#?}", done.stderr);
    let seen = lines_by_task(&done.stdout);
    let gpus = |task: &str| {
        seen[task]
            .iter()
            .find(|l| l.starts_with("gpus:"))
            .cloned()
            .unwrap_or_else(|| panic!("no gpus line for {task}: {seen:#?}"))
    };
    assert_eq!(
        gpus("chief:0"),
        "gpus:      cuda is GPU 4 (CUDA_VISIBLE_DEVICES=4)"
    );
    assert_eq!(
        gpus("worker:0"),
        "gpus:      cuda is GPU 6 (CUDA_VISIBLE_DEVICES=6)"
    );

    // Without --gpus every task sees what the launcher sees.
    let done = Launcher::start_with(
        &["--", "sh", "-c", "echo \"$CUDA_VISIBLE_DEVICES\""],
        None,
        &[("CUDA_VISIBLE_DEVICES", "4,6")],
    )
    .finish();
    let mut stdout = done.stdout;
    stdout.sort();
    assert_eq!(stdout, ["[chief:0] 4,6", "[worker:0] 4,6"]);

    let done = Launcher::start_with(
        &["--gpus", "3", "--", "true"],
        None,
        &[("CUDA_VISIBLE_DEVICES", "4,6")],
    )
    .finish();
    assert_eq!(done.code, Some(2));
    assert_eq!(
        done.stderr,
        ["estimator-launch: error: --gpus 3: CUDA_VISIBLE_DEVICES=\"4,6\" lists only 2 GPUs"]
    );
}

#[test]
fn the_cores_and_heap_settings_go_to_the_tasks_unless_the_launcher_is_given_its_own() {
    let echo = "echo \"threads=${OMP_NUM_THREADS-unset}\"";
    let done = run(&["--workers", "3", "--ps", "1", "--", "sh", "-c", echo]);
    assert_eq!(done.code, Some(0), "{:#?}", done.stderr);
    let cores = std::thread::available_parallelism().unwrap().get();
    let share = format!("threads={}", (cores / 4).max(1));
    let seen = lines_by_task(&done.stdout);
    for task in ["chief:0", "worker:0", "worker:2", "ps:0"] {
        assert_eq!(seen.get(task), Some(&vec![share.clone()]), "{seen:#?}");
    }
    let stderr = done.stderr.join("\n");
    assert!(
        stderr.contains(&format!(
            "CPU thread(s) per operation (OMP_NUM_THREADS={})",
            (cores / 4).max(1)
        )),
        "{stderr}"
    );

    // Given one, the launcher leaves it to the tasks, and `explain` reads it as they do.
    let launcher = env!("CARGO_BIN_EXE_estimator-launch");
    let args = ["--workers", "1", "--", launcher, "explain"];
    let done = Launcher::start_with(&args, None, &[("OMP_NUM_THREADS", "6")]).finish();
    assert_eq!(done.code, Some(0), "{:#?}", done.stderr);
    let seen = lines_by_task(&done.stdout);
    for task in ["chief:0", "worker:0"] {
        let threads = seen[task].iter().find(|l| l.starts_with("threads:"));
        assert_eq!(
            threads.map(String::as_str),
            Some("threads:   up to 6 per operation (OMP_NUM_THREADS=6)"),
            "{seen:#?}"
        );
    }
}
