//! The server over loopback, driven by a real HTTP client as a TF Serving client would:
//! status, metadata, both `:predict` formats, `:classify`, `:regress`, versions and labels,
//! a new version under load, and the errors with their status codes.

mod errors;
mod predict;
mod support;
mod versions;
