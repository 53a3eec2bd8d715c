//! Corrupted checkpoints, refused naming the file; a corrupt index, passed over for the
//! checkpoint files themselves.

use std::path::{Path, PathBuf};

use super::{bounded, train};
use crate::cli::{assert_user_error, bin, iris};

/// Damage done to a checkpoint file.
type Corruption = Box<dyn Fn(&Path)>;

#[test]
fn corrupted_checkpoints_are_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let trained = dir.path().join("trained");
    let iris_train = PathBuf::from(iris("iris_train.csv"));
    assert!(bounded(&mut train(&trained, &iris_train, &[]))
        .status
        .success());
    let checkpoint = std::fs::read_dir(&trained)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "ckpt"))
        .expect("a checkpoint");
    let name = checkpoint
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    let good = std::fs::read(&checkpoint).unwrap();
    let corruptions: Vec<(&str, Corruption)> = vec![
        ("truncated", {
            let g = good.clone();
            Box::new(move |p: &Path| std::fs::write(p, &g[..g.len() / 2]).unwrap())
        }),
        ("a flipped byte", {
            let g = good.clone();
            Box::new(move |p: &Path| {
                let mut bytes = g.clone();
                let at = bytes.len() - 10;
                bytes[at] ^= 0x40;
                std::fs::write(p, bytes).unwrap()
            })
        }),
        (
            "empty",
            Box::new(|p: &Path| std::fs::write(p, b"").unwrap()),
        ),
        (
            "garbage",
            Box::new(|p: &Path| std::fs::write(p, b"not a checkpoint").unwrap()),
        ),
        (
            "removed",
            Box::new(|p: &Path| std::fs::remove_file(p).unwrap()),
        ),
    ];
    for (i, (what, corrupt)) in corruptions.iter().enumerate() {
        let copy = dir.path().join(format!("copy{i}"));
        std::fs::create_dir(&copy).unwrap();
        for entry in std::fs::read_dir(&trained).unwrap() {
            let path = entry.unwrap().path();
            if path.is_file() {
                std::fs::copy(&path, copy.join(path.file_name().unwrap())).unwrap();
            }
        }
        corrupt(&copy.join(&name));
        let mut evaluate = bin();
        evaluate
            .args(["evaluate", "--eval", &iris("iris_test.csv"), "--model-dir"])
            .arg(&copy);
        let output = bounded(&mut evaluate);
        assert!(!output.status.success(), "{what}: evaluated anyway");
        assert_user_error(output, &name);
    }
    // A corrupt index is not trusted: the checkpoint files themselves are found and read.
    let copy = dir.path().join("bad_index");
    std::fs::create_dir(&copy).unwrap();
    for entry in std::fs::read_dir(&trained).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            std::fs::copy(&path, copy.join(path.file_name().unwrap())).unwrap();
        }
    }
    std::fs::write(copy.join("checkpoint"), b"\xff\x00 not an index").unwrap();
    let mut evaluate = bin();
    evaluate
        .args([
            "evaluate",
            "--json",
            "--eval",
            &iris("iris_test.csv"),
            "--model-dir",
        ])
        .arg(&copy);
    let output = bounded(&mut evaluate);
    assert!(output.status.success(), "{output:?}");
    assert!(String::from_utf8_lossy(&output.stdout).contains(r#""global_step":5"#));
}
