//! Canned estimators.
