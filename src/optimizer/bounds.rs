//! The one check behind every optimizer setting's validation: each named value obeys a
//! rule, or the error names the setting, the field and the rule.

use crate::error::{Error, Result};

/// `Ok` when `ok` holds for every value; otherwise an error such as
/// `gradient clipping: norm -1 must be finite and positive`.
pub(super) fn check_each<T: Into<f64> + Copy + std::fmt::Display>(
    setting: &str,
    fields: &[(&str, T)],
    ok: fn(f64) -> bool,
    rule: &str,
) -> Result<()> {
    match fields.iter().find(|(_, value)| !ok((*value).into())) {
        Some((name, value)) => Err(Error::Config(format!("{setting}: {name} {value} {rule}"))),
        None => Ok(()),
    }
}

/// Finite and above zero.
pub(super) fn positive(value: f64) -> bool {
    value.is_finite() && value > 0.0
}

/// Finite and not below zero.
pub(super) fn non_negative(value: f64) -> bool {
    value.is_finite() && value >= 0.0
}
