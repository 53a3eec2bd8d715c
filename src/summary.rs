//! TensorBoard summaries: events files with scalars and TensorFlow-style histograms.
//!
//! A [`SummaryWriter`] opens a new `events.out.tfevents.*` file in its directory (never reusing
//! an existing one, so a restarted run keeps the previous file), and [`read_event_file`] reads
//! such files back, checking every record's CRC.

mod event;
mod event_file;
mod fault;
mod file_name;
mod histogram;
mod protobuf_primitives;
mod writer;

pub use event::{Event, EventKind, SessionStatus, SummaryValue, Value, FILE_VERSION};
pub use event_file::{event_files, read_event_file};
pub use fault::SummaryFault;
pub use file_name::is_events_file;
pub use histogram::{default_bucket_limits, histogram_buckets, Histogram};
pub use writer::SummaryWriter;
