//! How many CPU threads per operation train fastest, when the count is automatic.
//!
//! Splitting a matrix product between threads pays only above some size, and where that
//! lies depends on the CPU: on a fast core the products of an MNIST-sized network take about
//! as long as waking a second thread for their halves. Flex splits by size alone, so a
//! short trial decides, as MKL's dynamic threading does per call: training steps of a
//! scratch copy of the model and optimizer on the first batch, timed in alternate rounds on
//! one thread and on all of them, before training starts. A product gives the same bits on
//! any number of threads, so the choice changes only the speed; each step is seeded, so the
//! trial draws nothing the run would. It costs tens of milliseconds on small models, under a
//! second on any.

use std::time::{Duration, Instant};

use datasets::Dataset;
use rayon::ThreadPool;

use super::local_step::local_step;
use super::peeked::Peeked;
use super::train_state::{fresh_state, TrainState};
use crate::device::{cpu_pool, CpuTrainBackend};
use crate::error::Result;
use crate::estimator::Estimator;
use crate::seed::step_seed;

/// Untimed steps on each pool first, or as many as fit in `WARM_UP_TIME` (at least one): a
/// fresh pool's first steps allocate, fault pages in and fill caches (with 1024-unit layers
/// on two threads, for about six steps).
const WARM_UP: usize = 8;
const WARM_UP_TIME: Duration = Duration::from_millis(150);
/// What one timed round aims to last: long enough to outlast a timer tick and a wake-up.
const ROUND: Duration = Duration::from_millis(4);
/// Rounds per thread count, alternating which goes first.
const ROUNDS: usize = 6;
/// A step this slow on many threads keeps them without a trial.
const SLOW: Duration = Duration::from_millis(50);
/// After three rounds each, a trial stops once it has taken this long (slow steps).
const BUDGET: Duration = Duration::from_millis(400);
/// How much faster than one thread all of them must be to be chosen: a thread left free
/// runs the input pipeline, which the trial leaves out, and the trial's rounds underrate
/// what one thread gains (on MNIST's width about 1.09 in the trial, 1.11–1.16 in training).
const MANY_WINS: f64 = 0.95;

/// A scratch training state (model and optimizer) and the batch it trains on.
type Parts<E> = (
    TrainState<CpuTrainBackend, <E as Estimator>::Model<CpuTrainBackend>>,
    <E as Estimator>::DeviceBatch<CpuTrainBackend>,
);

/// A pool for training on the CPU with at most `most` threads per operation: one thread
/// when a trial on `dataset`'s next batch (left in place) finds it faster, else `most`.
pub(super) fn fastest_pool<E, D>(
    estimator: &E,
    dataset: &mut Peeked<D>,
    most: usize,
) -> Result<ThreadPool>
where
    E: Estimator,
    D: Dataset<Item = E::Batch>,
{
    let many = cpu_pool(most)?;
    if most == 1 {
        return Ok(many);
    }
    let one = cpu_pool(1)?;
    let Some(Ok(batch)) = dataset.peek() else {
        return Ok(many);
    };
    let timings = match trial(estimator, batch, &one, &many) {
        Ok(Some(timings)) => timings,
        // Slow steps: their products are far above the size where a split stops paying.
        Ok(None) => return Ok(many),
        // A failing batch or model fails the same way in training, which reports it.
        Err(_) => return Ok(many),
    };
    let ratio = timings.many_to_one();
    let chosen = if ratio < MANY_WINS { many } else { one };
    tracing::info!(
        "a trial training step took {ratio:.2} times as long on {most} CPU threads as on 1: \
         training on {}",
        chosen.current_num_threads()
    );
    Ok(chosen)
}

/// The time of a step, per round, on each pool.
struct Timings {
    on_one: Vec<Duration>,
    on_many: Vec<Duration>,
}

impl Timings {
    /// A step's time on many threads to its time on one, each the fastest round's: another
    /// process taking a core only ever adds time (the machine is shared, and a round of a
    /// slow model is a single step).
    fn many_to_one(&self) -> f64 {
        let fastest = |times: &[Duration]| times.iter().min().map(Duration::as_secs_f64);
        match (fastest(&self.on_many), fastest(&self.on_one)) {
            (Some(many), Some(one)) => many / one.max(1e-9),
            _ => 1.0,
        }
    }
}

/// Rounds of steps on each pool; `None` when a step on many threads takes `SLOW` or more.
fn trial<E: Estimator>(
    estimator: &E,
    batch: &E::Batch,
    one: &ThreadPool,
    many: &ThreadPool,
) -> Result<Option<Timings>> {
    let device = Default::default();
    let state = fresh_state::<CpuTrainBackend, E>(estimator, device, 1)?;
    let batch = estimator.to_device::<CpuTrainBackend>(batch, &device)?;
    let mut parts = (state, batch);
    let step;
    (step, parts) = warm_up(estimator, many, parts);
    let step = step?;
    if step >= SLOW {
        return Ok(None);
    }
    let steps = (ROUND.as_secs_f64() / step.as_secs_f64().max(1e-6)).clamp(1.0, 8.0) as usize;
    let step;
    (step, parts) = warm_up(estimator, one, parts);
    step?;
    let started = Instant::now();
    let mut timings = Timings {
        on_one: Vec::new(),
        on_many: Vec::new(),
    };
    for round in 0..ROUNDS {
        let one_first = round % 2 == 1;
        for on_one in [one_first, !one_first] {
            let (pool, times) = match on_one {
                true => (one, &mut timings.on_one),
                false => (many, &mut timings.on_many),
            };
            let step;
            (step, parts) = timed(estimator, pool, (1, steps), parts);
            times.push(step?);
        }
        if round >= 2 && started.elapsed() > BUDGET {
            break;
        }
    }
    Ok(Some(timings))
}

/// Untimed steps on `pool` (`WARM_UP`, or fewer when slow); the last one's time.
fn warm_up<E: Estimator>(
    estimator: &E,
    pool: &ThreadPool,
    mut parts: Parts<E>,
) -> (Result<Duration>, Parts<E>) {
    let started = Instant::now();
    let mut step = Ok(Duration::ZERO);
    for _ in 0..WARM_UP {
        (step, parts) = timed(estimator, pool, (0, 1), parts);
        if step.is_err() || started.elapsed() > WARM_UP_TIME {
            break;
        }
    }
    (step, parts)
}

/// The mean time of `steps` training steps of the scratch state in `parts` on `pool`, after
/// `untimed` more (a step after a switch of pools pays for it, as training never does), and
/// the parts back (models and batches are `Send` but not `Sync`: each pool takes them in
/// turn).
fn timed<E: Estimator>(
    estimator: &E,
    pool: &ThreadPool,
    (untimed, steps): (usize, usize),
    parts: Parts<E>,
) -> (Result<Duration>, Parts<E>) {
    let seed = step_seed(estimator.run_config().tf_random_seed, 0);
    pool.install(move || {
        let (mut state, batch) = parts;
        let mut started = Instant::now();
        let mut done = Ok(());
        for step in 0..untimed + steps {
            if step == untimed {
                started = Instant::now();
            }
            match local_step::<CpuTrainBackend, E>(estimator, &state, &batch, seed) {
                Ok(step) => state = state.apply(step.grads),
                Err(e) => {
                    done = Err(e);
                    break;
                }
            }
        }
        let elapsed = started.elapsed() / steps as u32;
        (done.map(|()| elapsed), (state, batch))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fastest_round_of_each_decides() {
        let ms = Duration::from_millis;
        let timings = Timings {
            on_one: vec![ms(10), ms(20), ms(16), ms(30)],
            on_many: vec![ms(5), ms(30), ms(12), ms(27)],
        };
        assert_eq!(timings.many_to_one(), 0.5);
        let none = Timings {
            on_one: Vec::new(),
            on_many: vec![ms(1)],
        };
        assert_eq!(none.many_to_one(), 1.0);
    }
}
