//! Columns sharing one embedding table (`shared_embeddings`) end to end: trained, evaluated,
//! checkpointed, exported and served from the one table.

use estimator::datasets::{Example, Label, Schema};
use estimator::OptimizerSpec;
use estimators::feature_column::{
    categorical_column_with_vocabulary_list, shared_embeddings, FeatureColumn,
};
use estimators::DnnClassifier;

use crate::canned::{exercise, run_config, BINARY_METRICS};

const TEAMS: [&str; 6] = ["ants", "bees", "cats", "dogs", "eels", "fish"];

#[test]
fn a_home_and_an_away_column_train_one_table_of_teams() {
    // The stronger team (later in the list) wins; eels never play at home.
    let mut data = Vec::new();
    for (home, home_team) in TEAMS.iter().enumerate().filter(|(_, t)| **t != "eels") {
        for (away, away_team) in TEAMS.iter().enumerate().filter(|(a, _)| *a != home) {
            data.push(Example {
                dense: vec![],
                categorical: vec![home_team.to_string(), away_team.to_string()],
                label: Label::Class(u32::from(home > away)),
            });
        }
    }
    let schema = Schema::new()
        .category("home")
        .category("away")
        .int("won")
        .label("won");
    let teams = ["home", "away"].map(|key| categorical_column_with_vocabulary_list(key, TEAMS));
    let columns: Vec<FeatureColumn> = (shared_embeddings(teams, 3).into_iter())
        .map(Into::into)
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let classifier = DnnClassifier::new(run_config(dir.path()), &schema, columns, [8], 2)
        .unwrap()
        .with_optimizer(OptimizerSpec::adam(0.05));
    exercise(&classifier, &data, BINARY_METRICS);

    // One table: a row per team and one for values outside the vocabulary.
    let table = estimator::checkpoint::load_variable(dir.path(), "input.embeddings.0.weight");
    assert_eq!(table.unwrap().shape, [7, 3]);
    assert!(estimator::checkpoint::load_variable(dir.path(), "input.embeddings.1.weight").is_err());
    let network = classifier.network();
    assert_eq!(network.columns.input_width(), 6);
    let tables = network.columns.embedding_tables();
    assert_eq!(tables[0].table_name(), "away_home_shared_embedding");
}
