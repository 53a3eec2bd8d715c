//! Properties of CSV reading: any bytes read as rows or errors, never a panic, with one
//! parse thread or several; typed values written out read back exactly.

use proptest::prelude::*;

use super::*;
use crate::{Dataset, Label, ParallelCalls};

fn schema() -> Schema {
    Schema::new()
        .float("x")
        .int("n")
        .category("c")
        .int("y")
        .label("y")
}

/// Reads every row of `bytes` (after a valid header) with `threads` parse threads; stops at
/// the first error that ends the file.
fn read_all(bytes: &[u8], threads: usize) -> Vec<Result<Example, Error>> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("data.csv");
    let mut text = b"x,n,c,y\n".to_vec();
    text.extend_from_slice(bytes);
    std::fs::write(&path, text).unwrap();
    let Ok(dataset) = CsvDataset::open(&path, schema()) else {
        return Vec::new();
    };
    let mut dataset = dataset.with_parse_threads(ParallelCalls::Fixed(threads));
    let mut rows = Vec::new();
    while let Some(row) = dataset.next_item() {
        rows.push(row);
        if rows.len() > 10_000 {
            break;
        }
    }
    rows
}

proptest! {
    #[test]
    fn any_bytes_are_rows_or_errors(bytes in prop::collection::vec(any::<u8>(), 0..2000)) {
        for threads in [1, 3] {
            let _ = read_all(&bytes, threads);
        }
    }

    #[test]
    fn any_header_opens_or_is_an_error(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("any.csv");
        std::fs::write(&path, &bytes).unwrap();
        let _ = CsvDataset::open(&path, schema());
        let _ = crate::infer_schema(&path, Some("y"), 100);
    }

    #[test]
    fn typed_rows_read_back_exactly(
        rows in prop::collection::vec(
            (
                any::<f32>().prop_filter("finite", |x| x.is_finite()),
                any::<i32>(),
                "[a-zA-Z][a-zA-Z0-9 _-]{0,10}",
                0u32..1000,
            ),
            1..50,
        ),
        threads in 1usize..4,
    ) {
        let text: String = rows
            .iter()
            .map(|(x, n, c, y)| format!("{x},{n},{},{y}\n", c.trim()))
            .collect();
        let read = read_all(text.as_bytes(), threads);
        prop_assert_eq!(read.len(), rows.len());
        for (got, (x, n, c, y)) in read.into_iter().zip(&rows) {
            let got = got.unwrap();
            prop_assert_eq!(got.dense, vec![*x, *n as f32]);
            prop_assert_eq!(got.categorical, vec![c.trim().to_string()]);
            prop_assert_eq!(got.label, Label::Class(*y));
        }
    }
}
