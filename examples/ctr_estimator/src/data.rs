//! The click log this example learns from, generated deterministically: every run and every
//! task of a cluster writes the same rows, and the probability each row was drawn with is
//! known, so a test can say how good a model could be.

use std::io::Write;
use std::path::Path;

use estimator::datasets::SplitMix64;
use estimator::AtomicFile;

/// Sites, most visited first: the last two are rare enough to fall outside the learned
/// vocabulary (its `max_size`), into the out-of-vocabulary bucket.
pub const SITES: [&str; 12] = [
    "news", "sports", "weather", "video", "social", "shop", "travel", "games", "music", "food",
    "forum", "wiki",
];

/// How likely each site's visitors click, as a logit offset.
const SITE_EFFECT: [f64; 12] = [
    -0.8, 0.9, -1.2, 1.3, 0.4, 1.0, -0.4, 0.6, -0.6, 0.2, 0.0, 0.0,
];

/// Devices, each with the part of the day its users click most.
pub const DEVICES: [&str; 3] = ["phone", "tablet", "desktop"];

/// Distinct apps: many more than the hash bucket column has buckets.
const APPS: u64 = 300;

/// The CSV header, in the column order of [`crate::ctr_schema`].
pub const HEADER: &str = "site,app,device,hour,position,price,clicked";

/// One impression: its features, the probability of a click it was drawn with, the click.
#[derive(Debug, Clone, PartialEq)]
pub struct Impression {
    /// The site shown on.
    pub site: &'static str,
    /// The app advertised.
    pub app: String,
    /// The device.
    pub device: &'static str,
    /// Hour of the day, 0–23.
    pub hour: u32,
    /// Slot on the page, 1 (top) – 8.
    pub position: u32,
    /// The bid price.
    pub price: f64,
    /// The probability of a click the label was drawn with.
    pub probability: f64,
    /// Whether it was clicked.
    pub clicked: bool,
}

/// A uniform number in `[0, 1)`.
fn uniform(rng: &mut SplitMix64) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

/// `n` impressions of the stream `seed`.
pub fn impressions(n: usize, seed: u64) -> Vec<Impression> {
    let mut rng = SplitMix64::new(seed);
    (0..n).map(|_| impression(&mut rng)).collect()
}

fn impression(rng: &mut SplitMix64) -> Impression {
    // Zipf-like: site i with weight 1 / (i + 1).
    let weights: Vec<f64> = (0..SITES.len()).map(|i| 1.0 / (i + 1) as f64).collect();
    let mut pick = uniform(rng) * weights.iter().sum::<f64>();
    let site = weights
        .iter()
        .position(|w| {
            pick -= w;
            pick < 0.0
        })
        .unwrap_or(SITES.len() - 1);
    let app = rng.next_u64() % APPS;
    let device = (rng.next_u64() % 3) as usize;
    let hour = (rng.next_u64() % 24) as u32;
    let position = 1 + (rng.next_u64() % 8) as u32;
    let price = (0.5 + 3.0 * uniform(rng)).powi(2);
    let logit = -0.1 + SITE_EFFECT[site] + app_effect(app) + daypart_effect(device, hour)
        - 0.35 * f64::from(position - 1)
        - 0.15 * (price - 4.0);
    let probability = 1.0 / (1.0 + (-logit).exp());
    Impression {
        site: SITES[site],
        app: format!("app-{app}"),
        device: DEVICES[device],
        hour,
        position,
        price: (price * 100.0).round() / 100.0,
        probability,
        clicked: uniform(rng) < probability,
    }
}

/// Every tenth app is much liked, every seventh disliked.
fn app_effect(app: u64) -> f64 {
    match (app.is_multiple_of(10), app.is_multiple_of(7)) {
        (true, _) => 1.2,
        (false, true) => -1.0,
        _ => 0.0,
    }
}

/// Phones click at night, desktops in office hours: an interaction only the cross of device
/// and hour bucket sees.
fn daypart_effect(device: usize, hour: u32) -> f64 {
    match (DEVICES[device], hour) {
        ("phone", 18..=23) => 1.4,
        ("desktop", 6..=11) => 1.1,
        ("desktop", 18..=23) => -0.9,
        _ => 0.0,
    }
}

/// Writes `impressions` as CSV with [`HEADER`] to `path`, atomically: a generation cut
/// short leaves the file it would have replaced, never one that ends mid-row.
pub fn write_csv(path: &Path, impressions: &[Impression]) -> std::io::Result<()> {
    let mut out = AtomicFile::create(path).map_err(std::io::Error::other)?;
    writeln!(out, "{HEADER}")?;
    for i in impressions {
        writeln!(
            out,
            "{},{},{},{},{},{},{}",
            i.site,
            i.app,
            i.device,
            i.hour,
            i.position,
            i.price,
            u8::from(i.clicked)
        )?;
    }
    out.commit().map_err(std::io::Error::other)
}
