//! Training tasks' sessions against in-memory ps tasks, the chief's initialisation caught
//! half-way: every wait is the ps holding a pull, which the tests see go out (no sleeps).

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::super::client::{
    InMemoryParameterServers, InMemoryPs, Intercepted, PsClient, PsClientConfig,
};
use super::super::messages::{Init, Pull};
use super::super::variable_optimizer::VariableOptimizer;
use super::*;

const STARTUP: Duration = Duration::from_secs(20);

fn config() -> PsClientConfig {
    PsClientConfig {
        peer_timeout: Duration::from_secs(20),
        startup_timeout: STARTUP,
        token: None,
        tls: None,
    }
}

fn names() -> Vec<String> {
    vec!["chief:0".to_string(), "worker:0".to_string()]
}

fn sgd() -> OptimizerSpec {
    OptimizerSpec::sgd(0.1)
}

fn start(num_ps: usize) -> InMemoryPs {
    InMemoryPs::start(num_ps, || VariableOptimizer::new(&sgd()), "chief:0")
}

/// Training task `rank`'s session, through `client`.
fn session(client: impl PsClient + 'static, rank: usize, mode: PsMode) -> PsSession {
    PsSession::new(PsReplica::new(Box::new(client), rank, names()), mode)
}

/// A client that reports every pull it sends on the returned channel.
fn reporting(inner: InMemoryParameterServers) -> (Intercepted, mpsc::Receiver<Pull>) {
    let (sent, pulls) = mpsc::channel();
    let sent = Mutex::new(sent);
    let client = Intercepted::new(inner).on_pull(move |pull| {
        let _ = sent.lock().unwrap().send(pull[0]);
    });
    (client, pulls)
}

/// The chief initialises `w` (3 values) and `b` at `global_step`.
fn initialise(chief: &mut PsSession, global_step: u64) {
    let spec = sgd();
    let initial = Initial {
        values: Shaped::from([
            ("w".to_string(), (vec![3], vec![1.0, 2.0, 3.0])),
            ("b".to_string(), (vec![1], vec![global_step as f32])),
        ]),
        optimizer: &spec,
        global_step,
        last_step: 100,
        recorded: None,
    };
    let empty = VariableOptimizer::new(&spec).state_bytes().unwrap();
    chief.initialise(initial, |_| Ok(empty.clone())).unwrap();
}

fn values(answer: PullAnswer) -> (u64, BTreeMap<String, Vec<f32>>) {
    match answer {
        PullAnswer::Values { step, values } => (step, values),
        other => panic!("a pull gave {other:?}"),
    }
}

/// A gradient of all ones for every value pulled.
fn ones(values: &BTreeMap<String, Vec<f32>>) -> Vec<(String, Vec<f32>)> {
    values
        .iter()
        .map(|(path, v)| (path.clone(), vec![1.0; v.len()]))
        .collect()
}

#[test]
fn a_worker_started_before_the_chief_is_answered_by_its_initialisation() {
    let ps = start(2);
    let (client, pulls) = reporting(ps.client(1, config()));
    let mut worker = session(client, 1, PsMode::default());
    let mut chief = session(ps.client(0, config()), 0, PsMode::default());
    std::thread::scope(|scope| {
        let pulling = scope.spawn(|| worker.pull());
        let first = pulls.recv().unwrap();
        assert_eq!(first.wait, STARTUP, "the ps holds it for the chief");
        initialise(&mut chief, 4);
        let (step, values) = values(pulling.join().unwrap().unwrap());
        assert_eq!(
            (step, &values["w"], &values["b"]),
            (4, &vec![1.0, 2.0, 3.0], &vec![4.0])
        );
    });
    assert!(
        pulls.try_recv().is_err(),
        "one pull, held by the ps: no polling"
    );
}

/// The chief's client, which initialises ps:1 at once but ps:0 (given its previous
/// initialisation again meanwhile) only when the test says, through `held_back`: a chief
/// caught between the two ps tasks.
fn halfway_init(
    inner: InMemoryParameterServers,
    held_back: Arc<Mutex<Option<Vec<Init>>>>,
) -> Intercepted {
    let previous: Mutex<Option<Vec<Init>>> = Mutex::new(None);
    Intercepted::new(inner).on_init(move |inner, inits| {
        let mut previous = previous.lock().unwrap();
        match previous.replace(inits.clone()) {
            None => inner.init(inits),
            Some(mut before) => {
                before[1] = inits[1].clone();
                *held_back.lock().unwrap() = Some(inits);
                inner.init(before)
            }
        }
    })
}

#[test]
fn a_pull_between_two_initialisations_waits_on_the_ps_for_the_newest_so_steps_stay_equal() {
    let ps = start(2);
    let held_back = Arc::new(Mutex::new(None));
    let mut chief = session(
        halfway_init(ps.client(0, config()), Arc::clone(&held_back)),
        0,
        PsMode::default(),
    );
    let (client, pulls) = reporting(ps.client(1, config()));
    let mut worker = session(client, 1, PsMode::default());
    initialise(&mut chief, 0);
    assert_eq!(values(worker.pull().unwrap()).0, 0);
    pulls.recv().unwrap();
    // The chief puts step 5 back on the ps tasks; only ps:1 has it so far.
    initialise(&mut chief, 5);
    let completer = ps.client(0, config());
    let pulled = std::thread::scope(|scope| {
        let pulling = scope.spawn(|| worker.pull());
        assert_eq!(pulls.recv().unwrap().min_generation, None);
        let again = pulls.recv().unwrap();
        assert!(
            again.min_generation.is_some(),
            "the second pull asks for the newest"
        );
        let inits = held_back
            .lock()
            .unwrap()
            .take()
            .expect("an initialisation held back");
        completer.init(inits).unwrap();
        pulling.join().unwrap().unwrap()
    });
    let (step, pulled) = values(pulled);
    assert_eq!((step, &pulled["b"]), (5, &vec![5.0]));
    let answer = worker.push(Vec::new(), ones(&pulled)).unwrap();
    assert_eq!(answer, PushAnswer::Applied(6));
    assert!(pulls.try_recv().is_err(), "two pulls: no polling");
    let steps: Vec<u64> = ps
        .client(0, config())
        .snapshot()
        .unwrap()
        .iter()
        .map(|s| s.step)
        .collect();
    assert_eq!(steps, [6, 6]);
}

#[test]
fn a_synchronous_push_that_times_out_names_the_task_that_pushed_nothing() {
    let ps = start(1);
    let quick = PsClientConfig {
        peer_timeout: Duration::from_millis(300),
        ..config()
    };
    let mut chief = session(ps.client(0, quick), 0, PsMode::sync());
    initialise(&mut chief, 0);
    let (_, pulled) = values(chief.pull().unwrap());
    // worker:0 never pushes: the chief's synchronous update cannot gather its gradients.
    let err = chief.push(Vec::new(), ones(&pulled)).unwrap_err();
    assert_eq!(err.exit_code(), crate::error::RETRYABLE_EXIT_CODE);
    let message = err.to_string();
    assert!(
        message.starts_with("lost worker:0: step 0 gathered 1 of the 2"),
        "{message}"
    );
}

#[test]
fn only_a_chief_finds_the_ps_tasks_short_of_the_last_step_and_only_a_worker_leaves() {
    let ps = start(2);
    let mut chief = session(ps.client(0, config()), 0, PsMode::default());
    let worker = session(ps.client(1, config()), 1, PsMode::default());
    initialise(&mut chief, 3);
    assert_eq!(chief.short_of(3).unwrap(), None);
    assert_eq!(chief.short_of(5).unwrap(), Some(3));
    assert_eq!(worker.short_of(5).unwrap(), None, "a worker asks nobody");
    let gathered = chief.gather().unwrap();
    assert_eq!(gathered.step, 3);
    assert_eq!(gathered.placement.num_ps, 2);
    assert_eq!(gathered.values.len(), 2);
    worker.leave();
    chief.end().unwrap();
}

#[test]
fn a_chief_ending_short_of_the_last_step_fails_the_job_unless_it_stopped_by_itself() {
    let ps = start(1);
    let mut chief = session(ps.client(0, config()), 0, PsMode::default());
    let mut worker = session(ps.client(1, config()), 1, PsMode::default());
    chief.set_last_step(5);
    worker.set_last_step(5);
    initialise(&mut chief, 3);
    let short = chief.end_at(3).unwrap_err();
    assert!(matches!(
        short,
        Error::EndedShort {
            global_step: 3,
            last_step: 5,
            ..
        }
    ));
    assert_eq!(
        short.to_string(),
        "training ended at global_step 3, short of its last step 5: the ps tasks stopped \
         taking updates before it"
    );
    worker.end_at(3).expect("a worker just leaves");
    chief.stop_early();
    chief
        .end_at(3)
        .expect("a chief that stopped by itself ends the job");
}
