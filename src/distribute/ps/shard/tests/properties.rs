//! Pushes of any shape: one that fits the variables is applied whole; one that does not is
//! refused, naming the variable, and leaves every variable as it was.

use proptest::prelude::*;

use super::*;

proptest! {
    #[test]
    fn a_push_is_applied_whole_or_refused_with_the_state_intact(
        gradients in prop::collection::vec(
            (prop::sample::select(vec!["a", "b", "c"]), 0usize..8, -4.0f32..4.0),
            1..4,
        ),
    ) {
        let t0 = Instant::now();
        let mut shard = shard(t0);
        shard.init(init(1, 0), t0).unwrap();
        let before = values(&mut shard, t0);
        let sizes = BTreeMap::from([("a", 4), ("b", 6)]);
        let fits = gradients.iter().all(|(path, len, _)| sizes.get(path) == Some(len));
        let push = Push {
            gradients: gradients
                .iter()
                .map(|(path, len, g)| (path.to_string(), vec![*g; *len]))
                .collect(),
            ..push(0, 0, 0.0)
        };
        match answered(shard.push(push, t0)) {
            Ok(pushed) => {
                prop_assert!(fits);
                prop_assert_eq!(pushed.step, 1);
            }
            Err(error) => {
                prop_assert!(!fits);
                let message = error.to_string();
                let named = gradients.iter().any(|(path, _, _)| message.contains(path));
                prop_assert!(named, "{}", message);
                prop_assert_eq!(values(&mut shard, t0), before);
            }
        }
    }
}
