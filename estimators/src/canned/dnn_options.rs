//! DNN settings shared by the DNN and wide-and-deep estimators: activation, dropout,
//! batch normalisation.

use estimator::Result;

use super::{CannedEstimator, Task};
use crate::network::{Activation, DnnNetwork, Network, WideDeepNetwork};

/// A network with a DNN part, whose settings the estimator builders change.
pub trait HasDnn {
    /// The DNN part.
    fn dnn_mut(&mut self) -> &mut DnnNetwork;
}

impl HasDnn for DnnNetwork {
    fn dnn_mut(&mut self) -> &mut DnnNetwork {
        self
    }
}

impl HasDnn for WideDeepNetwork {
    fn dnn_mut(&mut self) -> &mut DnnNetwork {
        &mut self.dnn
    }
}

impl<N: Network + HasDnn, K: Task> CannedEstimator<N, K> {
    /// The hidden layers' activation (default ReLU; TF's `activation_fn`).
    pub fn with_activation(mut self, activation: Activation) -> Self {
        self.network_mut().dnn_mut().activation = activation;
        self
    }

    /// Drops hidden units with probability `p` in `[0, 1)` while training (0: no dropout).
    pub fn with_dropout(mut self, p: f64) -> Result<Self> {
        self.network_mut().dnn_mut().dropout = Some(DnnNetwork::check_dropout(p)?);
        Ok(self)
    }

    /// Batch-normalises every hidden layer (after activation and dropout, as TF).
    pub fn with_batch_norm(mut self, batch_norm: bool) -> Self {
        self.network_mut().dnn_mut().batch_norm = batch_norm;
        self
    }
}
