//! Parameter-server tasks.

use crate::error::{Error, Result};
use crate::estimator::Estimator;

/// Serves `estimator`'s parameters to the workers of a parameter-server cluster.
pub fn serve_parameters<E: Estimator>(_: &E) -> Result<()> {
    Err(Error::Config(
        "ps tasks are served by the ParameterServer strategy".into(),
    ))
}
