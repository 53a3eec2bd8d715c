//! Tests of CSV parsing split across threads: the same rows, errors and positions as
//! on one thread, and resume mid-file.

use std::io::Write;
use std::path::PathBuf;

use super::*;
use crate::{DatasetExt, ParallelCalls};

use ParallelCalls::{Autotune, Fixed};

fn schema() -> Schema {
    Schema::new()
        .float("x")
        .category("name")
        .int("n")
        .with_default("-1")
        .float("y")
        .label("y")
}

/// ~300 KB (several chunks) with CRLF line ends, quoted fields holding delimiters,
/// escaped quotes and newlines, blank lines, and bad rows of every kind.
fn text() -> String {
    let mut t = String::from("x,name,n,y\r\n");
    for i in 0..6000 {
        let row = match i % 97 {
            5 => format!("{i}.5,\"multi\r\nline, {i}\",{i},0.25\r\n"),
            11 => format!("{i},\"say \"\"hi\"\"\",,1e-3\r\n"),
            17 => format!("bad{i},x,1,2\r\n"),
            23 => format!("{i},x,1\r\n"),
            29 => format!("{i},x,1,\r\n"),
            31 => "\r\n".to_string(),
            37 => format!("{i},x,1,2,extra\r\n"),
            _ => format!("-{i}.{},name{},{},{}.75\r\n", i % 1000, i % 13, i % 7, i),
        };
        t.push_str(&row);
    }
    t
}

fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> PathBuf {
    let path = dir.path().join(name);
    if name.ends_with(".gz") {
        let f = std::fs::File::create(&path).unwrap();
        let mut gz = flate2::write::GzEncoder::new(f, flate2::Compression::fast());
        gz.write_all(text.as_bytes()).unwrap();
        gz.finish().unwrap();
    } else {
        std::fs::write(&path, text).unwrap();
    }
    path
}

fn open(path: &PathBuf, bad_rows: BadRowPolicy, threads: Option<ParallelCalls>) -> CsvDataset {
    let options = CsvOptions {
        bad_rows,
        ..CsvOptions::default()
    };
    let ds = CsvDataset::open_with(path, schema(), options).unwrap();
    match threads {
        Some(calls) => ds.with_parse_threads(calls),
        None => ds,
    }
}

type Step = (Result<Example, String>, Position);

/// Every item (errors as messages) with the position after it, then the final position.
fn steps(ds: &mut CsvDataset) -> (Vec<Step>, Position, u64, u64) {
    let mut out = Vec::new();
    while let Some(item) = ds.next_item() {
        out.push((item.map_err(|e| e.to_string()), ds.position()));
    }
    (out, ds.position(), ds.records_read(), ds.skipped_rows())
}

#[test]
fn same_rows_errors_and_positions_as_one_thread() {
    let dir = tempfile::tempdir().unwrap();
    let text = text();
    for name in ["t.csv", "t.csv.gz"] {
        let path = write(&dir, name, &text);
        for policy in [BadRowPolicy::Fail, BadRowPolicy::Skip] {
            let want = steps(&mut open(&path, policy, None));
            assert!(want.0.len() > 5000);
            let errors = want.0.iter().filter(|s| s.0.is_err()).count();
            assert_eq!(errors > 0, policy == BadRowPolicy::Fail);
            assert!(want.0.iter().any(|s| matches!(&s.0, Ok(ex)
                if ex.categorical[0].starts_with("multi\r\nline"))));
            for calls in [Fixed(1), Fixed(2), Fixed(3), Autotune] {
                let got = steps(&mut open(&path, policy, Some(calls)));
                assert_eq!(got.0.len(), want.0.len(), "{name} {policy:?} {calls:?}");
                for (i, (g, w)) in got.0.iter().zip(&want.0).enumerate() {
                    assert_eq!(g, w, "{name} {policy:?} {calls:?} item {i}");
                }
                assert_eq!(got.1, want.1, "final position");
                assert_eq!((got.2, got.3), (want.2, want.3), "records, skipped");
            }
        }
    }
}

#[test]
fn error_messages_name_file_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(&dir, "e.csv", &text());
    let mut ds = open(&path, BadRowPolicy::Fail, Some(Fixed(2)));
    let errors: Vec<String> = ds
        .iter()
        .filter_map(Result::err)
        .map(|e| e.to_string())
        .collect();
    // Line numbers count the newline inside the quoted field of row 5.
    let file = path.display();
    assert_eq!(
        errors[0],
        format!("{file}:20: column x: cannot parse 'bad17' as float (finite)")
    );
    assert_eq!(
        errors[1],
        format!("{file}:26: expected 4 fields as in the header, found 3")
    );
    assert_eq!(
        errors[2],
        format!("{file}:32: column y: empty value and no default")
    );
}

#[test]
fn resume_mid_file_with_threads() {
    let dir = tempfile::tempdir().unwrap();
    let text = text();
    for name in ["r.csv", "r.csv.gz"] {
        let path = write(&dir, name, &text);
        let full = steps(&mut open(&path, BadRowPolicy::Skip, None)).0;
        for k in [0, 1, 600, 1777, 4000, full.len()] {
            // Positions taken with threads restore with or without them, and back.
            for (from, into) in [
                (Some(Fixed(2)), Some(Fixed(2))),
                (None, Some(Fixed(3))),
                (Some(Autotune), None),
            ] {
                let mut ds = open(&path, BadRowPolicy::Skip, from);
                for _ in 0..k {
                    ds.next_item().unwrap().unwrap();
                }
                let json = serde_json::to_string(&ds.position()).unwrap();
                let mut fresh = open(&path, BadRowPolicy::Skip, into);
                fresh
                    .restore(&serde_json::from_str(&json).unwrap())
                    .unwrap();
                let rest = steps(&mut fresh).0;
                assert_eq!(
                    rest,
                    full[k..].to_vec(),
                    "{name} k = {k} {from:?} -> {into:?}"
                );
            }
        }
        // Restoring a running threaded dataset backwards re-reads from there.
        let mut ds = open(&path, BadRowPolicy::Skip, Some(Fixed(2)));
        for _ in 0..100 {
            ds.next_item();
        }
        ds.restore(&full[9].1).unwrap();
        assert_eq!(steps(&mut ds).0, full[10..].to_vec());
    }
}

#[test]
fn threads_switched_on_mid_file_and_changed_go_on_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(&dir, "s.csv", &text());
    let full = steps(&mut open(&path, BadRowPolicy::Fail, None)).0;
    let mut ds = open(&path, BadRowPolicy::Fail, None);
    for _ in 0..50 {
        ds.next_item();
    }
    let mut ds = ds.with_parse_threads(Fixed(2));
    for _ in 50..2100 {
        ds.next_item();
    }
    let mut ds = ds.with_parse_threads(Fixed(3));
    assert_eq!(steps(&mut ds).0, full[2100..].to_vec());
}

#[test]
fn zero_threads_and_read_errors_are_errors_not_panics() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(&dir, "z.csv", &text());
    let mut ds = open(&path, BadRowPolicy::Fail, Some(Fixed(0)));
    let err = ds.next_item().unwrap().unwrap_err().to_string();
    assert_eq!(
        err,
        format!(
            "invalid argument: {}: CSV parsing needs at least 1 thread, got ParallelCalls::Fixed(0)",
            path.display()
        )
    );
    assert!(ds.next_item().is_none());
    // A gzip file cut in half: the rows before the cut, then the read error, then the end.
    let gz = write(&dir, "cut.csv.gz", &text());
    let bytes = std::fs::read(&gz).unwrap();
    std::fs::write(&gz, &bytes[..bytes.len() / 2]).unwrap();
    let want = steps(&mut open(&gz, BadRowPolicy::Skip, None)).0;
    let mut threaded = open(&gz, BadRowPolicy::Skip, Some(Fixed(2)));
    let got = steps(&mut threaded).0;
    assert!(want.last().unwrap().0.is_err());
    assert_eq!(got.len(), want.len());
    assert_eq!(got[..got.len() - 1], want[..want.len() - 1]);
    assert_eq!(got.last().unwrap().0, want.last().unwrap().0);
    assert!(threaded.next_item().is_none());
}

#[test]
fn empty_and_header_only_files() {
    let dir = tempfile::tempdir().unwrap();
    for text in ["x,name,n,y\n", "x,name,n,y\n\n\n", "x,name,n,y"] {
        let path = write(&dir, "h.csv", text);
        let want = steps(&mut open(&path, BadRowPolicy::Fail, None));
        let got = steps(&mut open(&path, BadRowPolicy::Fail, Some(Fixed(2))));
        assert!(got.0.is_empty());
        assert_eq!(got.1, want.1, "{text:?}");
    }
}
