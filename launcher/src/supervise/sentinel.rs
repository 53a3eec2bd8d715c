//! The tasks run in one process group led by a sentinel: a `/bin/sh` that waits for its
//! stdin (a pipe from the launcher) to close, then kills its whole group. The launcher closes
//! that pipe once it has reaped its tasks, which sweeps away whatever they left running; and
//! when the launcher dies in any way (Ctrl-C, SIGTERM, even SIGKILL) the kernel closes the
//! pipe for it, so the tasks die with it — without a signal handler. A terminal's Ctrl-C
//! reaches only the launcher (the tasks are in another process group), which passes it on
//! to them as SIGTERM (`stop_signal.rs`); a second Ctrl-C kills the launcher, and the
//! sentinel then the tasks with SIGKILL, like a lost machine.

use std::io;
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, Command, Stdio};

use super::running::{reap, SETTLE};

/// The leader of the tasks' process group; kills the group when its stdin closes.
pub(super) struct Sentinel {
    child: Child,
    stdin: Option<ChildStdin>,
}

impl Sentinel {
    pub(super) fn start() -> io::Result<Sentinel> {
        let mut child = Command::new("/bin/sh")
            .args(["-c", "read -r _; kill -9 0"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()?;
        let stdin = child.stdin.take();
        Ok(Sentinel { child, stdin })
    }

    /// The process group id the tasks join.
    pub(super) fn group(&self) -> i32 {
        self.child.id() as i32
    }

    /// Kills every process left in the group (the sentinel included) and reaps the sentinel.
    pub(super) fn sweep(mut self) {
        drop(self.stdin.take());
        if reap(&mut self.child, SETTLE).is_none() {
            let _ = self.child.kill();
            let _ = reap(&mut self.child, SETTLE);
        }
    }
}
