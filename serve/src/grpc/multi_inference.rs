//! MultiInference as TF Serving's: Classify and Regress tasks of one model over one input,
//! the input's predictions made once (as the tasks' output tensors where the examples are
//! well formed) and each task's result read from them (`inference_tasks.rs`).

use tonic::Status;

use super::examples;
use super::inference_tasks::{model_name, planned};
use super::prediction_service::{answered, which};
use super::proto::tensorflow::serving::{
    InferenceResult, MultiInferenceRequest, MultiInferenceResponse,
};
use crate::error::ServeError;
use crate::servable::Outputs;
use crate::server::Server;

impl Server {
    /// The answer to a MultiInference call: the servable the first task's model spec selects
    /// (every task names the same model, as TF Serving requires), and per task, in order, its
    /// classification or regression of the request's examples.
    pub(super) async fn answer_multi_inference(
        &self,
        request: MultiInferenceRequest,
    ) -> Result<MultiInferenceResponse, Status> {
        let first = request.tasks.first().and_then(|t| t.model_spec.clone());
        let first = first.unwrap_or_default();
        self.counted(&first, "multi_inference", async {
            let model = model_name(&request.tasks)?;
            let (version, servable) = self.servable(model, &which(&first)?)?;
            let method_check = self.loaders.method_check;
            let tasks = planned(&request.tasks, servable.signature(), method_check)?;
            let (list, context) = examples::list(request.input)?;
            // Every task's outputs, once.
            let mut keys: Vec<String> = Vec::new();
            for key in tasks.iter().flat_map(|(_, method, _)| method.keys()) {
                if !keys.iter().any(|k| k == key) {
                    keys.push(key.to_string());
                }
            }
            let answer = (self.examples_answer(&servable, &list, &context, keys.clone())).await?;
            let answers = tasks
                .into_iter()
                .map(|(spec, method, named)| {
                    let result = match &answer {
                        Outputs::Tensors(tensors) => method.result_of(&keys, tensors)?,
                        Outputs::Json(predictions) => method.result(predictions)?,
                    };
                    Ok(InferenceResult {
                        model_spec: Some(answered(spec, version, &named)),
                        result: Some(result),
                    })
                })
                .collect::<Result<_, ServeError>>()?;
            Ok(MultiInferenceResponse { results: answers })
        })
        .await
    }
}
