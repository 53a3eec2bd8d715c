//! [`TfRecordReader`]: the records of one TFRecord file, framing and length checked.
//!
//! A record is `u64 length (LE) | u32 masked CRC-32C of the length bytes | data | u32 masked
//! CRC-32C of the data`. The reader checks the length's CRC before trusting the length, so
//! a damaged length is an error rather than an allocation of any size; the data's CRC is
//! handed to the caller with the data, so that it can be checked where the record is decoded
//! (on a worker thread, for the columnar path).

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::ops::Range;

use flate2::read::{MultiGzDecoder, ZlibDecoder};

use super::crc::masked_crc32c;
use super::record_file::{Framed, RecordFile, RecordMeta};
use super::TfRecordCompression;
use crate::{open_regular, Error};

/// Bytes of a record's header: the length and its CRC.
const HEADER: usize = 12;
/// Bytes of a record's footer: the data's CRC.
const FOOTER: usize = 4;
/// A compressed stream's length is unknown up front, so room for data claimed beyond this is
/// made as it arrives instead of up front.
const TRUSTED_LENGTH: u64 = 64 << 20;

enum Source {
    Plain(File),
    Gzip(MultiGzDecoder<File>),
    Zlib(ZlibDecoder<File>),
}

/// Bytes asked of the file per read, at least: records of MNIST width (3 KiB) come dozens
/// per read call.
const READ: usize = 256 << 10;

/// The records of one file, in order, framed in place in a buffer of the bytes read.
///
/// Records are read two ways: one at a time ([`next`](Self::next), a slice of the buffer),
/// or a batch's worth at a time ([`chunk`](Self::chunk)), whose buffer then goes to the
/// caller whole: the file's bytes are copied once, by the kernel, into the memory they are
/// decoded from.
pub(crate) struct TfRecordReader {
    source: Source,
    file: RecordFile,
    /// Size of a plain file: a length past its end is a truncation, found before reading.
    file_len: Option<u64>,
    /// Bytes read; `buf[pos..]` are not yet framed.
    buf: Vec<u8>,
    pos: usize,
    /// Stream offset of `buf[pos]`: the next record's.
    offset: u64,
    /// Records read.
    records: u64,
    /// Whether the stream has ended.
    eof: bool,
    /// The first bytes of the file, for the hint when the first header is not one.
    magic: [u8; 2],
}

impl TfRecordReader {
    /// Opens `file`, which must be a regular file.
    pub(crate) fn open(file: &RecordFile) -> Result<Self, Error> {
        let handle = open_regular(&file.path)?;
        let io_error = |e| Error::io(&file.path, e);
        let file_len = match file.compression {
            TfRecordCompression::None => Some(handle.metadata().map_err(io_error)?.len()),
            _ => None,
        };
        let mut magic = [0u8; 2];
        let mut peek = handle.try_clone().map_err(io_error)?;
        let got = read_full(&mut peek, &mut magic).map_err(io_error)?;
        peek.seek(SeekFrom::Start(0)).map_err(io_error)?;
        if got < 2 {
            magic = [0; 2];
        }
        let source = match file.compression {
            TfRecordCompression::None => Source::Plain(handle),
            TfRecordCompression::Gzip => Source::Gzip(MultiGzDecoder::new(handle)),
            TfRecordCompression::Zlib => Source::Zlib(ZlibDecoder::new(handle)),
        };
        Ok(TfRecordReader {
            source,
            file: file.clone(),
            file_len,
            buf: Vec::new(),
            pos: 0,
            offset: 0,
            records: 0,
            eof: false,
            magic,
        })
    }

    /// Records read so far and the offset of the next one.
    pub(crate) fn position(&self) -> (u64, u64) {
        (self.records, self.offset)
    }

    /// Appends up to `n` more bytes of the stream to `buf` (into its spare capacity: a
    /// plain file's bytes are not zeroed first); 0 at the end.
    fn read_more(&mut self, n: usize) -> io::Result<usize> {
        let n = n as u64;
        let buf = &mut self.buf;
        match &mut self.source {
            Source::Plain(f) => f.by_ref().take(n).read_to_end(buf),
            Source::Gzip(d) => d.by_ref().take(n).read_to_end(buf),
            Source::Zlib(d) => d.by_ref().take(n).read_to_end(buf),
        }
    }

    /// Makes `need` bytes from `pos` available unless the stream ends first, reading at
    /// least `hint` bytes a time; with `keep`, bytes before `pos` stay where they are (a
    /// chunk being gathered), else they are dropped first. The bytes available.
    fn fill(&mut self, need: usize, hint: usize, keep: bool) -> io::Result<usize> {
        while self.buf.len() - self.pos < need && !self.eof {
            if !keep && self.pos > 0 {
                self.buf.drain(..self.pos);
                self.pos = 0;
            }
            let missing = need - (self.buf.len() - self.pos);
            let want = missing.max(hint);
            self.buf.reserve(want.min(TRUSTED_LENGTH as usize));
            if self.read_more(want)? < want {
                self.eof = true;
            }
        }
        Ok(self.buf.len() - self.pos)
    }

    /// Frames the record at `pos`, reading as needed; its data's range in `buf` and where it
    /// came from, `None` at the end of the stream. `hint`: bytes worth reading ahead.
    fn frame(
        &mut self,
        hint: usize,
        keep: bool,
    ) -> Result<Option<(Range<usize>, RecordMeta)>, Error> {
        let start = self.offset;
        let record = self.records;
        let got = self
            .fill(HEADER, hint, keep)
            .map_err(|e| self.file.error(record, start, read_error(&e)))?;
        if got == 0 {
            return Ok(None);
        }
        if got < HEADER {
            return Err(self.file.error(
                record,
                start,
                format!(
                    "truncated: the file ends {got} bytes into the {HEADER}-byte record header"
                ),
            ));
        }
        let header = &self.buf[self.pos..self.pos + HEADER];
        let length_bytes: [u8; 8] = header[..8].try_into().unwrap_or_default();
        let stored = u32::from_le_bytes(header[8..].try_into().unwrap_or_default());
        let computed = masked_crc32c(&length_bytes);
        if stored != computed {
            return Err(self.file.error(
                record,
                start,
                format!(
                    "length CRC mismatch (stored 0x{stored:08x}, computed 0x{computed:08x}): {}",
                    self.not_a_record_hint(record)
                ),
            ));
        }
        let len = u64::from_le_bytes(length_bytes);
        let total = len.saturating_add((HEADER + FOOTER) as u64);
        if let Some(file_len) = self.file_len {
            if start.saturating_add(total) > file_len {
                return Err(self.file.error(
                    record,
                    start,
                    format!(
                        "truncated: the record holds {len} data bytes but the file ends {} bytes \
                     after its header",
                        file_len.saturating_sub(start + HEADER as u64)
                    ),
                ));
            }
        }
        // A length beyond what a compressed stream holds grows the buffer only as far as
        // the data goes: `fill` reserves at most TRUSTED_LENGTH ahead of the bytes read.
        let total_usize = usize::try_from(total).unwrap_or(usize::MAX);
        let got = self
            .fill(total_usize, hint, keep)
            .map_err(|e| self.file.error(record, start, read_error(&e)))?;
        if (got as u64) < total {
            let data = (got - HEADER) as u64;
            return Err(self.file.error(
                record,
                start,
                if data < len {
                    format!(
                        "truncated: the file ends {data} bytes into the record's {len} data bytes"
                    )
                } else {
                    format!(
                    "truncated: the file ends {} bytes into the record's {FOOTER}-byte data CRC",
                    data - len
                )
                },
            ));
        }
        let data = self.pos + HEADER..self.pos + HEADER + len as usize;
        let crc_bytes: [u8; 4] = self.buf[data.end..data.end + FOOTER]
            .try_into()
            .unwrap_or_default();
        self.pos += total_usize;
        self.offset = start + total;
        self.records += 1;
        Ok(Some((
            data,
            RecordMeta {
                file: 0,
                record,
                offset: start,
                crc: u32::from_le_bytes(crc_bytes),
            },
        )))
    }

    /// The next record: its data's range in [`data`](Self::data) (its CRC not yet checked)
    /// and where it came from; `None` at the end of the file.
    pub(crate) fn next(&mut self) -> Result<Option<(Range<usize>, RecordMeta)>, Error> {
        self.frame(READ, false)
    }

    /// Bytes of the record [`next`](Self::next) returned `range` for.
    pub(crate) fn data(&self, range: Range<usize>) -> &[u8] {
        &self.buf[range]
    }

    /// Up to `size` records in one buffer of their own, taken from `spare` when it has one:
    /// appends each record's range in it and origin to `records`, and says whether framing
    /// stopped at an error (after the records framed before it, which come back with it, so
    /// that errors surface in record order). The bytes read past the last record move to the
    /// reader's next buffer; reads are sized by the records framed so far, so that there are
    /// few.
    pub(crate) fn chunk(
        &mut self,
        size: usize,
        spare: Option<Vec<u8>>,
        records: &mut Framed,
    ) -> (Vec<u8>, Result<(), Error>) {
        let mut fresh = spare.unwrap_or_default();
        fresh.clear();
        fresh.extend_from_slice(&self.buf[self.pos..]);
        self.buf = fresh;
        self.pos = 0;
        let mut result = Ok(());
        while records.len() < size {
            let framed = records.len();
            // Every record so far, on average, times those still to come.
            let hint = self
                .pos
                .checked_div(framed)
                .map_or(READ, |each| each.saturating_mul(size - framed));
            match self.frame(hint.max(HEADER), true) {
                Ok(Some(record)) => records.push(record),
                Ok(None) => break,
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        let rest = self.buf.get(self.pos..).unwrap_or_default().to_vec();
        let mut chunk = std::mem::replace(&mut self.buf, rest);
        chunk.truncate(self.pos);
        self.pos = 0;
        (chunk, result)
    }

    /// Moves to the record after `records` records, which starts at `byte`: a seek in a
    /// plain file, a read from the start of a compressed one (whose byte count must then
    /// agree, or the file is not the one the position was taken from).
    pub(crate) fn reposition(&mut self, records: u64, byte: u64) -> Result<(), Error> {
        let name = self.file.name.clone();
        let mismatch = |what: String| {
            Error::Position(format!(
                "{name}: {what}; the file is not the one the position was taken from"
            ))
        };
        if let (Some(file_len), Source::Plain(f)) = (self.file_len, &mut self.source) {
            if byte > file_len {
                return Err(mismatch(format!(
                    "record {records} starts at byte {byte}, past the end ({file_len} bytes)"
                )));
            }
            // Every record takes at least a header and a footer: a larger count is not one
            // this file can have, and counting on from it would overflow.
            if records > byte / (HEADER + FOOTER) as u64 {
                return Err(mismatch(format!(
                    "{records} records cannot end by byte {byte}"
                )));
            }
            f.seek(SeekFrom::Start(byte))
                .map_err(|e| Error::io(&self.file.path, e))?;
            self.buf.clear();
            self.pos = 0;
            self.eof = false;
            self.offset = byte;
            self.records = records;
            return Ok(());
        }
        *self = TfRecordReader::open(&self.file)?;
        while self.records < records {
            if self.next()?.is_none() {
                return Err(mismatch(format!(
                    "it holds {} records, not {records}",
                    self.records
                )));
            }
        }
        if self.offset != byte {
            return Err(mismatch(format!(
                "record {records} starts at byte {}, not {byte}",
                self.offset
            )));
        }
        Ok(())
    }

    /// Why the first header may not be one: a compressed file read as a plain one.
    fn not_a_record_hint(&self, record: u64) -> &'static str {
        let plain = self.file.compression == TfRecordCompression::None;
        match self.magic {
            [0x1f, 0x8b] if plain && record == 0 => {
                "the file starts like a GZIP stream: read it with compression GZIP (or name it \
                 *.gz)"
            }
            [0x78, 0x01 | 0x5e | 0x9c | 0xda] if plain && record == 0 => {
                "the file starts like a ZLIB stream: read it with compression ZLIB (or name it \
                 *.zlib)"
            }
            _ if record == 0 => "not a TFRecord file, or a damaged one",
            _ => "the record is damaged",
        }
    }
}

/// Reads until `buf` is full or the stream ends; the number of bytes read.
fn read_full(source: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match source.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// A read error inside a record: a damaged compressed stream, usually.
fn read_error(e: &io::Error) -> String {
    format!("cannot read: {e}")
}
