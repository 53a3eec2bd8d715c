//! Writes a sample run for `scripts/check_tensorboard.py` without training anything: train
//! events in MODEL_DIR, eval events in MODEL_DIR/eval, and the matching log in
//! MODEL_DIR/train.log. With `--wrong` the log's values disagree with the events, which the
//! check must catch.
//!
//! Run: `cargo run --example summary_sample -- MODEL_DIR [--wrong]`, then
//! `python scripts/check_tensorboard.py MODEL_DIR --train-tags loss,global_step/sec,learning_rate
//! --eval-tags accuracy,average_loss,loss --expect-log MODEL_DIR/train.log --histograms`.

use std::io::Write;
use std::path::PathBuf;

use estimator::summary::SummaryWriter;
use estimator::AtomicFile;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut model_dir = None;
    let mut wrong = false;
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--wrong" => wrong = true,
            _ if model_dir.is_none() => model_dir = Some(PathBuf::from(arg)),
            _ => return Err(format!("unexpected argument '{arg}'").into()),
        }
    }
    let model_dir = model_dir.ok_or("usage: summary_sample MODEL_DIR [--wrong]")?;

    let mut log = String::new();
    let mut train = SummaryWriter::create(&model_dir)?;
    for step in (1..=300_u64).step_by(100) {
        let loss = 1.0 / (step as f64 + 0.37);
        train.scalar("loss", loss, step);
        train.scalar("global_step/sec", 250.0 + step as f64, step);
        train.scalar("learning_rate", 0.01, step);
        let weights: Vec<f32> = (0..1000)
            .map(|i| ((i * 37 % 101) as f32 - 50.0) / 7.0)
            .collect();
        train.histogram("dense/weight", &weights, step);
        let logged = if wrong && step == 201 {
            loss * 1.01
        } else {
            loss
        };
        log += &format!("INFO estimator: loss = {logged}, step = {step} (0.4 sec)\n");
    }
    train.try_flush()?;
    drop(train);

    let mut eval = SummaryWriter::create(&model_dir.join("eval"))?;
    let (accuracy, average_loss) = (0.8765_f64, 0.123_f64);
    eval.scalar("accuracy", accuracy, 300);
    eval.scalar("average_loss", average_loss, 300);
    eval.scalar("loss", average_loss * 32.0, 300);
    eval.try_flush()?;
    drop(eval);

    let accuracy = if wrong { accuracy + 0.01 } else { accuracy };
    log += &format!(
        "INFO estimator: eval metrics: {{\"accuracy\": {accuracy}, \"average_loss\": \
         {average_loss}, \"global_step\": 300, \"loss\": {}}}\n",
        average_loss * 32.0
    );
    let log_path = model_dir.join("train.log");
    // Atomic, as the check reads it against the events: never a log cut short.
    let mut file = AtomicFile::create(&log_path)?;
    file.write_all(log.as_bytes())
        .map_err(|e| format!("{}: {e}", log_path.display()))?;
    file.commit()?;
    println!("sample run written to {}", model_dir.display());
    Ok(())
}
