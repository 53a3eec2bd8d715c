//! Re-printing a task's output line by line, each line prefixed with the task's name.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};

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

/// Set once a write to stdout has failed: nothing more is written there.
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);
/// Set once a write to stderr has failed.
static STDERR_CLOSED: AtomicBool = AtomicBool::new(false);

/// Writes one whole line to stdout under its lock, so lines of concurrent tasks never mix.
/// A stdout closed under the launcher (`estimator-launch … | head`) is no reason to stop the
/// job: from the first failed write on, lines are dropped, while the tasks' output is still
/// drained (a task blocked on a full pipe would stall its whole cluster).
pub fn to_stdout(line: &[u8]) {
    write_line(io::stdout().lock(), &STDOUT_CLOSED, line);
}

/// As [`to_stdout`], to stderr.
pub fn to_stderr(line: &[u8]) {
    write_line(io::stderr().lock(), &STDERR_CLOSED, line);
}

/// A line of the launcher's own on stderr, `estimator-launch: ` first; dropped once stderr
/// is closed (`eprintln!` would panic there, and the launcher's end kills every task).
pub fn note(message: &str) {
    to_stderr(format!("estimator-launch: {message}\n").as_bytes());
}

fn write_line(mut out: impl Write, closed: &AtomicBool, line: &[u8]) {
    if closed.load(Ordering::Relaxed) {
        return;
    }
    if out.write_all(line).and_then(|()| out.flush()).is_err() {
        closed.store(true, Ordering::Relaxed);
    }
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
    fn a_failed_write_stops_the_writes_that_follow() {
        struct Closed(usize);
        impl Write for Closed {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                self.0 += 1;
                Err(io::ErrorKind::BrokenPipe.into())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let closed = AtomicBool::new(false);
        let mut pipe = Closed(0);
        write_line(&mut pipe, &closed, b"one\n");
        write_line(&mut pipe, &closed, b"two\n");
        assert_eq!(pipe.0, 1);
        assert!(closed.load(Ordering::Relaxed));
    }

    #[test]
    fn bytes_that_are_not_utf8_pass_through() {
        assert_eq!(relayed(b"\xff\xfe\n"), [b"[worker:1] \xff\xfe\n".to_vec()]);
    }
}
