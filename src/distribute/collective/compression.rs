//! How gradients travel on the wire: full f32, or rounded to 16 bits (Horovod's
//! `Compression.fp16`), halving the bytes every all-reduce moves.

use std::fmt;
use std::str::FromStr;

use half::f16;
use serde::{Deserialize, Serialize};

/// The number format of the values an all-reduce sends; sums are always kept in f32.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Compression {
    /// f32 as it is: results bit-identical to a sum in one process, up to summation order.
    #[default]
    None,
    /// IEEE half precision: 11 significant bits, but values beyond ±65504 overflow and
    /// below 6e-5 lose precision (gradients that small round towards zero).
    Fp16,
    /// bfloat16: f32's range with 8 significant bits; the safe choice for gradients.
    Bf16,
}

impl Compression {
    /// Bytes of one value on the wire.
    pub fn element_bytes(self) -> usize {
        match self {
            Compression::None => 4,
            Compression::Fp16 | Compression::Bf16 => 2,
        }
    }

    /// `value` as it arrives after a trip on the wire.
    pub fn round(self, value: f32) -> f32 {
        match self {
            Compression::None => value,
            Compression::Fp16 => f16::from_f32(value).to_f32(),
            Compression::Bf16 => bf16_to_f32(bf16_from_f32(value)),
        }
    }

    /// The largest relative error one trip on the wire adds to a value in range (the unit
    /// roundoff of the format).
    pub fn unit_roundoff(self) -> f32 {
        match self {
            Compression::None => 0.0,
            Compression::Fp16 => 2f32.powi(-11),
            Compression::Bf16 => 2f32.powi(-8),
        }
    }

    /// The flag value naming it: `none`, `fp16`, `bf16`.
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Fp16 => "fp16",
            Compression::Bf16 => "bf16",
        }
    }
}

/// `value` rounded to bfloat16 (to nearest, ties to even; NaN stays NaN), as its bits.
/// Written without a branch so that a loop over a slice compiles to vector code (the
/// `half` crate's conversion tests for NaN first).
#[inline]
pub(super) fn bf16_from_f32(value: f32) -> u16 {
    let x = value.to_bits();
    let rounded = x.wrapping_add(0x7FFF + ((x >> 16) & 1)) >> 16;
    let quiet_nan = (x >> 16) | 0x0040;
    let is_nan = x & 0x7FFF_FFFF > 0x7F80_0000;
    (if is_nan { quiet_nan } else { rounded }) as u16
}

/// The f32 of bfloat16 `bits` (exact: bfloat16 is f32's upper half).
#[inline]
pub(super) fn bf16_to_f32(bits: u16) -> f32 {
    f32::from_bits(u32::from(bits) << 16)
}

impl fmt::Display for Compression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Compression {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "none" | "off" => Ok(Compression::None),
            "fp16" | "f16" | "float16" => Ok(Compression::Fp16),
            "bf16" | "bfloat16" => Ok(Compression::Bf16),
            _ => Err(format!(
                "unknown all-reduce compression '{s}' (expected none, fp16 or bf16)"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back_and_unknown_ones_are_refused() {
        for c in [Compression::None, Compression::Fp16, Compression::Bf16] {
            assert_eq!(c.name().parse::<Compression>(), Ok(c));
        }
        assert_eq!("BF16".parse::<Compression>(), Ok(Compression::Bf16));
        let err = "int8".parse::<Compression>().unwrap_err();
        assert_eq!(
            err,
            "unknown all-reduce compression 'int8' (expected none, fp16 or bf16)"
        );
    }

    #[test]
    fn bfloat16_rounds_as_the_half_crate_does() {
        let mut x = 0x0001_2345u32;
        for _ in 0..100_000 {
            x = x.wrapping_mul(2_654_435_761).wrapping_add(12_345);
            let v = f32::from_bits(x);
            let ours = bf16_from_f32(v);
            let theirs = half::bf16::from_f32(v);
            assert_eq!(ours, theirs.to_bits(), "{v:e} ({x:#010x})");
            if !v.is_nan() {
                assert_eq!(bf16_to_f32(ours).to_bits(), theirs.to_f32().to_bits());
            }
        }
        for v in [
            0.0f32,
            -0.0,
            1.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::MAX,
            1.0039062,
        ] {
            assert_eq!(bf16_from_f32(v), half::bf16::from_f32(v).to_bits(), "{v}");
        }
        assert!(bf16_to_f32(bf16_from_f32(f32::NAN)).is_nan());
    }

    #[test]
    fn rounding_stays_within_the_unit_roundoff() {
        for c in [Compression::None, Compression::Fp16, Compression::Bf16] {
            for v in [1.0f32, -3.25, 1e-3, 12345.678, 0.1] {
                let r = c.round(v);
                assert!(
                    (r - v).abs() <= c.unit_roundoff() * v.abs(),
                    "{c}: {v} -> {r}"
                );
                assert_eq!(c.round(r), r, "{c}: rounding twice changes {v}");
            }
        }
        assert!(Compression::Bf16.round(3.4e38).is_infinite());
        assert!(Compression::Fp16.round(1e6).is_infinite());
    }
}
