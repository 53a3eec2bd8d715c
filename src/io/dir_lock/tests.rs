use super::*;

/// The lock file opened and locked by hand, as another process would hold it.
fn held_elsewhere(dir: &Path, owner: &str) -> File {
    std::fs::create_dir_all(dir).unwrap();
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(dir.join(LOCK_FILE))
        .unwrap();
    file.try_lock().unwrap();
    write!(file, "{owner}").unwrap();
    file
}

#[test]
fn a_directory_held_elsewhere_is_refused_naming_its_owner() {
    let dir = tempfile::tempdir().unwrap();
    let model_dir = dir.path().join("model");
    let other = held_elsewhere(&model_dir, "pid 4242 on trainer-7 (training, since 1)");
    let err = DirLock::acquire(&model_dir, "training")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("in use by pid 4242 on trainer-7 (training, since 1)"),
        "{err}"
    );
    assert!(err.starts_with(&model_dir.display().to_string()), "{err}");
    drop(other);
    // Released (the other process ended or died): this run takes it over.
    let lock = DirLock::acquire(&model_dir, "training").unwrap();
    let owner = std::fs::read_to_string(model_dir.join(LOCK_FILE)).unwrap();
    assert!(
        owner.starts_with(&format!("pid {} on ", std::process::id())),
        "{owner}"
    );
    drop(lock);
}

#[test]
fn a_lock_file_that_is_a_fifo_is_refused_not_waited_on() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join(LOCK_FILE);
    rustix::fs::mkfifoat(rustix::fs::CWD, &fifo, rustix::fs::Mode::RWXU).unwrap();
    let err = DirLock::acquire(dir.path(), "training").err().unwrap();
    assert!(err.to_string().contains("is not a regular file"), "{err}");
}

#[test]
fn a_garbage_lock_file_gives_a_short_one_line_owner() {
    let dir = tempfile::tempdir().unwrap();
    let garbage = format!("pid 7 on h\r\n{}\u{1b}[2J", "x".repeat(1 << 20));
    let _other = held_elsewhere(dir.path(), &garbage);
    let err = DirLock::acquire(dir.path(), "training")
        .unwrap_err()
        .to_string();
    assert!(!err.contains(['\n', '\r', '\u{1b}']), "{err:?}");
    assert!(err.len() < 1024, "{} bytes", err.len());
    assert!(err.contains("in use by pid 7 on h"), "{err}");
}

#[test]
fn taking_the_lock_removes_what_interrupted_writes_left_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let left = [
        ".ckpt-300.ckpt.tmp-4242",
        ".checkpoint.tmp-7",
        ".run_config.json.tmp-1",
        ".run_config.json.tmp-1-0",
    ];
    let kept = [
        "ckpt-300.ckpt",
        "checkpoint",
        ".hidden",
        ".x.tmp-",
        ".y.tmp-12a",
        ".z.tmp-12-",
        ".w.tmp-12-3-4",
    ];
    for name in left.iter().chain(&kept) {
        std::fs::write(dir.path().join(name), b"x").unwrap();
    }
    // An export cut short before its rename, with what it had written.
    std::fs::create_dir(dir.path().join(".tmp-1800000000-6")).unwrap();
    std::fs::write(dir.path().join(".tmp-1800000000-6/model.safetensors"), b"x").unwrap();
    let other_dirs = [".tmp-5", ".tmp-x-6", "1800000000", ".ckpt.tmp-3"];
    for name in other_dirs {
        std::fs::create_dir(dir.path().join(name)).unwrap();
    }
    let _lock = DirLock::acquire(dir.path(), "training").unwrap();
    for name in left.iter().chain(&[".tmp-1800000000-6"]) {
        assert!(!dir.path().join(name).exists(), "{name} left behind");
    }
    for name in kept.iter().chain(&other_dirs) {
        assert!(dir.path().join(name).exists(), "{name} removed");
    }
}

#[test]
fn a_directory_removed_or_replaced_under_its_lock_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let model_dir = dir.path().join("model");
    let lock = DirLock::acquire(&model_dir, "training").unwrap();
    lock.ensure_present().unwrap();
    std::fs::remove_dir_all(&model_dir).unwrap();
    let err = lock.ensure_present().unwrap_err().to_string();
    assert!(err.starts_with(&model_dir.display().to_string()), "{err}");
    assert!(err.contains("removed (or replaced)"), "{err}");
    // Made again by someone else: not the directory this run locked.
    std::fs::create_dir_all(&model_dir).unwrap();
    std::fs::write(model_dir.join(LOCK_FILE), b"").unwrap();
    assert!(lock.ensure_present().is_err());
}

#[test]
fn a_held_lock_keeps_others_out_is_shared_in_process_and_cleared_when_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let first = DirLock::acquire(dir.path(), "training").unwrap();
    let second = DirLock::acquire(dir.path(), "export").unwrap();
    let raw = File::open(dir.path().join(LOCK_FILE)).unwrap();
    assert!(matches!(raw.try_lock(), Err(TryLockError::WouldBlock)));
    drop(first);
    assert!(
        matches!(raw.try_lock(), Err(TryLockError::WouldBlock)),
        "still shared"
    );
    drop(second);
    raw.try_lock().expect("released with the last handle");
    raw.unlock().unwrap();
    let owner = std::fs::read_to_string(dir.path().join(LOCK_FILE)).unwrap();
    assert_eq!(owner, "", "a released lock names no owner");
}

#[test]
fn a_file_that_vanished_while_the_directory_is_being_removed_is_reported_as_the_removal() {
    let dir = tempfile::tempdir().unwrap();
    let model_dir = dir.path().join("model");
    let lock = DirLock::acquire(&model_dir, "training").unwrap();
    let index = model_dir.join("checkpoint");
    let vanished = || Error::io(&index, std::io::ErrorKind::NotFound.into());

    // The removal reaches the lock file only after the write failed.
    let remover = {
        let model_dir = model_dir.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            std::fs::remove_dir_all(&model_dir).unwrap();
        })
    };
    let err = lock.explain_write_failure(vanished()).to_string();
    remover.join().unwrap();
    assert!(err.contains("removed (or replaced)"), "{err}");
}

#[test]
fn a_write_failure_with_the_directory_in_place_is_reported_as_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let lock = DirLock::acquire(dir.path(), "training").unwrap();
    let index = dir.path().join("checkpoint");

    for kind in [
        std::io::ErrorKind::NotFound,
        std::io::ErrorKind::PermissionDenied,
    ] {
        let started = Instant::now();
        let err = lock.explain_write_failure(Error::io(&index, kind.into()));
        assert!(
            matches!(&err, Error::Io { source, .. } if source.kind() == kind),
            "{err}"
        );
        assert!(err.to_string().starts_with(&index.display().to_string()));
        assert!(started.elapsed() >= REMOVAL_GRACE, "an I/O error waits");
    }

    let started = Instant::now();
    let err = lock.explain_write_failure(Error::Config("not of I/O".into()));
    assert!(
        matches!(&err, Error::Config(text) if text == "not of I/O"),
        "{err}"
    );
    assert!(started.elapsed() < REMOVAL_GRACE, "only an I/O error waits");
}
