//! Events file names: `events.out.tfevents.{unix_secs:010}.{hostname}.{pid}.{n:04}`, as
//! TensorFlow's but for the padding.
//!
//! TensorBoard only requires `tfevents` in the name and reads a directory's files in name order,
//! so the zero-padded timestamp keeps runs in chronological order; `n` is the smallest number
//! that makes the name new in its directory, zero-padded too, so that the files one process
//! opens in the same second (a fast evaluator writes one per evaluation) also sort in the
//! order they were written — unpadded, `.10` sorts before `.2` and TensorBoard shows the
//! evaluations out of step order.

use std::fs::{File, OpenOptions};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The substring TensorBoard looks for in event file names.
pub const EVENTS_FILE_MARKER: &str = "tfevents";

/// How many names differing only in their last number are tried before giving up.
const MAX_NAME_ATTEMPTS: u32 = 10_000;

/// The name of an events file opened at `unix_secs` by process `pid` on `hostname`, `n`-th of
/// that second.
pub fn events_file_name(unix_secs: u64, hostname: &str, pid: u32, n: u32) -> String {
    format!("events.out.{EVENTS_FILE_MARKER}.{unix_secs:010}.{hostname}.{pid}.{n:04}")
}

/// Whether `path` names an events file (its file name contains `tfevents`).
pub fn is_events_file(path: &Path) -> bool {
    path.file_name()
        .and_then(|name| name.to_str())
        .is_some_and(|name| name.contains(EVENTS_FILE_MARKER))
}

/// `host` reduced to characters safe in a file name; `localhost` if nothing is left.
pub fn file_name_safe_host(host: &str) -> String {
    let safe: String = host
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

/// Opens `events.out.tfevents.{unix_secs}.{host}.{pid}.{n}` in `dir` (`host` made file-name
/// safe) with the smallest `n` whose file does not exist yet; `create_new` makes the check and
/// the creation one atomic step.
pub fn create_new_events_file(dir: &Path, unix_secs: u64, host: &str) -> Result<(PathBuf, File)> {
    let host = file_name_safe_host(host);
    let pid = std::process::id();
    for n in 0..MAX_NAME_ATTEMPTS {
        let path = dir.join(events_file_name(unix_secs, &host, pid, n));
        match OpenOptions::new().write(true).create_new(true).open(&path) {
            Ok(file) => return Ok((path, file)),
            Err(e) if e.kind() == ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(Error::io(path, e)),
        }
    }
    let message = format!("{MAX_NAME_ATTEMPTS} events files already opened this second");
    Err(Error::io(
        dir,
        std::io::Error::new(ErrorKind::AlreadyExists, message),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_tensorflow() {
        assert_eq!(
            events_file_name(1_700_000_000, "host", 42, 0),
            "events.out.tfevents.1700000000.host.42.0000"
        );
        assert_eq!(
            events_file_name(5, "h", 1, 3),
            "events.out.tfevents.0000000005.h.1.0003"
        );
        assert!(is_events_file(Path::new(
            "d/events.out.tfevents.0000000005.h.1.3"
        )));
        assert!(!is_events_file(Path::new("tfevents/ckpt-1.ckpt")));
    }

    #[test]
    fn files_opened_in_one_second_sort_in_the_order_they_were_opened() {
        let dir = tempfile::tempdir().unwrap();
        let opened: Vec<PathBuf> = (0..25)
            .map(|_| {
                create_new_events_file(dir.path(), 1_700_000_000, "host")
                    .unwrap()
                    .0
            })
            .collect();
        let mut by_name = opened.clone();
        by_name.sort();
        assert_eq!(by_name, opened);
    }

    #[test]
    fn hostname_is_file_name_safe() {
        let host = file_name_safe_host(&crate::cluster::hostname());
        assert!(!host.is_empty());
        assert!(host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.'));
        assert_eq!(file_name_safe_host(" a/b c\n"), "a_b_c");
        assert_eq!(file_name_safe_host(""), "localhost");
    }
}
