use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

use super::running::{describe, exit_code};
use super::*;

#[test]
fn exit_codes_are_what_a_shell_reports() {
    assert_eq!(exit_code(ExitStatus::from_raw(3 << 8)), 3);
    assert_eq!(exit_code(ExitStatus::from_raw(0)), 0);
    assert_eq!(exit_code(ExitStatus::from_raw(9)), 137);
    assert_eq!(exit_code(ExitStatus::from_raw(15)), 143);
    assert_eq!(
        describe(ExitStatus::from_raw(9)),
        "exited with code 137 (killed by signal 9)"
    );
    assert_eq!(describe(ExitStatus::from_raw(7 << 8)), "exited with code 7");
}

#[test]
fn a_missing_command_is_127() {
    let e = io::Error::from(io::ErrorKind::NotFound);
    let failure = spawn_failure(&OsString::from("no-such-tool"), &e);
    assert_eq!(failure.code, 127);
    assert_eq!(
        failure.message,
        "cannot run 'no-such-tool': command not found"
    );
}
