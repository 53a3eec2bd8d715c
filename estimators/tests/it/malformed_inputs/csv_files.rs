//! Malformed CSV files: bad values, rows of another width, labels out of range, text that is
//! not UTF-8; each refused naming the file and line.

use std::path::{Path, PathBuf};

use super::{bounded, train};
use crate::cli::{assert_user_error, iris};

/// Iris' training file with data row `row` (0-based) changed by `change`, as `name`.
fn iris_changed(dir: &Path, name: &str, row: usize, change: impl Fn(&mut Vec<String>)) -> PathBuf {
    let text = std::fs::read_to_string(iris("iris_train.csv")).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let mut cells: Vec<String> = lines[row + 1].split(',').map(str::to_string).collect();
    change(&mut cells);
    lines[row + 1] = cells.join(",");
    let path = dir.join(name);
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

#[test]
fn malformed_csv_files_are_refused_naming_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut cases: Vec<(PathBuf, String, Vec<&str>)> = Vec::new();
    let mut n = 0;
    let mut name = || {
        n += 1;
        format!("case{n}.csv")
    };
    let bad_values = ["abc", "nan", "inf", "-inf", "1e39", "1,5", "0x10", "1.2.3"];
    for (column, bad) in bad_values.iter().enumerate() {
        let places = [
            (column * 7, column % 4),
            (column * 11 + 3, (column + 1) % 4),
            (119 - column, (column + 2) % 4),
        ];
        for (row, col) in places {
            let file = name();
            let path = iris_changed(d, &file, row, |cells| cells[col] = bad.to_string());
            let needle = if *bad == "1,5" {
                format!("{file}:{}: expected 5 fields", row + 2)
            } else {
                format!("{file}:{}: column", row + 2)
            };
            cases.push((path, needle, vec![]));
        }
    }
    for row in [0, 5, 50, 119] {
        let file = name();
        let path = iris_changed(d, &file, row, |cells| {
            cells.pop();
        });
        cases.push((
            path,
            format!(
                "{file}:{}: expected 5 fields as in the header, found 4",
                row + 2
            ),
            vec![],
        ));
        let file = name();
        let path = iris_changed(d, &file, row, |cells| cells.push("9".into()));
        cases.push((
            path,
            format!(
                "{file}:{}: expected 5 fields as in the header, found 6",
                row + 2
            ),
            vec![],
        ));
    }
    for col in 0..4 {
        let file = name();
        let path = iris_changed(d, &file, 10 + col, |cells| cells[col] = String::new());
        let needle = format!("{file}:{}: column", 12 + col);
        cases.push((path, needle, vec![]));
    }
    for label in ["3", "7", "4294967295"] {
        let file = name();
        let path = iris_changed(d, &file, 20, |cells| cells[4] = label.into());
        let needle =
            format!("{file}:22: column label: label {label} is out of range for 3 classes");
        cases.push((path, needle, vec!["--n-classes", "3"]));
    }
    let header = "sepal_length_cm,sepal_width_cm,petal_length_cm,petal_width_cm,label";
    let files: [(&str, &[u8], &str); 6] = [
        ("empty.csv", b"", "empty.csv"),
        (
            "header_only.csv",
            header.as_bytes(),
            "header_only.csv: no data rows",
        ),
        ("no_label.csv", b"a,b\n1,2\n", "no_label.csv"),
        (
            "binary.csv",
            &[0, 159, 146, 150, 255, 0, 10, 1, 2],
            "binary.csv",
        ),
        (
            "twice.csv",
            b"a,a,label\n1,2,0\n",
            "twice.csv: line 1: the header names column 'a' twice",
        ),
        (
            "text_label.csv",
            b"a,label\n1,0\n2,x\n",
            "text_label.csv:3: column label",
        ),
    ];
    for (file, bytes, needle) in files {
        let path = d.join(file);
        std::fs::write(&path, bytes).unwrap();
        cases.push((path, needle.to_string(), vec![]));
    }
    assert!(cases.len() >= 40, "{} cases", cases.len());
    for (i, (path, needle, extra)) in cases.iter().enumerate() {
        let output = bounded(&mut train(&d.join(format!("m{i}")), path, extra));
        assert_user_error(output, needle);
    }
}

/// Iris' training file with a column `colour` after the label, holding `colour(i)` in data
/// row `i` (0-based), as `name`.
fn iris_coloured(dir: &Path, name: &str, colour: impl Fn(usize) -> Vec<u8>) -> PathBuf {
    let text = std::fs::read_to_string(iris("iris_train.csv")).unwrap();
    let mut bytes = Vec::new();
    for (i, line) in text.lines().enumerate() {
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b',');
        match i {
            0 => bytes.extend_from_slice(b"colour"),
            _ => bytes.extend(colour(i - 1)),
        }
        bytes.push(b'\n');
    }
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

#[test]
fn text_that_is_not_utf8_is_refused_naming_the_encoding() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Decoded with replacement characters, `r\xe9d` and `r\xe8d` would both be `r\u{fffd}d`:
    // one category where the file has two.
    let latin1 = |i: usize| match i % 3 {
        0 => b"blue".to_vec(),
        1 => b"r\xe9d".to_vec(),
        _ => b"r\xe8d".to_vec(),
    };
    let mut cases: Vec<(PathBuf, String, Vec<String>)> = vec![(
        iris_coloured(d, "latin1.csv", latin1),
        "latin1.csv:3: field 'colour' (column 6) is not valid UTF-8: byte 0xE9 at offset 1 of \
         'r\u{fffd}d'; the file looks like Latin-1/Windows-1252"
            .into(),
        vec![],
    )];
    // Past the rows schema inference reads: a schema given, the rows are read for training.
    let late = |i: usize| match i {
        117 => b"gr\xfcn".to_vec(),
        _ => b"blue".to_vec(),
    };
    let schema = d.join("schema.json");
    std::fs::write(
        &schema,
        r#"{"columns": [{"name": "sepal_length_cm", "kind": "Float"},
            {"name": "sepal_width_cm", "kind": "Float"},
            {"name": "petal_length_cm", "kind": "Float"},
            {"name": "petal_width_cm", "kind": "Float"},
            {"name": "label", "kind": "Int"},
            {"name": "colour", "kind": "Category"}], "label": "label"}"#,
    )
    .unwrap();
    cases.push((
        iris_coloured(d, "late.csv", late),
        "late.csv:119: field 'colour' (column 6) is not valid UTF-8: byte 0xFC at offset 2".into(),
        vec!["--schema".into(), schema.display().to_string()],
    ));
    let header = "sepal_length_cm,sepal_width_cm,petal_length_cm,petal_width_cm,label";
    let iris_text = std::fs::read_to_string(iris("iris_train.csv")).unwrap();
    let le: Vec<u8> = iris_text
        .encode_utf16()
        .flat_map(u16::to_le_bytes)
        .collect();
    let be: Vec<u8> = iris_text
        .encode_utf16()
        .flat_map(u16::to_be_bytes)
        .collect();
    let files: [(&str, Vec<u8>, &str); 5] = [
        (
            "latin1_header.csv",
            [header.as_bytes(), b",co\xf6lour\n1,2,3,4,0,red\n"].concat(),
            "latin1_header.csv:1: header field 6 is not valid UTF-8: byte 0xF6 at offset 2",
        ),
        (
            "utf16le.csv",
            [&[0xff, 0xfe][..], &le].concat(),
            "utf16le.csv: UTF-16 LE text (byte-order mark FF FE), not UTF-8: re-encode it as UTF-8",
        ),
        (
            "utf16be.csv",
            [&[0xfe, 0xff][..], &be].concat(),
            "utf16be.csv: UTF-16 BE text (byte-order mark FE FF), not UTF-8: re-encode it as UTF-8",
        ),
        (
            "utf16_no_mark.csv",
            le,
            "utf16_no_mark.csv: UTF-16 LE text without a byte-order mark",
        ),
        (
            "zeros.csv",
            vec![0; 4096],
            "zeros.csv: binary data, not text (NUL byte at offset 0)",
        ),
    ];
    for (name, bytes, needle) in files {
        let path = d.join(name);
        std::fs::write(&path, bytes).unwrap();
        cases.push((path, needle.into(), vec![]));
    }
    // A file with no line end is refused at 64 MiB, not read into memory whole.
    let endless = d.join("endless.csv");
    let mut bytes = format!("{header}\n1,2,3,4,0\n").into_bytes();
    bytes.resize(bytes.len() + (64 << 20) + 1, b'7');
    std::fs::write(&endless, bytes).unwrap();
    cases.push((
        endless,
        "endless.csv:3: record runs past 64 MiB without ending".into(),
        vec![],
    ));
    for (i, (path, needle, extra)) in cases.iter().enumerate() {
        let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
        let output = bounded(&mut train(&d.join(format!("m{i}")), path, &extra));
        assert_user_error(output, needle);
    }
}
