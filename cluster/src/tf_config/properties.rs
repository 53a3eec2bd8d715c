//! Properties of TF_CONFIG parsing: any text is a value or an error, never a panic; a
//! cluster written as TF_CONFIG JSON parses back to itself.

use proptest::prelude::*;
use serde_json::json;

use super::*;
use crate::TaskType;

proptest! {
    #[test]
    fn any_text_parses_or_is_an_error(text in ".{0,300}") {
        let _ = ClusterConfig::parse(&text);
    }

    #[test]
    fn any_json_shaped_text_parses_or_is_an_error(
        keys in prop::collection::vec(
            prop::sample::select(vec!["chief", "master", "worker", "ps", "evaluator", "gpu"]),
            0..6,
        ),
        addresses in prop::collection::vec("[a-z0-9.:]{0,12}", 0..6),
        kind in "[a-z]{0,9}",
        index in any::<i64>(),
    ) {
        let cluster: serde_json::Map<String, serde_json::Value> = keys
            .iter()
            .map(|k| (k.to_string(), json!(addresses)))
            .collect();
        let text = json!({"cluster": cluster, "task": {"type": kind, "index": index}});
        let _ = ClusterConfig::parse(&text.to_string());
    }

    #[test]
    fn a_written_cluster_parses_back_to_itself(
        chief in any::<bool>(),
        workers in 0usize..5,
        ps in 0usize..4,
        evaluator in any::<bool>(),
        pick in any::<prop::sample::Index>(),
    ) {
        // A cluster needs a chief or a worker.
        let workers = if chief { workers } else { workers.max(1) };
        let mut port = 2000u16;
        let mut next = || { port += 1; format!("host-{port}.svc:{port}") };
        let spec = ClusterSpec {
            chief: chief.then(&mut next),
            workers: (0..workers).map(|_| next()).collect(),
            ps: (0..ps).map(|_| next()).collect(),
            evaluator: evaluator.then(&mut next),
        };
        let mut tasks: Vec<Task> = spec.training_tasks();
        tasks.extend((0..ps).map(|index| Task { kind: TaskType::Ps, index }));
        if evaluator {
            tasks.push(Task { kind: TaskType::Evaluator, index: 0 });
        }
        let task = tasks[pick.index(tasks.len())];
        let mut cluster = serde_json::Map::new();
        for (key, addresses) in [
            ("chief", spec.chief.iter().cloned().collect::<Vec<_>>()),
            ("worker", spec.workers.clone()),
            ("ps", spec.ps.clone()),
            ("evaluator", spec.evaluator.iter().cloned().collect()),
        ] {
            if !addresses.is_empty() {
                cluster.insert(key.into(), json!(addresses));
            }
        }
        let text = json!({"cluster": cluster, "task": {"type": task.kind.as_str(), "index": task.index}});
        prop_assert_eq!(
            ClusterConfig::parse(&text.to_string()).unwrap(),
            ClusterConfig::Distributed { cluster: spec, task }
        );
    }
}
