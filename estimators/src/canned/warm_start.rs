//! A warm start from a canned estimator trained on other data: what its variables index —
//! the inputs of the first layer or of the linear weights, each embedding table's
//! categories, a classifier's classes — followed by name rather than by position.

use std::collections::BTreeSet;

use estimator::checkpoint::VocabInfo;
use estimator::head::Head;
use estimator::WarmStartSettings;

use super::{CannedEstimator, Task};
use crate::feature_column::{EmbeddingColumn, ResolvedColumns};
use crate::network::{DnnNetwork, LinearNetwork, Network, WideDeepNetwork};

/// A network whose variables a warm start can follow by name.
pub trait FollowedByName: Network {
    /// Records in `follower` each variable of this network (its names under `prefix`)
    /// whose entries `previous` laid out otherwise, and the class names when they changed.
    fn follow(&self, previous: &Self, prefix: &str, follower: &mut Follower<'_>);
}

impl<N: FollowedByName, K: Task> CannedEstimator<N, K> {
    /// `settings`, which read the checkpoint of `previous`, told how `previous` laid out
    /// what this estimator's variables index, where it differs (TF's `VocabInfo`, built
    /// from the two configurations): rows over the inputs follow the inputs' names
    /// ([`input_names`](ResolvedColumns::input_names),
    /// [`sparse_input_names`](ResolvedColumns::sparse_input_names)), each embedding table's
    /// rows its categories (read from the previous table of the same column, wherever it
    /// stood), and a classifier's logits its class names. An input, category or class
    /// `previous` lacks keeps its fresh initial values. Variables the settings do not take,
    /// or read under another name, are left as they are; a linear weight over both changed
    /// inputs and changed classes follows its inputs only, with a warning.
    pub fn warm_start_following(
        &self,
        previous: &Self,
        settings: &WarmStartSettings,
    ) -> WarmStartSettings {
        let mut follower = Follower {
            settings,
            renamed: settings.var_name_to_prev_var_name.keys().collect(),
            infos: Vec::new(),
            moved: Vec::new(),
            classes: class_names(self.head()).zip(class_names(previous.head())),
        };
        self.network().follow(previous.network(), "", &mut follower);
        follower.finish()
    }
}

/// The vocabulary infos and renames a warm start gathers, variable by variable.
pub struct Follower<'a> {
    settings: &'a WarmStartSettings,
    renamed: BTreeSet<&'a String>,
    infos: Vec<(String, VocabInfo)>,
    moved: Vec<(String, String)>,
    /// The class names now and before, for a multi-class head.
    classes: Option<(Vec<String>, Vec<String>)>,
}

impl Follower<'_> {
    fn follow(&mut self, var: String, new: Vec<String>, old: Vec<String>, axis: usize) {
        let taken = self.settings.vars_to_warm_start.selects(&var);
        if new == old || !taken || self.renamed.contains(&var) {
            return;
        }
        if self.infos.iter().any(|(followed, _)| *followed == var) {
            tracing::warn!(
                "warm start: '{var}' follows its rows by name; its columns, over classes that \
                 changed too, are taken by position"
            );
            return;
        }
        let found = new.iter().filter(|name| old.contains(name)).count();
        tracing::info!(
            "warm start: the {} entries of '{var}' along dimension {axis} take the values of \
             the same names ({found} found in the model warmed from)",
            new.len()
        );
        self.infos
            .push((var, VocabInfo::new(new, old).with_axis(axis)));
    }

    /// The class axis of `var` (`axis`), when the classes changed.
    fn classes(&mut self, var: String, axis: usize) {
        if let Some((new, old)) = self.classes.clone() {
            self.follow(var, new, old, axis);
        }
    }

    /// Each embedding table of `columns` by its (first) column's categories, renamed where
    /// the table stood elsewhere in `before`. A table new in `columns`, whose place another
    /// table held, shares no name with it and so starts fresh.
    fn embeddings(&mut self, prefix: &str, columns: &ResolvedColumns, before: &ResolvedColumns) {
        let names = |table: &EmbeddingColumn| -> Vec<String> {
            let name = table.table_name();
            let buckets = table.categorical.bucket_names();
            buckets
                .iter()
                .map(|bucket| format!("{name}{bucket}"))
                .collect()
        };
        let old_tables = before.embedding_tables();
        for (i, table) in columns.embedding_tables().iter().enumerate() {
            let var = format!("{prefix}input.embeddings.{i}.weight");
            if !table.trainable && !self.settings.vars_to_warm_start.takes_untrained() {
                continue;
            }
            match old_tables
                .iter()
                .position(|old| old.shares_table_with(table))
            {
                Some(j) => {
                    self.follow(var.clone(), names(table), names(old_tables[j]), 0);
                    if i != j && !self.renamed.contains(&var) {
                        let prev = format!("{prefix}input.embeddings.{j}.weight");
                        self.moved.push((var, prev));
                    }
                }
                None => {
                    if let Some(other) = old_tables.get(i) {
                        self.follow(var, names(table), names(other), 0);
                    }
                }
            }
        }
    }

    fn finish(self) -> WarmStartSettings {
        let mut settings = self.settings.clone();
        for (var, info) in self.infos {
            settings = settings.with_vocab_info(var, info);
        }
        for (var, prev) in self.moved {
            settings = settings.with_prev_var_name(var, prev);
        }
        settings
    }
}

impl FollowedByName for DnnNetwork {
    fn follow(&self, previous: &Self, prefix: &str, follower: &mut Follower<'_>) {
        let (columns, before) = (&self.columns, &previous.columns);
        let first = format!("{prefix}hidden.0.weight");
        follower.follow(first, columns.input_names(), before.input_names(), 0);
        follower.embeddings(prefix, columns, before);
        follower.classes(format!("{prefix}logits.weight"), 1);
        follower.classes(format!("{prefix}logits.bias"), 0);
    }
}

impl FollowedByName for LinearNetwork {
    fn follow(&self, previous: &Self, prefix: &str, follower: &mut Follower<'_>) {
        let (columns, before) = (&self.columns, &previous.columns);
        let (dense, sparse) = (
            format!("{prefix}weights"),
            format!("{prefix}sparse_weights.weight"),
        );
        follower.follow(
            dense.clone(),
            columns.input_names(),
            before.input_names(),
            0,
        );
        let (new, old) = (columns.sparse_input_names(), before.sparse_input_names());
        follower.follow(sparse.clone(), new, old, 0);
        follower.embeddings(prefix, columns, before);
        follower.classes(dense, 1);
        follower.classes(sparse, 1);
        follower.classes(format!("{prefix}bias"), 0);
    }
}

impl FollowedByName for WideDeepNetwork {
    fn follow(&self, previous: &Self, prefix: &str, follower: &mut Follower<'_>) {
        let linear = format!("{prefix}{}.", WideDeepNetwork::LINEAR_MODULE);
        self.linear.follow(&previous.linear, &linear, follower);
        self.dnn
            .follow(&previous.dnn, &format!("{prefix}dnn."), follower);
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
