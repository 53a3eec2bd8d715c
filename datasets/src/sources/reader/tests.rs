use super::*;

fn records(text: &[u8], delimiter: u8) -> Vec<(u64, Vec<Vec<u8>>, u64)> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.csv");
    std::fs::write(&path, text).unwrap();
    let mut r = CsvRecordReader::open(&path, delimiter).unwrap();
    let mut out = Vec::new();
    while let Some((line, rec)) = r.next_record().unwrap() {
        let fields = rec.fields(delimiter).iter().map(|f| f.to_vec()).collect();
        out.push((line, fields, r.position().0));
    }
    out
}

/// What the `csv` crate makes of the same text: (line, fields, byte after).
fn reference(text: &[u8], delimiter: u8) -> Vec<(u64, Vec<Vec<u8>>, u64)> {
    let mut r = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .delimiter(delimiter)
        .from_reader(text);
    let mut rec = csv::ByteRecord::new();
    let mut out = Vec::new();
    while r.read_byte_record(&mut rec).unwrap() {
        let line = rec.position().unwrap().line();
        out.push((
            line,
            rec.iter().map(<[u8]>::to_vec).collect(),
            r.position().byte(),
        ));
    }
    out
}

#[test]
fn agrees_with_the_csv_crate() {
    let cases: &[&[u8]] = &[
        b"a,b,c\n1,2,3\n4,5,6\n",
        b"a,b\n1,2",
        b"a,b\r\n1,2\r\n\r\n3,4\r\n",
        b"\n\na,b\n\n1,2\n\n",
        b"a,\"b,c\",d\n\"x\"\"y\",2,3\n",
        b"a,b\n\"multi\nline\",2\nnext,3\n",
        b"a,b\n\"multi\r\nline\",2\r\nnext,3\r\n",
        b"a,,b\n,,\n",
        b"a;b\n1;\"2;3\"\n",
        b"only\r\nlines\rwith\rcr\n",
        b"",
        b"\n",
        b"\"\"\n",
    ];
    for case in cases {
        let delimiter = if case.contains(&b';') { b';' } else { b',' };
        let ours = records(case, delimiter);
        let theirs = reference(case, delimiter);
        let lossy = String::from_utf8_lossy(case);
        assert_eq!(ours.len(), theirs.len(), "{lossy:?}");
        for (o, t) in ours.iter().zip(&theirs) {
            // The csv crate gives a record after blank lines (or after `\r\n`) the line
            // where the blank lines (or the `\n`) begin; we give the line it is on.
            if !case.contains(&b'\r') && !case.windows(2).any(|w| w == b"\n\n") {
                assert_eq!(o.0, t.0, "line in {lossy:?}");
            }
            assert_eq!(o.1, t.1, "fields in {lossy:?}");
        }
    }
}

#[test]
fn crlf_line_numbers() {
    let lines: Vec<u64> = records(b"a,b\r\n1,2\r\n\r\n3,\"4\"\r\n5,6", b',')
        .iter()
        .map(|r| r.0)
        .collect();
    assert_eq!(lines, [1, 2, 4, 5]);
    let lines: Vec<u64> = records(b"\n\na,b\n\n1,2\n\n", b',')
        .iter()
        .map(|r| r.0)
        .collect();
    assert_eq!(lines, [3, 5]);
}

#[test]
fn long_records_grow_the_buffers() {
    let mut text = Vec::new();
    let long = "x".repeat(BUFFER * 2 + 17);
    text.extend_from_slice(format!("a,b\n{long},1\n\"{long}\",2\n").as_bytes());
    let recs = records(&text, b',');
    assert_eq!(recs.len(), 3);
    assert_eq!(recs[1].1[0].len(), long.len());
    assert_eq!(recs[2].1[0].len(), long.len());
    assert_eq!(recs[2].0, 3);
}

/// The records of `text` read with a record limit of `max` bytes, up to the first error.
fn limited(text: &[u8], max: usize) -> (Vec<Vec<Vec<u8>>>, Option<String>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.csv");
    std::fs::write(&path, text).unwrap();
    let mut r = CsvRecordReader::open(&path, b',')
        .unwrap()
        .with_max_record(max);
    let mut out = Vec::new();
    loop {
        match r.next_record() {
            Ok(Some((_, rec))) => out.push(rec.fields(b',').iter().map(|f| f.to_vec()).collect()),
            Ok(None) => return (out, None),
            Err(e) => {
                let message = e.to_string();
                let file = format!("{}:", path.display());
                return (out, Some(message.replacen(&file, "", 1)));
            }
        }
    }
}

#[test]
fn records_past_the_limit_are_errors_naming_their_line() {
    let long = |n| "x".repeat(n);
    let too_long =
        "record runs past 1000 bytes without ending (no line end, or a quote never closed)";
    // Up to the limit is read, past it is not, with or without a line end.
    let (recs, err) = limited(
        format!("a\n{}\n{}", long(1000), long(1000)).as_bytes(),
        1000,
    );
    assert_eq!((recs.len(), err), (3, None));
    let (recs, err) = limited(format!("a\n\n{}\nb\n", long(1001)).as_bytes(), 1000);
    assert_eq!(recs.len(), 1);
    assert_eq!(err.unwrap(), format!("3: {too_long}"));
    let (recs, err) = limited(format!("a\n{}", long(BUFFER * 3)).as_bytes(), BUFFER);
    assert_eq!(recs.len(), 1);
    assert!(err.unwrap().starts_with("2: record runs past 262144 bytes"));
    // A quote never closed takes in the lines after it, up to the limit.
    let lines = "1,2\n".repeat(400);
    let (recs, err) = limited(format!("a,b\n1,\"2\n{lines}").as_bytes(), 1000);
    assert_eq!(recs.len(), 1);
    assert_eq!(err.unwrap(), format!("2: {too_long}"));
    let (recs, err) = limited(format!("a,b\n1,\"2\n{lines}\"\n3,4\n").as_bytes(), 4000);
    assert_eq!((recs.len(), err), (3, None));
}

#[test]
fn bom_is_skipped_and_seek_works() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.csv");
    std::fs::write(&path, b"\xef\xbb\xbfa,b\n1,2\n3,4\n").unwrap();
    let mut r = CsvRecordReader::open(&path, b',').unwrap();
    assert!(!r.is_gzip());
    let (_, rec) = r.next_record().unwrap().unwrap();
    assert_eq!(rec.fields(b','), vec![b"a".as_slice(), b"b"]);
    r.next_record().unwrap();
    let (byte, line) = r.position();
    assert_eq!((byte, line), (11, 3));
    let (l, rec) = r.next_record().unwrap().unwrap();
    assert_eq!((l, rec.fields(b',')), (3, vec![b"3".as_slice(), b"4"]));
    assert!(r.next_record().unwrap().is_none());
    r.seek(byte, line).unwrap();
    let (l, rec) = r.next_record().unwrap().unwrap();
    assert_eq!((l, rec.fields(b',')[0]), (3, b"3".as_slice()));
}

#[test]
fn a_file_that_ends_inside_quotes_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.csv");
    let ends = "the file ends inside a quoted field (a quote never closed, or the file is \
                truncated)";
    for (text, good) in [
        (&b"a,b\n1,2\n3,\"cut off\n"[..], 2),
        (b"a,b\n1,\"x\"\"", 1),
        (b"a,b\n\"only", 1),
    ] {
        std::fs::write(&path, text).unwrap();
        let mut r = CsvRecordReader::open(&path, b',').unwrap();
        for _ in 0..good {
            r.next_record().unwrap().unwrap();
        }
        let err = r.next_record().err().unwrap().to_string();
        let line = good + 1;
        assert_eq!(err, format!("{}: line {line}: {ends}", path.display()));
    }
    // Quotes closed at the end of the file, with or without a line end, are fine.
    for text in [&b"a,b\n1,\"x\"\n"[..], b"a,b\n1,\"x\"", b"a,b\n1,x\"y"] {
        std::fs::write(&path, text).unwrap();
        let mut r = CsvRecordReader::open(&path, b',').unwrap();
        r.next_record().unwrap().unwrap();
        assert_eq!(r.next_record().unwrap().unwrap().1.fields(b',').len(), 2);
        assert!(r.next_record().unwrap().is_none());
    }
}
