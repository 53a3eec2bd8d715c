//! A call's predictions from its tensors, laid out by the servable when it can, else from
//! its instances as JSON: what Predict, Classify, Regress and MultiInference answer from.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use estimator::export::ServingTensor;

use super::examples;
use super::proto::tensorflow::TensorProto;
use super::tensors;
use crate::error::ServeError;
use crate::inputs::Inputs;
use crate::servable::{outputs_async, Outputs, Servable};
use crate::server::Server;
use crate::signatures::NamedSignature;
use crate::stacked::stacked;

/// Requests of up to this many instances are answered on the async worker that read them.
const INLINE_INSTANCES: usize = 64;

impl Server {
    /// The predictions for the `count` instances `decode` reads (let in by the instance
    /// budget before they are decoded): output `keys` as tensors where they are tensors and
    /// the servable makes them, else each prediction as JSON.
    pub(super) async fn answer(
        &self,
        servable: &Arc<dyn Servable>,
        count: usize,
        decode: impl FnOnce() -> Result<Inputs, ServeError>,
        keys: Vec<String>,
    ) -> Result<Outputs, ServeError> {
        let _room = self.budget.admit_count(count).await?;
        let inline = count <= INLINE_INSTANCES;
        outputs_async(Arc::clone(servable), decode()?, keys, inline).await
    }

    /// Output `keys` for the `examples` of Classify, Regress or MultiInference, each with
    /// the features of `context`: as tensors only when the export has every key, so that a
    /// model without them is refused as the instances' answer refuses it.
    pub(super) async fn examples_answer(
        &self,
        servable: &Arc<dyn Servable>,
        examples: &[Bytes],
        context: &[u8],
        keys: impl Into<Vec<String>>,
    ) -> Result<Outputs, ServeError> {
        let keys: Vec<String> = keys.into();
        let signature = servable.signature();
        let has_keys = keys.iter().all(|key| signature.outputs.contains(key));
        let decode = || examples::decoded(examples, context, signature, has_keys);
        self.answer(servable, examples.len(), decode, keys).await
    }

    /// Outputs `names` of `named` for a Predict call's `inputs` (`count` instances), each a
    /// tensor under its name.
    pub(super) async fn predicted_tensors(
        &self,
        servable: &Arc<dyn Servable>,
        named: &NamedSignature,
        count: usize,
        inputs: &HashMap<String, TensorProto>,
        names: Vec<String>,
    ) -> Result<Vec<(String, ServingTensor)>, ServeError> {
        let decode = || tensors::decoded(servable.signature(), inputs);
        let keys = (names.iter()).map(|name| named.key_of(name).to_string());
        match self.answer(servable, count, decode, keys.collect()).await? {
            Outputs::Tensors(tensors) => Ok(names.into_iter().zip(tensors).collect()),
            Outputs::Json(predictions) => {
                let predictions = named.outputs_of(predictions);
                (names.into_iter())
                    .map(|name| stacked(&name, &predictions).map(|tensor| (name, tensor)))
                    .collect()
            }
        }
    }
}
