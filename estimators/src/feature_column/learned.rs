//! The parts of feature columns that are learned from the training input (normalisers,
//! vocabularies), found wherever they are nested: inside an embedding, an indicator, a
//! cross or a bucketized column.

use super::categorical::CategoricalColumn;
use super::column::FeatureColumn;
use super::crossed::CrossSource;
use super::numeric::NumericColumn;
use super::vocabulary::VocabularyListColumn;

/// A column with something to learn, borrowed to be filled in.
pub(crate) enum Learned<'a> {
    /// A numeric column whose normaliser is learned.
    Normalizer(&'a mut NumericColumn),
    /// A vocabulary column whose vocabulary is learned.
    Vocabulary(&'a mut VocabularyListColumn),
}

/// Calls `visit` with every column of `column` (itself included) that still learns
/// something.
pub(crate) fn for_each_learned(column: &mut FeatureColumn, visit: &mut dyn FnMut(Learned<'_>)) {
    match column {
        FeatureColumn::Numeric(c) => numeric(c, visit),
        FeatureColumn::Bucketized(c) => numeric(&mut c.source, visit),
        FeatureColumn::VocabularyList(c) => vocabulary(c, visit),
        FeatureColumn::HashBucket(_) | FeatureColumn::Identity(_) => {}
        FeatureColumn::Crossed(c) => crossed(&mut c.keys, visit),
        FeatureColumn::Indicator(c) => categorical(&mut c.categorical, visit),
        FeatureColumn::Embedding(c) => categorical(&mut c.categorical, visit),
    }
}

fn categorical(column: &mut CategoricalColumn, visit: &mut dyn FnMut(Learned<'_>)) {
    match column {
        CategoricalColumn::VocabularyList(c) => vocabulary(c, visit),
        CategoricalColumn::Bucketized(c) => numeric(&mut c.source, visit),
        CategoricalColumn::Crossed(c) => crossed(&mut c.keys, visit),
        CategoricalColumn::HashBucket(_) | CategoricalColumn::Identity(_) => {}
    }
}

fn crossed(keys: &mut [CrossSource], visit: &mut dyn FnMut(Learned<'_>)) {
    for key in keys {
        if let CrossSource::Column(c) = key {
            categorical(c, visit);
        }
    }
}

fn numeric(column: &mut NumericColumn, visit: &mut dyn FnMut(Learned<'_>)) {
    if column.learns_normalizer() {
        visit(Learned::Normalizer(column));
    }
}

fn vocabulary(column: &mut VocabularyListColumn, visit: &mut dyn FnMut(Learned<'_>)) {
    if column.learns_vocabulary().is_some() {
        visit(Learned::Vocabulary(column));
    }
}
