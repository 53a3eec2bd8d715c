//! A warm start from a canned DNN trained on other data: what its variables index — the
//! first layer's inputs, each embedding table's categories, a classifier's classes —
//! followed by name rather than by position.

use std::collections::BTreeSet;

use estimator::checkpoint::VocabInfo;
use estimator::head::Head;
use estimator::WarmStartSettings;

use super::{CannedEstimator, Task};
use crate::network::DnnNetwork;

/// The first hidden layer's weight: one row per value of the input layer's output.
const FIRST_LAYER: &str = "hidden.0.weight";

impl<K: Task> CannedEstimator<DnnNetwork, K> {
    /// `settings`, which read the checkpoint of `previous`, told how `previous` laid out
    /// what this estimator's variables index, where it differs (TF's `VocabInfo`, built
    /// from the two configurations): the first layer's rows follow the names of the inputs
    /// ([`input_names`](crate::feature_column::ResolvedColumns::input_names)), each
    /// embedding table's rows its categories (read from the previous table of the same
    /// column, wherever it stood), and a classifier's logits its class names. An input,
    /// category or class `previous` lacks keeps its fresh initial values. Variables the
    /// settings do not take, or read under another name, are left as they are.
    pub fn warm_start_following(
        &self,
        previous: &Self,
        settings: &WarmStartSettings,
    ) -> WarmStartSettings {
        let renamed: BTreeSet<&String> = settings.var_name_to_prev_var_name.keys().collect();
        let mut infos: Vec<(String, VocabInfo)> = Vec::new();
        let mut follow = |var: &str, new: Vec<String>, old: Vec<String>, axis: usize| {
            let taken = settings.vars_to_warm_start.selects(var);
            if new == old || !taken || renamed.contains(&var.to_string()) {
                return;
            }
            let found = new.iter().filter(|name| old.contains(name)).count();
            tracing::info!(
                "warm start: the {} entries of '{var}' along dimension {axis} take the values \
                 of the same names ({found} found in the model warmed from)",
                new.len()
            );
            infos.push((var.to_string(), VocabInfo::new(new, old).with_axis(axis)));
        };
        let (columns, before) = (&self.network().columns, &previous.network().columns);
        follow(FIRST_LAYER, columns.input_names(), before.input_names(), 0);
        let old_tables = before.embedding_columns();
        let mut moved = Vec::new();
        for (i, table) in columns.embedding_columns().iter().enumerate() {
            let Some(j) = old_tables.iter().position(|old| old.name() == table.name()) else {
                continue;
            };
            let var = format!("input.embeddings.{i}.weight");
            let (new, old) = (&table.categorical, &old_tables[j].categorical);
            follow(&var, new.bucket_names(), old.bucket_names(), 0);
            if i != j && !renamed.contains(&var) {
                moved.push((var, format!("input.embeddings.{j}.weight")));
            }
        }
        let classes = (class_names(self.head()), class_names(previous.head()));
        if let (Some(classes), Some(before)) = classes {
            follow("logits.weight", classes.clone(), before.clone(), 1);
            follow("logits.bias", classes, before, 0);
        }
        let mut settings = settings.clone();
        for (var, info) in infos {
            settings = settings.with_vocab_info(var, info);
        }
        for (var, prev) in moved {
            settings = settings.with_prev_var_name(var, prev);
        }
        settings
    }
}

/// The class names of a head with one logit per class.
fn class_names(head: &Head) -> Option<Vec<String>> {
    match head {
        Head::MultiClass(head) => Some(
            head.label_vocabulary
                .clone()
                .unwrap_or_else(|| (0..head.n_classes).map(|i| i.to_string()).collect()),
        ),
        Head::Binary(_) | Head::Regression(_) => None,
    }
}
