use std::os::unix::fs::PermissionsExt;

use super::*;

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn mode(path: &Path) -> u32 {
    fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn the_old_file_stays_until_a_commit_and_a_dropped_write_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.jsonl");
    fs::write(&path, "old\n").unwrap();

    let mut failed = AtomicFile::create(&path).unwrap();
    failed.write_all(b"half").unwrap();
    failed.flush().unwrap();
    assert_eq!(fs::read_to_string(&path).unwrap(), "old\n");
    drop(failed);
    assert_eq!(fs::read_to_string(&path).unwrap(), "old\n");
    assert_eq!(
        entries(dir.path()),
        ["out.jsonl"],
        "a dropped write leaves nothing"
    );

    let mut done = AtomicFile::create(&path).unwrap();
    done.write_all(b"new\n").unwrap();
    assert_eq!(fs::read_to_string(&path).unwrap(), "old\n");
    done.commit().unwrap();
    assert_eq!(fs::read_to_string(&path).unwrap(), "new\n");
    assert_eq!(entries(dir.path()), ["out.jsonl"]);

    let err = AtomicFile::create(dir.path()).err().unwrap().to_string();
    assert!(err.contains("it is a directory, not a file"), "{err}");
    let missing = dir.path().join("no/such/dir.json");
    assert!(write(&missing, b"{}").is_err());
}

#[test]
fn a_replaced_file_keeps_its_mode_and_a_private_one_is_the_owner_s_alone() {
    let dir = tempfile::tempdir().unwrap();
    let shared = dir.path().join("shared.txt");
    fs::write(&shared, "old").unwrap();
    fs::set_permissions(&shared, fs::Permissions::from_mode(0o640)).unwrap();
    write(&shared, b"new").unwrap();
    assert_eq!(mode(&shared), 0o640);

    let key = dir.path().join("task.key");
    fs::write(&key, "old").unwrap();
    fs::set_permissions(&key, fs::Permissions::from_mode(0o644)).unwrap();
    let mut file = AtomicFile::create_private(&key).unwrap();
    file.write_all(b"secret").unwrap();
    file.commit().unwrap();
    assert_eq!(mode(&key), 0o600);
    let new_key = dir.path().join("new.key");
    AtomicFile::create_private(&new_key)
        .unwrap()
        .commit()
        .unwrap();
    assert_eq!(mode(&new_key), 0o600);
}

#[test]
fn a_symlink_s_target_is_replaced_and_a_fifo_written_through() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("target.txt");
    fs::write(&target, "old").unwrap();
    let link = dir.path().join("link.txt");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let mut file = AtomicFile::create(&link).unwrap();
    file.write_all(b"new").unwrap();
    assert_eq!(fs::read_to_string(&target).unwrap(), "old");
    file.commit().unwrap();
    assert!(fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(fs::read_to_string(&target).unwrap(), "new");

    let fifo = dir.path().join("fifo");
    rustix::fs::mkfifoat(rustix::fs::CWD, &fifo, rustix::fs::Mode::RWXU).unwrap();
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || fs::read_to_string(fifo).unwrap())
    };
    let mut piped = AtomicFile::create(&fifo).unwrap();
    piped.write_all(b"streamed").unwrap();
    piped.commit().unwrap();
    assert!(!fs::metadata(&fifo).unwrap().is_file(), "still a FIFO");
    assert_eq!(reader.join().unwrap(), "streamed");
}

/// The directory a process that aborts mid-write writes in (see the test below).
const ABORT_DIR: &str = "ATOMIC_FILE_ABORT_DIR";

#[test]
#[ignore = "run by a_process_that_dies_mid_write_leaves_the_old_file_and_no_temp_file"]
fn abort_mid_write() {
    let dir = PathBuf::from(std::env::var_os(ABORT_DIR).expect("run by the test below"));
    let mut file = AtomicFile::create(&dir.join("model.bin")).unwrap();
    file.write_all(&[7; 1 << 16]).unwrap();
    file.flush().unwrap();
    // No destructor runs: the process is gone as under `kill -9`.
    std::process::abort();
}

#[test]
fn a_process_that_dies_mid_write_leaves_the_old_file_and_no_temp_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("model.bin");
    fs::write(&path, "old").unwrap();
    let status = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "tests::abort_mid_write",
            "--ignored",
            "--nocapture",
        ])
        .env(ABORT_DIR, dir.path())
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(!status.success(), "the writer died");
    assert_eq!(fs::read_to_string(&path).unwrap(), "old");
    // A file system without unnamed files (`O_TMPFILE`) keeps the named temp file.
    let unnamed = rustix::fs::openat(
        rustix::fs::CWD,
        dir.path(),
        rustix::fs::OFlags::TMPFILE | rustix::fs::OFlags::WRONLY,
        rustix::fs::Mode::RUSR,
    )
    .is_ok();
    if unnamed {
        assert_eq!(entries(dir.path()), ["model.bin"]);
    }
}
