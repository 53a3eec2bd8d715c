//! A Predict call's outputs: its tensors laid out by the servable when it can, else its
//! instances predicted and their JSON values stacked.

use std::collections::HashMap;
use std::sync::Arc;

use estimator::export::{InputTensors, ServingTensor};

use super::prediction_service::INLINE_INSTANCES;
use super::proto::tensorflow::TensorProto;
use super::tensors::{self, Decoded};
use crate::error::ServeError;
use crate::servable::{predict_async, Servable};
use crate::server::Server;
use crate::signatures::NamedSignature;
use crate::stacked::stacked;

impl Server {
    /// Outputs `names` of `named` for a Predict call's `inputs` (`count` instances, let in
    /// by the instance budget before they are decoded), each a tensor under its name.
    pub(super) async fn predicted_tensors(
        &self,
        servable: &Arc<dyn Servable>,
        named: &NamedSignature,
        count: usize,
        inputs: &HashMap<String, TensorProto>,
        names: Vec<String>,
    ) -> Result<Vec<(String, ServingTensor)>, ServeError> {
        let _room = self.budget.admit_count(count).await?;
        let inline = count <= INLINE_INSTANCES;
        let decoded = match tensors::decoded(servable.signature(), inputs)? {
            Decoded::Tensors(inputs) => {
                let keys = (names.iter()).map(|name| named.key_of(name).to_string());
                match tensors_async(servable, inputs, keys.collect(), inline).await? {
                    Ok(tensors) => return Ok(names.into_iter().zip(tensors).collect()),
                    Err(inputs) => Decoded::Tensors(inputs),
                }
            }
            examples => examples,
        };
        let predictions = predict_async(Arc::clone(servable), decoded.instances(), inline).await?;
        let predictions = named.outputs_of(predictions);
        (names.into_iter())
            .map(|name| stacked(&name, &predictions).map(|tensor| (name, tensor)))
            .collect()
    }
}

/// Output `keys` of `servable`'s predictions for `inputs`, on this worker when `inline`, else
/// on the blocking pool; `Ok(Err(inputs))` when the servable makes no tensors.
async fn tensors_async(
    servable: &Arc<dyn Servable>,
    inputs: InputTensors,
    keys: Vec<String>,
    inline: bool,
) -> Result<Result<Vec<ServingTensor>, InputTensors>, ServeError> {
    let predict = move |servable: &dyn Servable| match servable.predict_tensors(&inputs, &keys) {
        Some(answer) => answer.map(Ok),
        None => Ok(Err(inputs)),
    };
    if inline {
        return predict(&**servable);
    }
    let servable = Arc::clone(servable);
    tokio::task::spawn_blocking(move || predict(&*servable))
        .await
        .map_err(|e| ServeError::Internal(format!("the model failed: {e}")))?
}
