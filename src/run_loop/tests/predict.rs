//! Prediction from a trained model, on the pool of intra-op threads the run configuration
//! asks for.

use datasets::from_vec;

use super::{run, Line};
use crate::error::Result;
use crate::estimator::RunConfig;

#[test]
fn predictions_are_computed_on_a_pool_of_intra_op_threads() {
    let trained = run("", true, 0, 3, u64::MAX);
    assert!(trained.outcome.is_ok());
    for threads in [1, 3] {
        let estimator = Line {
            run_config: RunConfig::new(trained.model_dir.path()).with_intra_op_threads(threads),
        };
        let batches = vec![vec![(1.0, 0.0), (2.0, 0.0)], vec![(3.0, 0.0)]];
        let predictions: Vec<f32> = crate::run_loop::predict(&estimator, from_vec(batches), None)
            .unwrap()
            .collect::<Result<_>>()
            .unwrap();
        assert_eq!(predictions, vec![threads as f32; 3]);
    }
}
