//! Opening an input file: only a regular file (or a symlink to one) is read. A device or
//! a FIFO may never end (`/dev/zero`) or block for ever with no writer; a directory cannot
//! be read as data at all.

use std::fs::{File, FileType, Metadata};
use std::path::Path;

use crate::Error;

/// Opens `path` for reading, refusing anything that is not a regular file.
pub fn open_regular(path: &Path) -> Result<File, Error> {
    // Looked at before opening: opening a FIFO for reading blocks until a writer comes.
    check(
        path,
        &std::fs::metadata(path).map_err(|e| Error::io(path, e))?,
    )?;
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    // And again on what was opened, in case the path was replaced in between.
    check(path, &file.metadata().map_err(|e| Error::io(path, e))?)?;
    Ok(file)
}

fn check(path: &Path, metadata: &Metadata) -> Result<(), Error> {
    match kind(metadata.file_type()) {
        None => Ok(()),
        Some(kind) => Err(Error::NotRegularFile {
            path: path.to_path_buf(),
            kind,
        }),
    }
}

/// What a file that is not regular is, for messages; `None` for a regular file.
fn kind(file_type: FileType) -> Option<&'static str> {
    if file_type.is_file() {
        return None;
    }
    if file_type.is_dir() {
        return Some("a directory");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if file_type.is_char_device() {
            return Some("a character device");
        }
        if file_type.is_block_device() {
            return Some("a block device");
        }
        if file_type.is_fifo() {
            return Some("a FIFO (named pipe)");
        }
        if file_type.is_socket() {
            return Some("a socket");
        }
    }
    Some("a special file")
}
