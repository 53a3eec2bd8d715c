use super::*;

#[test]
fn defaults_follow_tf_and_round_trip_through_json() {
    let dir = tempfile::tempdir().unwrap();
    let config = RunConfig::new(dir.path())
        .with_save_checkpoints_steps(50)
        .with_keep_checkpoint_max(0)
        .with_tf_random_seed(7)
        .with_power_sgd(PowerSgd::new(4).with_start_step(10));
    assert_eq!(RunConfig::new("x").keep_checkpoint_max, Some(5));
    assert_eq!(RunConfig::new("x").save_summary_steps, 100);
    assert_eq!(RunConfig::new("x").power_sgd, None);
    assert_eq!(config.save_checkpoints, CheckpointEvery::Steps(50));
    assert_eq!(config.keep_checkpoint_max, None);
    config.save().unwrap();
    assert_eq!(RunConfig::load(dir.path()).unwrap(), config);
}
