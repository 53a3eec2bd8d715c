//! Reading a canned estimator back (a model directory's configuration, an export), checked
//! as a new one is: the file may be hand-edited or damaged, and a value no builder accepts
//! would panic in Burn, divide by zero, or silently give other predictions.

use std::marker::PhantomData;

use datasets::Schema;
use estimator::head::Head;
use estimator::{Error, LossReduction, OptimizerSpec, Result, RunConfig};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer};

use super::CannedEstimator;
use crate::canned::{Task, WeightColumn};
use crate::network::Network;

/// The saved form: [`CannedEstimator`]'s fields.
#[derive(Deserialize)]
#[serde(bound = "N: Network")]
struct Saved<N> {
    run_config: RunConfig,
    schema: Schema,
    network: N,
    head: Head,
    weight_column: Option<WeightColumn>,
    optimizer: OptimizerSpec,
    #[serde(default)]
    loss_reduction: LossReduction,
}

impl<'de, N: Network, K: Task> Deserialize<'de> for CannedEstimator<N, K> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let saved = Saved::<N>::deserialize(deserializer)?;
        check::<N, K>(&saved).map_err(D::Error::custom)?;
        Ok(Self {
            run_config: saved.run_config,
            schema: saved.schema,
            network: saved.network,
            head: saved.head,
            weight_column: saved.weight_column,
            optimizer: saved.optimizer,
            loss_reduction: saved.loss_reduction,
            task: PhantomData,
        })
    }
}

fn check<N: Network, K: Task>(saved: &Saved<N>) -> Result<()> {
    saved.schema.validate()?;
    saved.network.check_saved(&saved.schema)?;
    if let Some(weight) = &saved.weight_column {
        if WeightColumn::resolve(&weight.name, &saved.schema)? != *weight {
            return Err(Error::Config(format!(
                "weight column '{}' is not at its place in the saved schema",
                weight.name
            )));
        }
    }
    K::check_head(&saved.head)
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;
    use crate::canned::{DnnClassifier, DnnRegressor};
    use crate::feature_column::{
        categorical_column_with_vocabulary_list, indicator_column, numeric_column,
    };

    fn saved() -> Value {
        let schema = Schema::new()
            .float("x")
            .float("w")
            .category("c")
            .int("y")
            .label("y")
            .with_label_classes(3);
        let columns = vec![
            numeric_column("x").into(),
            indicator_column(categorical_column_with_vocabulary_list("c", ["a", "b"])).into(),
        ];
        let est = DnnClassifier::new(RunConfig::new("unused"), &schema, columns, [4], 3)
            .unwrap()
            .with_weight_column("w")
            .unwrap();
        serde_json::to_value(est).unwrap()
    }

    /// The error reading `saved()` edited by `edit` as a DNN classifier.
    fn refused(edit: impl FnOnce(&mut Value)) -> String {
        let mut value = saved();
        edit(&mut value);
        serde_json::from_value::<DnnClassifier>(value)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn a_hand_edited_configuration_is_refused_naming_what_is_wrong() {
        assert!(serde_json::from_value::<DnnClassifier>(saved()).is_ok());
        let err = refused(|v| v["network"]["dropout"] = json!(1.5));
        assert!(
            err.contains("dropout 1.5 is not a probability in [0, 1)"),
            "{err}"
        );
        let err = refused(|v| v["network"]["hidden_units"] = json!([4, 0]));
        assert!(
            err.contains("hidden_units [4, 0] must be one or more positive"),
            "{err}"
        );
        // Still a place in the batch, but the schema's 'w', not 'x'.
        let err = refused(|v| {
            v["network"]["columns"]["inputs"]["sources"]["x"]["dense"]["index"] = json!(1)
        });
        assert!(err.contains("do not read the saved schema"), "{err}");
        let err = refused(|v| v["weight_column"]["index"] = json!(0));
        assert!(
            err.contains("weight column 'w' is not at its place"),
            "{err}"
        );
        let err = refused(|v| v["head"]["n_classes"] = json!(1));
        assert!(err.contains("n_classes is 1"), "{err}");
        let err = refused(|v| v["head"]["label_vocabulary"] = json!(["a"]));
        assert!(err.contains("has 1 entries for 3 classes"), "{err}");
        let err = refused(|v| v["head"]["label_vocabulary"] = json!(["a", "b", "a"]));
        assert!(err.contains("label vocabulary has 'a' twice"), "{err}");
        let err = refused(|v| v["head"] = json!({"kind": "regression", "label_dimension": 1}));
        assert!(err.contains("a classifier has a regression head"), "{err}");
        let mut value = saved();
        value["head"] = json!({"kind": "regression", "label_dimension": 1});
        assert!(serde_json::from_value::<DnnRegressor>(value.clone()).is_ok());
        value["head"]["label_dimension"] = json!(0);
        assert!(serde_json::from_value::<DnnRegressor>(value).is_err());
    }
}
