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
pub(crate) struct CsvRecordReader {
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

impl CsvRecordReader {
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
        let mut reader = CsvRecordReader {
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
            // At the end of the file csv-core ends the record even inside a quoted field,
            // taking a cut-off file's text as a whole last row; a line end in its place ends
            // the record the same way everywhere else, and stays in a quoted field.
            let end = input.is_empty() && self.eof;
            let input: &[u8] = if end { b"\n" } else { input };
            let (result, nin, nout, nend) = self.core.read_record(
                input,
                &mut self.out[nout_total..],
                &mut self.ends[nend_total..],
            );
            if end && result == ReadRecordResult::InputEmpty {
                return Err(Error::Format {
                    file: self.file.clone(),
                    message: format!(
                        "line {line}: the file ends inside a quoted field (a quote never \
                         closed, or the file is truncated)"
                    ),
                });
            }
            let nin = if end { 0 } else { nin };
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
mod tests;
