//! Input that is not UTF-8 text, or not a regular file: refused with one line naming the
//! file (and the line and field where there is one), never read with replacement characters,
//! without bound, or blocking for ever.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use datasets::{
    infer_schema, read_idx, BoxDataset, CsvDataset, DatasetExt, Error, Example, IdxDataset, Label,
    ParallelCalls, Schema,
};

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

fn colours() -> Schema {
    Schema::new()
        .float("x")
        .category("colour")
        .int("label")
        .label("label")
}

/// Every row of `path` read with `threads` parse threads (0: on the caller's thread), as
/// rows or error messages.
fn read(path: &Path, schema: Schema, threads: usize) -> Vec<Result<Example, String>> {
    let data = CsvDataset::open(path, schema).unwrap();
    let mut data: BoxDataset<Example> = if threads == 0 {
        Box::new(data)
    } else {
        Box::new(data.with_parse_threads(ParallelCalls::Fixed(threads)))
    };
    data.iter().map(|r| r.map_err(|e| e.to_string())).collect()
}

fn open_error(path: &Path, schema: Schema) -> String {
    CsvDataset::open(path, schema).err().unwrap().to_string()
}

const LATIN1_HINT: &str =
    "the file looks like Latin-1/Windows-1252 or another 8-bit encoding: re-encode it as UTF-8";

#[test]
fn latin1_category_is_an_error_at_its_line_not_a_merged_value() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "latin1.csv",
        b"x,colour,label\n1,blue,0\n2,r\xe9d,1\n3,r\xe8d,0\n",
    );
    let file = path.display();
    for threads in [0, 2] {
        let rows = read(&path, colours(), threads);
        assert_eq!(rows.len(), 3, "{rows:?}");
        assert_eq!(rows[0].as_ref().unwrap().categorical, ["blue"]);
        assert_eq!(
            rows[1].as_ref().unwrap_err(),
            &format!(
                "{file}:3: field 'colour' (column 2) is not valid UTF-8: byte 0xE9 at offset 1 \
                 of 'r\u{fffd}d'; {LATIN1_HINT}"
            )
        );
        let third = rows[2].as_ref().unwrap_err();
        assert!(
            third.starts_with(&format!(
                "{file}:4: field 'colour' (column 2) is not valid UTF-8: byte 0xE8 at offset 1"
            )),
            "{third}"
        );
    }
    // Inference reads the same cells, and stops at the first.
    let inferred = infer_schema(&path, Some("label"), 100).unwrap_err();
    assert!(
        matches!(inferred, Error::NotUtf8 { line: 3, .. }),
        "{inferred}"
    );
}

#[test]
fn latin1_label_number_and_header_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let names = write(dir.path(), "names.csv", b"x,colour,label\n1,red,se\xf1or\n");
    let schema = Schema::new()
        .float("x")
        .category("colour")
        .category("label")
        .label("label");
    let rows = read(&names, schema, 0);
    assert!(
        rows[0]
            .as_ref()
            .unwrap_err()
            .contains(":2: field 'label' (column 3) is not valid UTF-8: byte 0xF1 at offset 2"),
        "{rows:?}"
    );
    // In a numeric column too: the encoding, not "cannot parse", is what is wrong.
    let number = write(dir.path(), "number.csv", b"x,colour,label\n1\xb2,red,0\n");
    let rows = read(&number, colours(), 0);
    assert!(
        rows[0]
            .as_ref()
            .unwrap_err()
            .contains(":2: field 'x' (column 1) is not valid UTF-8: byte 0xB2 at offset 1"),
        "{rows:?}"
    );
    let header = write(
        dir.path(),
        "header.csv",
        b"x,colour,label,na\xefve\n1,red,0,2\n",
    );
    let message = open_error(&header, colours());
    assert_eq!(
        message,
        format!(
            "{}:1: header field 4 is not valid UTF-8: byte 0xEF at offset 2 of 'na\u{fffd}ve'; \
             {LATIN1_HINT}",
            header.display()
        )
    );
    assert!(infer_schema(&header, None, 10)
        .unwrap_err()
        .to_string()
        .contains(":1: header field 4 is not valid UTF-8"));
}

#[test]
fn utf16_and_utf32_files_are_named_by_their_encoding() {
    let dir = tempfile::tempdir().unwrap();
    let text = "x,colour,label\n1,red,0\n";
    let le: Vec<u8> = text.encode_utf16().flat_map(u16::to_le_bytes).collect();
    let be: Vec<u8> = text.encode_utf16().flat_map(u16::to_be_bytes).collect();
    let cases: [(&str, Vec<u8>, &str); 5] = [
        (
            "le_bom.csv",
            [&[0xff, 0xfe][..], &le].concat(),
            "UTF-16 LE text (byte-order mark FF FE), not UTF-8: re-encode it as UTF-8",
        ),
        (
            "be_bom.csv",
            [&[0xfe, 0xff][..], &be].concat(),
            "UTF-16 BE text (byte-order mark FE FF), not UTF-8: re-encode it as UTF-8",
        ),
        (
            "le.csv",
            le,
            "UTF-16 LE text without a byte-order mark (every other byte is NUL), not UTF-8: \
             re-encode it as UTF-8",
        ),
        (
            "utf32.csv",
            [&[0xff, 0xfe, 0, 0][..], b"x\0\0\0"].concat(),
            "UTF-32 LE text (byte-order mark FF FE 00 00), not UTF-8: re-encode it as UTF-8",
        ),
        (
            "zeros.csv",
            vec![0; 1 << 16],
            "binary data, not text (NUL byte at offset 0)",
        ),
    ];
    for (name, bytes, what) in cases {
        let path = write(dir.path(), name, &bytes);
        let expected = format!("{}: {what}", path.display());
        assert_eq!(open_error(&path, colours()), expected);
        let inferred = infer_schema(&path, None, 10).unwrap_err();
        assert_eq!(inferred.to_string(), expected);
    }
}

#[test]
fn utf8_bom_is_not_part_of_the_first_column_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "bom.csv",
        "\u{feff}x,colour,label\n1.5,r\u{e9}d,1\n2,r\u{e8}d,0\n".as_bytes(),
    );
    let schema = infer_schema(&path, Some("label"), 10).unwrap();
    assert_eq!(schema.columns[0].name, "x");
    let mut data = CsvDataset::open(&path, schema).unwrap();
    assert_eq!(data.header(), ["x", "colour", "label"]);
    let rows: Vec<Example> = data.iter().map(Result::unwrap).collect();
    assert_eq!(rows[0].dense, [1.5]);
    // UTF-8 categories stay distinct.
    assert_eq!(rows[0].categorical, ["r\u{e9}d"]);
    assert_eq!(rows[1].categorical, ["r\u{e8}d"]);
    assert_eq!(rows[1].label, Label::Class(0));
}

/// Runs `f` on a thread and gives its result, or `None` if it has not returned within
/// five seconds (a read that blocks).
fn within_seconds<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    let (send, receive) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = send.send(f());
    });
    receive.recv_timeout(Duration::from_secs(5)).ok()
}

#[test]
fn devices_fifos_and_directories_are_refused_up_front() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("eval.csv");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let cases = [
        (PathBuf::from("/dev/zero"), "a character device"),
        (PathBuf::from("/dev/null"), "a character device"),
        (fifo.clone(), "a FIFO (named pipe)"),
        (dir.path().to_path_buf(), "a directory"),
    ];
    for (path, kind) in cases {
        let expected = format!("{} is {kind}, not a regular file", path.display());
        // IDX files are read whole: not tried on /dev/zero, where a missing check would
        // fill memory rather than fail.
        let endless = path == Path::new("/dev/zero");
        let messages = within_seconds({
            let path = path.clone();
            move || {
                let mut messages = vec![
                    CsvDataset::open(&path, colours())
                        .err()
                        .map(|e| e.to_string()),
                    infer_schema(&path, None, 10).err().map(|e| e.to_string()),
                ];
                if !endless {
                    messages.push(read_idx(&path).err().map(|e| e.to_string()));
                    messages.push(IdxDataset::open(&path, &path).err().map(|e| e.to_string()));
                }
                messages
            }
        })
        .unwrap_or_else(|| {
            // Let the blocked open return, so that the thread ends.
            if path == fifo {
                let _ = std::fs::OpenOptions::new().write(true).open(&fifo);
            }
            panic!("opening {} blocked", path.display())
        });
        for message in messages {
            assert_eq!(message.as_deref(), Some(expected.as_str()));
        }
    }
}

#[cfg(unix)]
#[test]
fn a_symlink_to_a_regular_file_is_followed() {
    let dir = tempfile::tempdir().unwrap();
    let target = write(
        dir.path(),
        "data.csv",
        b"x,colour,label\n1,red,0\n2,blue,1\n",
    );
    let link = dir.path().join("link.csv");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let rows = read(&link, colours(), 0);
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[1].as_ref().unwrap().categorical, ["blue"]);
    let to_device = dir.path().join("zero.csv");
    std::os::unix::fs::symlink("/dev/zero", &to_device).unwrap();
    assert_eq!(
        open_error(&to_device, colours()),
        format!(
            "{} is a character device, not a regular file",
            to_device.display()
        )
    );
}

#[test]
fn a_line_that_never_ends_is_refused_at_64_mib() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = b"x,colour,label\n1,red,0\n".to_vec();
    bytes.resize(bytes.len() + (64 << 20) + 1, b'x');
    let path = write(dir.path(), "endless.csv", &bytes);
    for threads in [0, 2] {
        let rows = read(&path, colours(), threads);
        assert_eq!(rows.len(), 2, "{threads} threads");
        assert!(rows[0].is_ok());
        assert_eq!(
            rows[1].as_ref().unwrap_err(),
            &format!(
                "{}:3: record runs past 64 MiB without ending (no line end, or a quote never \
                 closed)",
                path.display()
            )
        );
    }
}
