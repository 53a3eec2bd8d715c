//! [`Servable`]: one loaded model version, as the server calls it, and [`Served`]: an
//! export of a [`ServableEstimator`] loaded as one.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use burn::tensor::backend::Backend;
use estimator::export::{check_instances, Instance, ServableEstimator, ServingTensor};
use estimator::{CpuBackend, Predictor, Signature};
use serde_json::{Map, Value};

use crate::error::ServeError;
use crate::inputs::Inputs;
use crate::prediction_threads::PredictionThreads;

/// One prediction per instance (an object of output key → value), or why not.
pub type Predictions = Result<Vec<Map<String, Value>>, ServeError>;

/// Output keys as tensors or every prediction as JSON, or why not.
pub type OutputsAnswer = Result<Outputs, ServeError>;

/// A call's predictions: the outputs asked for as tensors, or each prediction as JSON.
pub enum Outputs {
    /// One tensor per output key asked for, in order.
    Tensors(Vec<ServingTensor>),
    /// Every prediction, an object of output key → value.
    Json(Vec<Map<String, Value>>),
}

/// A loaded model version.
pub trait Servable: Send + Sync {
    /// The export's serving signature.
    fn signature(&self) -> &Signature;

    /// One prediction (an object of output key → value) per instance.
    fn predict(&self, instances: &[Instance]) -> Predictions;

    /// Output `keys` of the predictions for `inputs`: as tensors where the servable
    /// stacks every one of them without a JSON value per element, else each prediction as
    /// JSON (by default, [`Servable::predict`]'s of the instances).
    fn predict_outputs(&self, inputs: &Inputs, _keys: &[String]) -> OutputsAnswer {
        self.predict(&inputs.instances()).map(Outputs::Json)
    }

    /// For a servable whose predictions another thread makes (batching): the answer of
    /// [`Servable::predict_outputs`], to await. `Err` gives the inputs and keys back.
    fn predict_outputs_later(
        &self,
        inputs: Inputs,
        keys: Vec<String>,
    ) -> Result<tokio::sync::oneshot::Receiver<OutputsAnswer>, (Inputs, Vec<String>)> {
        Err((inputs, keys))
    }
}

/// Output `keys` of `servable`'s predictions for `inputs` ([`Servable::predict_outputs`]),
/// off the async threads unless `inline`: from the batching thread when it batches (this
/// worker serves other requests meanwhile), else on the blocking pool, or on this worker
/// for a few instances, which take less time than a hand-off to the pool and back.
pub(crate) async fn outputs_async(
    servable: Arc<dyn Servable>,
    inputs: Inputs,
    keys: Vec<String>,
    inline: bool,
) -> OutputsAnswer {
    match servable.predict_outputs_later(inputs, keys) {
        Ok(answer) => answer
            .await
            .map_err(|_| ServeError::Internal("the batching thread has stopped".into()))?,
        Err((inputs, keys)) if inline => servable.predict_outputs(&inputs, &keys),
        Err((inputs, keys)) => {
            tokio::task::spawn_blocking(move || servable.predict_outputs(&inputs, &keys))
                .await
                .map_err(|e| ServeError::Internal(format!("the model failed: {e}")))?
        }
    }
}

/// An export loaded with [`Predictor`] on a device of backend `B`, once per core (up to 4)
/// unless [`PredictionThreads`] say otherwise: a model runs one call at a time, so
/// concurrent requests take the copies in turn.
pub struct Served<E: ServableEstimator, B: Backend = CpuBackend> {
    predictors: Vec<Mutex<Predictor<E, B>>>,
    next: AtomicUsize,
    signature: Signature,
    threads: PredictionThreads,
}

impl<E: ServableEstimator, B: Backend> Served<E, B> {
    /// Loads the export in `dir` onto `device`.
    pub fn load_on(dir: &Path, device: B::Device) -> estimator::Result<Self> {
        Self::load_with_threads(dir, device, PredictionThreads::default())
    }

    /// Loads the export in `dir` onto `device`, its predictions on `threads`.
    pub fn load_with_threads(
        dir: &Path,
        device: B::Device,
        threads: PredictionThreads,
    ) -> estimator::Result<Self> {
        let predictors = (0..threads.copies())
            .map(|_| Predictor::<E, B>::load_on(dir, device.clone()).map(Mutex::new))
            .collect::<estimator::Result<Vec<_>>>()?;
        let signature = predictors[0]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .signature()
            .clone();
        Ok(Self {
            predictors,
            next: AtomicUsize::new(0),
            signature,
            threads,
        })
    }

    /// A free copy, or (all busy) the next one in turn, waited for.
    fn predictor(&self) -> MutexGuard<'_, Predictor<E, B>> {
        for p in &self.predictors {
            if let Ok(guard) = p.try_lock() {
                return guard;
            }
        }
        let turn = self.next.fetch_add(1, Ordering::Relaxed) % self.predictors.len();
        self.predictors[turn]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }
}

impl<E: ServableEstimator, B: Backend> Servable for Served<E, B> {
    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn predict(&self, instances: &[Instance]) -> Predictions {
        self.predicted_for(instances, |estimator, predictions| {
            Ok(json_rows(estimator, &predictions))
        })
    }

    fn predict_outputs(&self, inputs: &Inputs, keys: &[String]) -> OutputsAnswer {
        let answer = |estimator: &E, predictions: Vec<E::Prediction>| {
            // An answer is written element by element as a tensor's shape says: one
            // that is not a batch of the predictions is not taken.
            let fits = |t: &ServingTensor| t.is_batch_of(predictions.len());
            let tensors = (keys.iter())
                .map(|key| estimator.prediction_tensor(&predictions, key).filter(fits))
                .collect::<Option<Vec<_>>>();
            Ok(match tensors {
                Some(tensors) => Outputs::Tensors(tensors),
                None => Outputs::Json(json_rows(estimator, &predictions)),
            })
        };
        match inputs {
            Inputs::Instances(instances) => self.predicted_for(instances, answer),
            Inputs::Tensors(tensors) => self.predicted(
                |estimator| estimator.batch_from_tensors(&self.signature, tensors),
                tensors.batch(),
                answer,
            ),
        }
    }
}

impl<E: ServableEstimator, B: Backend> Served<E, B> {
    /// The predictions for `instances`, checked and laid out by the estimator, as `answer`
    /// gives them.
    fn predicted_for<T>(
        &self,
        instances: &[Instance],
        answer: impl FnOnce(&E, Vec<E::Prediction>) -> Result<T, ServeError>,
    ) -> Result<T, ServeError> {
        // Before the estimator sees them: no implementation can answer an instance with an
        // unknown input, or one of the wrong type or shape, from what was left.
        check_instances(&self.signature, instances)?;
        self.predicted(
            |estimator| estimator.batch_from_instances(&self.signature, instances),
            instances.len(),
            answer,
        )
    }

    /// The predictions for the batch `batch` lays out, of `count` rows, as `answer` gives
    /// them.
    fn predicted<T>(
        &self,
        batch: impl FnOnce(&E) -> estimator::Result<E::Batch>,
        count: usize,
        answer: impl FnOnce(&E, Vec<E::Prediction>) -> Result<T, ServeError>,
    ) -> Result<T, ServeError> {
        let mut predictor = self.predictor();
        let batch = batch(predictor.estimator())?;
        // Held exclusively, the copy can run on a pool thread (a model is `Send`, not `Sync`).
        // It is locked here, outside the pool: a pool thread waiting inside a split
        // operation runs other queued work, and a request locking its copy there could wait
        // for one held lower on the same thread's stack, for ever.
        let model: &mut Predictor<E, B> = &mut predictor;
        let predictions = self
            .threads
            .run(move || model.predict(&batch))
            .map_err(|e| ServeError::Internal(e.to_string()))?;
        // The answers are matched to the rows by position, and split by count between the
        // requests of a batch.
        if predictions.len() != count {
            return Err(ServeError::Internal(format!(
                "the model made {} predictions of a batch of {count} instances",
                predictions.len(),
            )));
        }
        answer(predictor.estimator(), predictions)
    }
}

/// Each prediction as an object of output key → value.
fn json_rows<E: ServableEstimator>(
    estimator: &E,
    predictions: &[E::Prediction],
) -> Vec<Map<String, Value>> {
    (predictions.iter())
        .map(|p| match estimator.prediction_json(p) {
            Value::Object(map) => map,
            other => Map::from_iter([("output".to_string(), other)]),
        })
        .collect()
}
