//! Reading CSV records fast: quote-free lines are split in place; lines with quotes go
//! through `csv-core` (the parser of the `csv` crate), which handles quoting, escaped
//! quotes and newlines inside quoted fields.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use csv_core::{ReadRecordResult, ReaderBuilder};
use flate2::read::MultiGzDecoder;

use super::regular::open_regular;
use super::text;
use crate::Error;

const BUFFER: usize = 1 << 18;

/// The longest record read: far beyond any real row, it stops a file with no line end
/// (or a quote never closed) from being read into memory whole.
const MAX_RECORD: usize = 64 << 20;

enum Source {
    Plain(File),
    Gz(Box<MultiGzDecoder<File>>),
}

impl Read for Source {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Source::Plain(f) => f.read(buf),
            Source::Gz(g) => g.read(buf),
        }
    }
}

/// One CSV record, borrowed from the reader.
pub(crate) enum Record<'a> {
    /// A line without quotes (terminator and trailing `\r` removed): split on the delimiter.
    Line(&'a [u8]),
    /// A record parsed by csv-core: unescaped field bytes and the end offset of each field.
    Fields {
        /// The fields' bytes, back to back.
        data: &'a [u8],
        /// End of each field in `data`.
        ends: &'a [usize],
    },
}

impl<'a> Record<'a> {
    /// The fields, as slices.
    pub(crate) fn fields(&self, delimiter: u8) -> Vec<&'a [u8]> {
        match *self {
            Record::Line(line) => line.split(move |&b| b == delimiter).collect(),
            Record::Fields { data, ends } => {
                let mut start = 0;
                ends.iter()
                    .map(|&end| {
                        let field = &data[start..end];
                        start = end;
                        field
                    })
                    .collect()
            }
        }
    }
}

/// A buffered record reader over a plain or gzip file, tracking byte offsets and line
/// numbers of record starts.
pub(crate) struct RecordReader {
    source: Source,
    path: PathBuf,
    /// The path as text, for messages.
    file: String,
    max_record: usize,
    gz: bool,
    buf: Vec<u8>,
    pos: usize,
    end: usize,
    eof: bool,
    /// Byte offset (in the decompressed stream) of `buf[pos]`.
    offset: u64,
    /// 1-based line number of `buf[pos]`.
    line: u64,
    core: csv_core::Reader,
    out: Vec<u8>,
    ends: Vec<usize>,
}

fn is_gzip(path: &Path, file: &mut File) -> io::Result<bool> {
    if path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("gz"))
    {
        return Ok(true);
    }
    let mut magic = [0u8; 2];
    let mut got = 0;
    while got < 2 {
        match file.read(&mut magic[got..])? {
            0 => break,
            n => got += n,
        }
    }
    file.seek(SeekFrom::Start(0))?;
    Ok(got == 2 && magic == [0x1f, 0x8b])
}

impl RecordReader {
    /// Opens `path` (gzip if named `*.gz` or starting with the gzip magic bytes), which must
    /// be a regular file, refuses it if it starts as UTF-16, UTF-32 or binary data, and
    /// skips a UTF-8 byte-order mark.
    pub(crate) fn open(path: &Path, delimiter: u8) -> Result<Self, Error> {
        let mut file = open_regular(path)?;
        let gz = is_gzip(path, &mut file).map_err(|e| Error::io(path, e))?;
        let source = if gz {
            Source::Gz(Box::new(MultiGzDecoder::new(file)))
        } else {
            Source::Plain(file)
        };
        let mut reader = RecordReader {
            source,
            path: path.to_path_buf(),
            file: path.display().to_string(),
            max_record: MAX_RECORD,
            gz,
            buf: vec![0; BUFFER],
            pos: 0,
            end: 0,
            eof: false,
            offset: 0,
            line: 1,
            core: ReaderBuilder::new().delimiter(delimiter).build(),
            out: vec![0; 1024],
            ends: vec![0; 64],
        };
        while reader.end < text::SNIFF && !reader.eof {
            reader.fill()?;
        }
        if let Some(message) = text::not_text(&reader.buf[..reader.end]) {
            return Err(Error::Format {
                file: reader.file,
                message,
            });
        }
        // Spreadsheets and Windows editors write one; it is not part of the first name.
        if reader.buf[..reader.end].starts_with(b"\xef\xbb\xbf") {
            reader.advance(3);
        }
        Ok(reader)
    }

    /// The same reader with a lower record length limit, so that tests need not write
    /// [`MAX_RECORD`] bytes.
    #[cfg(test)]
    pub(crate) fn with_max_record(mut self, max_record: usize) -> Self {
        self.max_record = max_record;
        self
    }

    /// Whether the file is gzip (and so cannot seek).
    pub(crate) fn is_gzip(&self) -> bool {
        self.gz
    }

    /// Byte offset and line number of the next record (or of the blank lines before it).
    pub(crate) fn position(&self) -> (u64, u64) {
        (self.offset, self.line)
    }

    /// Moves a plain file's reader to `byte`, which must be a record start, at `line`.
    pub(crate) fn seek(&mut self, byte: u64, line: u64) -> Result<(), Error> {
        let Source::Plain(file) = &mut self.source else {
            let unsupported =
                io::Error::new(io::ErrorKind::Unsupported, "gzip streams cannot seek");
            return Err(Error::io(&self.path, unsupported));
        };
        file.seek(SeekFrom::Start(byte))
            .map_err(|e| Error::io(&self.path, e))?;
        self.pos = 0;
        self.end = 0;
        self.eof = false;
        self.offset = byte;
        self.line = line;
        Ok(())
    }

    fn advance(&mut self, n: usize) {
        self.pos += n;
        self.offset += n as u64;
    }

    /// Reads more data after `end`, first moving the unread bytes to the front (and
    /// growing the buffer if they fill it, to little more than the record limit).
    fn fill(&mut self) -> Result<(), Error> {
        if self.pos > 0 {
            self.buf.copy_within(self.pos..self.end, 0);
            self.end -= self.pos;
            self.pos = 0;
        }
        if self.end == self.buf.len() {
            let grown = (self.buf.len() * 2).min(self.max_record + BUFFER);
            self.buf.resize(grown.max(self.buf.len() + 1), 0);
        }
        loop {
            match self.source.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(());
                }
                Ok(n) => {
                    self.end += n;
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(Error::io(&self.path, e)),
            }
        }
    }

    fn too_long(&self, line: u64) -> Error {
        Error::RecordTooLong {
            file: self.file.clone(),
            line,
            limit: self.max_record,
        }
    }

    /// The next record and the line it starts on; `None` at the end of the file.
    /// Blank lines are skipped.
    pub(crate) fn next_record(&mut self) -> Result<Option<(u64, Record<'_>)>, Error> {
        // How many bytes from `pos` are known to hold no line end: each read looks only
        // at the new bytes, not again at the whole of a long line.
        let mut searched = 0;
        loop {
            let avail = &self.buf[self.pos..self.end];
            let newline = memchr::memchr(b'\n', &avail[searched..]).map(|i| searched + i);
            if newline.is_none() && !self.eof {
                if avail.len() > self.max_record {
                    return Err(self.too_long(self.line));
                }
                searched = avail.len();
                self.fill()?;
                continue;
            }
            if avail.is_empty() {
                return Ok(None);
            }
            let len = newline.unwrap_or(avail.len());
            if len > self.max_record {
                return Err(self.too_long(self.line));
            }
            let mut content = &avail[..len];
            if let [rest @ .., b'\r'] = content {
                content = rest;
            }
            let consumed = len + usize::from(newline.is_some());
            let content_len = content.len();
            let quoted = memchr::memchr2(b'"', b'\r', content).is_some();
            if content_len > 0 && quoted {
                return self.next_quoted();
            }
            let (start, line) = (self.pos, self.line);
            self.advance(consumed);
            self.line += u64::from(newline.is_some());
            searched = 0;
            if content_len > 0 {
                return Ok(Some((
                    line,
                    Record::Line(&self.buf[start..start + content_len]),
                )));
            }
        }
    }

    /// Parses one record starting at `pos` with csv-core.
    fn next_quoted(&mut self) -> Result<Option<(u64, Record<'_>)>, Error> {
        let (line, start) = (self.line, self.offset);
        self.core.reset();
        let (mut nout_total, mut nend_total) = (0, 0);
        loop {
            let input = &self.buf[self.pos..self.end];
            let (result, nin, nout, nend) = self.core.read_record(
                input,
                &mut self.out[nout_total..],
                &mut self.ends[nend_total..],
            );
            let newlines = memchr::memchr_iter(b'\n', &input[..nin]).count() as u64;
            self.advance(nin);
            self.line += newlines;
            nout_total += nout;
            nend_total += nend;
            if self.offset - start > self.max_record as u64 {
                return Err(self.too_long(line));
            }
            match result {
                ReadRecordResult::InputEmpty => {
                    if !self.eof {
                        self.fill()?;
                    }
                }
                ReadRecordResult::OutputFull => {
                    let n = self.out.len() * 2;
                    self.out.resize(n, 0);
                }
                ReadRecordResult::OutputEndsFull => {
                    let n = self.ends.len() * 2;
                    self.ends.resize(n, 0);
                }
                ReadRecordResult::Record => {
                    return Ok(Some((
                        line,
                        Record::Fields {
                            data: &self.out[..nout_total],
                            ends: &self.ends[..nend_total],
                        },
                    )));
                }
                ReadRecordResult::End => return Ok(None),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records(text: &[u8], delimiter: u8) -> Vec<(u64, Vec<Vec<u8>>, u64)> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.csv");
        std::fs::write(&path, text).unwrap();
        let mut r = RecordReader::open(&path, delimiter).unwrap();
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
            b"x\n\"unterminated\n",
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
        let mut r = RecordReader::open(&path, b',')
            .unwrap()
            .with_max_record(max);
        let mut out = Vec::new();
        loop {
            match r.next_record() {
                Ok(Some((_, rec))) => {
                    out.push(rec.fields(b',').iter().map(|f| f.to_vec()).collect())
                }
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
        let mut r = RecordReader::open(&path, b',').unwrap();
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
}
