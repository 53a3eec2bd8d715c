//! The launcher's last line: how every task ended, and whose code the launcher exits with —
//! one place to read a job's outcome, however many lines its tasks wrote before.

use std::time::Duration;

use estimator_cluster::Task;

/// How a task ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Ending {
    /// It exited by itself (or a signal from elsewhere killed it).
    Exited {
        /// The signal that killed it.
        signal: Option<i32>,
    },
    /// The launcher killed it, still running the whole grace after the chief exited.
    KilledAfterGrace(Duration),
    /// The launcher ended it once every other task had exited, these having named it lost.
    EndedAsLost(Vec<Task>),
    /// It could not be reaped after the launcher's kill.
    NotReaped,
}

/// One task's outcome.
#[derive(Debug, Clone)]
pub(super) struct Outcome {
    pub(super) task: Task,
    pub(super) code: i32,
    pub(super) restarts: u32,
    pub(super) ending: Ending,
}

/// "chief:0 exited 0, worker:0 exited 128 (restarted 1 time), ps:0 killed after the 90 s
/// grace (137); exit code 0 (chief:0's)": every task in start order, then the launcher's
/// code and `whose` it is.
pub(super) fn line(outcomes: &[Outcome], code: i32, whose: &str) -> String {
    let tasks: Vec<String> = outcomes.iter().map(describe).collect();
    format!("{}; exit code {code} ({whose})", tasks.join(", "))
}

fn describe(outcome: &Outcome) -> String {
    let Outcome {
        task,
        code,
        restarts,
        ending,
    } = outcome;
    let (what, mut details) = match ending {
        Ending::Exited { signal: None } => (format!("exited {code}"), Vec::new()),
        Ending::Exited {
            signal: Some(signal),
        } => (format!("killed by signal {signal}"), vec![code.to_string()]),
        Ending::KilledAfterGrace(grace) => (
            format!("killed after the {} s grace", grace.as_secs()),
            vec![code.to_string()],
        ),
        Ending::EndedAsLost(accusers) => {
            let names: Vec<String> = accusers.iter().map(Task::to_string).collect();
            (
                format!("ended after {} named it lost", names.join(" and ")),
                vec![code.to_string()],
            )
        }
        Ending::NotReaped => (
            "not reaped after the launcher's kill".to_string(),
            Vec::new(),
        ),
    };
    if *restarts > 0 {
        let times = if *restarts == 1 { "time" } else { "times" };
        details.push(format!("restarted {restarts} {times}"));
    }
    if details.is_empty() {
        format!("{task} {what}")
    } else {
        format!("{task} {what} ({})", details.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use estimator_cluster::TaskType;

    fn task(kind: TaskType, index: usize) -> Task {
        Task { kind, index }
    }

    #[test]
    fn every_task_its_code_how_it_ended_and_its_restarts() {
        let chief = task(TaskType::Chief, 0);
        let outcomes = [
            Outcome {
                task: chief,
                code: 128,
                restarts: 0,
                ending: Ending::Exited { signal: None },
            },
            Outcome {
                task: task(TaskType::Worker, 0),
                code: 128,
                restarts: 1,
                ending: Ending::Exited { signal: None },
            },
            Outcome {
                task: task(TaskType::Worker, 1),
                code: 137,
                restarts: 0,
                ending: Ending::EndedAsLost(vec![chief, task(TaskType::Worker, 0)]),
            },
            Outcome {
                task: task(TaskType::Worker, 2),
                code: 137,
                restarts: 2,
                ending: Ending::Exited { signal: Some(9) },
            },
            Outcome {
                task: task(TaskType::Ps, 0),
                code: 137,
                restarts: 0,
                ending: Ending::KilledAfterGrace(Duration::from_secs(90)),
            },
            Outcome {
                task: task(TaskType::Evaluator, 0),
                code: 1,
                restarts: 0,
                ending: Ending::NotReaped,
            },
        ];
        assert_eq!(
            line(&outcomes, 128, "chief:0's"),
            "chief:0 exited 128, worker:0 exited 128 (restarted 1 time), worker:1 ended after \
             chief:0 and worker:0 named it lost (137), worker:2 killed by signal 9 (137; \
             restarted 2 times), ps:0 killed after the 90 s grace (137), evaluator:0 not \
             reaped after the launcher's kill; exit code 128 (chief:0's)"
        );
    }
}
