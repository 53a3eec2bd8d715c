//! Slurm's compressed host lists (`gpu[07-10,12],login1`): only the first host is needed,
//! since Slurm puts rank 0 on the first node of a step.

/// The first host of a Slurm host list, each bracketed range replaced by its first number as
/// written (zero padding kept): `gpu[07-10,12],login1` → `gpu07`, `r[1-2]-n[3,5]` → `r1-n3`.
/// `None` for an empty or malformed list.
pub(crate) fn first_host(list: &str) -> Option<String> {
    let mut host = String::new();
    let mut chars = list.trim().chars();
    while let Some(c) = chars.next() {
        match c {
            ',' => break,
            '[' => {
                let mut ranges = String::new();
                loop {
                    match chars.next()? {
                        ']' => break,
                        '[' => return None,
                        c => ranges.push(c),
                    }
                }
                let first = ranges.split(',').next()?.split('-').next()?;
                for range in ranges.split(',') {
                    let valid = range
                        .split('-')
                        .all(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()));
                    if !valid || range.split('-').count() > 2 {
                        return None;
                    }
                    // Slurm refuses `[5-1]`; taking its 5 would name a host it never gave.
                    if let Some((low, high)) = range.split_once('-') {
                        if by_value(low) > by_value(high) {
                            return None;
                        }
                    }
                }
                host.push_str(first);
            }
            ']' => return None,
            c if c.is_whitespace() => return None,
            c => host.push(c),
        }
    }
    (!host.is_empty()).then_some(host)
}

/// A run of digits as a key ordered by its value, however long (`007` = `7` < `10`).
fn by_value(digits: &str) -> (usize, &str) {
    let significant = digits.trim_start_matches('0');
    (significant.len(), significant)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_host_of_each_form() {
        for (list, first) in [
            ("node1", "node1"),
            ("node1,node2", "node1"),
            ("gpu[07-10,12],login1", "gpu07"),
            ("gpu[3,5-6]", "gpu3"),
            ("rack[1-2]-node[01-04]", "rack1-node01"),
            ("a[9]b", "a9b"),
            (" n-1.cluster ", "n-1.cluster"),
            ("n[09-10]", "n09"),
            ("n[007-7]", "n007"),
        ] {
            assert_eq!(first_host(list).as_deref(), Some(first), "{list}");
        }
    }

    proptest::proptest! {
        #[test]
        fn any_text_has_a_first_host_or_none(list in "[a-z0-9,\\[\\]-]{0,40}|.{0,40}") {
            if let Some(host) = first_host(&list) {
                proptest::prop_assert!(!host.is_empty());
                proptest::prop_assert!(!host.contains(['[', ']', ',']));
            }
        }
    }

    #[test]
    fn malformed_lists_have_no_first_host() {
        for list in [
            "",
            ",n1",
            "n[1-",
            "n[]",
            "n[a-b]",
            "n[5-1]",
            "n[10-9]",
            "n[3,2-01]",
            "n[1-2-3]",
            "n]1",
            "n[1[2]]",
            "a b",
        ] {
            assert_eq!(first_host(list), None, "{list}");
        }
    }
}
