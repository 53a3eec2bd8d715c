//! Re-printing a task's output line by line, each line prefixed with the task's name.

use std::io::{self, BufRead, BufReader, Read, Write};

/// Reads `source` to its end and hands every line to `emit` as one buffer: `prefix`, the
/// line, and a newline (added to a last line that lacks one). Bytes need not be UTF-8.
pub fn relay_lines(source: impl Read, prefix: &str, mut emit: impl FnMut(&[u8])) {
    let mut reader = BufReader::new(source);
    let mut line = Vec::new();
    loop {
        line.clear();
        line.extend_from_slice(prefix.as_bytes());
        match reader.read_until(b'\n', &mut line) {
            Ok(0) => return,
            Ok(_) => {
                if line.last() != Some(&b'\n') {
                    line.push(b'\n');
                }
                emit(&line);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => return,
        }
    }
}

/// Writes one whole line to stdout under its lock, so lines of concurrent tasks never mix.
/// Errors (a closed stdout: `estimator-launch … | head`) are ignored; the task's output is
/// still drained.
pub fn to_stdout(line: &[u8]) {
    let mut out = io::stdout().lock();
    let _ = out.write_all(line).and_then(|()| out.flush());
}

/// As [`to_stdout`], to stderr.
pub fn to_stderr(line: &[u8]) {
    let mut out = io::stderr().lock();
    let _ = out.write_all(line).and_then(|()| out.flush());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn relayed(input: &[u8]) -> Vec<Vec<u8>> {
        let mut lines = Vec::new();
        relay_lines(input, "[worker:1] ", |line| lines.push(line.to_vec()));
        lines
    }

    #[test]
    fn every_line_is_prefixed_and_ends_with_a_newline() {
        assert_eq!(
            relayed(b"loss = 1.5\n\nstep 2"),
            [
                b"[worker:1] loss = 1.5\n".to_vec(),
                b"[worker:1] \n".to_vec(),
                b"[worker:1] step 2\n".to_vec()
            ]
        );
        assert!(relayed(b"").is_empty());
    }

    #[test]
    fn bytes_that_are_not_utf8_pass_through() {
        assert_eq!(relayed(b"\xff\xfe\n"), [b"[worker:1] \xff\xfe\n".to_vec()]);
    }
}
