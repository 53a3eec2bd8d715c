//! `OMP_NUM_THREADS`: how many threads one CPU operation may use, the variable PyTorch and
//! OpenMP read and `estimator-launch` sets for each task it starts on one machine.

use crate::Error;

/// The variable.
pub const OMP_NUM_THREADS: &str = "OMP_NUM_THREADS";

/// This process's `OMP_NUM_THREADS`: `None` when unset, else [`parse_omp_num_threads`] of it.
pub fn omp_num_threads_from_env() -> Option<Result<usize, Error>> {
    omp_num_threads_text_from_env().map(|value| parse_omp_num_threads(&value))
}

/// This process's `OMP_NUM_THREADS` as set, for a program that passes it on (the launcher
/// divides it among the tasks it starts); `None` when unset or not Unicode.
pub fn omp_num_threads_text_from_env() -> Option<String> {
    std::env::var(OMP_NUM_THREADS).ok()
}

/// A value of `OMP_NUM_THREADS` as a number of threads; OpenMP's list form for nested
/// levels ("4,2") gives its first, outer one; an error naming the variable and the value
/// when it names no positive number.
pub fn parse_omp_num_threads(value: &str) -> Result<usize, Error> {
    match value
        .split(',')
        .next()
        .unwrap_or("")
        .trim()
        .parse::<usize>()
    {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(Error::variable(
            OMP_NUM_THREADS,
            format!("{OMP_NUM_THREADS}={value:?} is not a positive number of threads"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_positive_number_or_the_first_of_a_list_and_anything_else_is_refused() {
        assert_eq!(parse_omp_num_threads("8").unwrap(), 8);
        assert_eq!(parse_omp_num_threads(" 6 , 2").unwrap(), 6);
        for unusable in ["0", "many", "", "-1", ",4"] {
            let error = parse_omp_num_threads(unusable).unwrap_err();
            assert!(
                matches!(&error, Error::Variable { variable, .. } if variable == OMP_NUM_THREADS),
                "{error:?}"
            );
            assert_eq!(
                error.to_string(),
                format!("OMP_NUM_THREADS={unusable:?} is not a positive number of threads")
            );
        }
    }
}
