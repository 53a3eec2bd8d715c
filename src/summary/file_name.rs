//! Events file names: `events.out.tfevents.{unix_secs:010}.{hostname}.{pid}.{n}`, as TensorFlow.
//!
//! TensorBoard only requires `tfevents` in the name and reads a directory's files in name order,
//! so the zero-padded timestamp keeps runs in chronological order; `n` is the smallest number
//! that makes the name new in its directory.

use std::path::Path;

/// The substring TensorBoard looks for in event file names.
pub const EVENTS_FILE_MARKER: &str = "tfevents";

/// The name of an events file opened at `unix_secs` by process `pid` on `hostname`, `n`-th of
/// that second.
pub fn events_file_name(unix_secs: u64, hostname: &str, pid: u32, n: u32) -> String {
    format!("events.out.{EVENTS_FILE_MARKER}.{unix_secs:010}.{hostname}.{pid}.{n}")
}

/// Whether `path` names an events file (its file name contains `tfevents`).
pub fn is_events_file(path: &Path) -> bool {
    path.file_name()
        .and_then(|name| name.to_str())
        .is_some_and(|name| name.contains(EVENTS_FILE_MARKER))
}

/// This machine's host name, reduced to characters safe in a file name; `localhost` if unknown.
pub fn hostname() -> String {
    let raw = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .or_else(|| std::env::var("COMPUTERNAME").ok())
        .unwrap_or_default();
    let safe: String = raw
        .trim()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if safe.is_empty() {
        "localhost".to_string()
    } else {
        safe
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_tensorflow() {
        assert_eq!(
            events_file_name(1_700_000_000, "host", 42, 0),
            "events.out.tfevents.1700000000.host.42.0"
        );
        assert_eq!(
            events_file_name(5, "h", 1, 3),
            "events.out.tfevents.0000000005.h.1.3"
        );
        assert!(is_events_file(Path::new(
            "d/events.out.tfevents.0000000005.h.1.3"
        )));
        assert!(!is_events_file(Path::new("tfevents/ckpt-1.ckpt")));
    }

    #[test]
    fn hostname_is_file_name_safe() {
        let host = hostname();
        assert!(!host.is_empty());
        assert!(host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.'));
    }
}
