use super::*;
use crate::{Error, Label};

fn ex(dense: &[f32], cats: &[&str], label: Label) -> Example {
    Example {
        dense: dense.to_vec(),
        categorical: cats.iter().map(|s| s.to_string()).collect(),
        label,
    }
}

fn three() -> Vec<Example> {
    vec![
        ex(&[1.0, 2.0], &["red", "a"], Label::Name("x".into())),
        ex(&[3.0, -0.5], &["", "b"], Label::Name("y".into())),
        ex(&[5.0, 6.0], &["blue", "c"], Label::Name("".into())),
    ]
}

#[test]
fn from_examples_lays_out_columns_and_round_trips() {
    let examples = three();
    let batch = ColumnarBatch::from_examples(&examples).unwrap();
    assert_eq!((batch.rows, batch.dense_width), (3, 2));
    assert_eq!(batch.dense, [1.0, 2.0, 3.0, -0.5, 5.0, 6.0]);
    assert_eq!(batch.dense_row(1), [3.0, -0.5]);
    assert_eq!(batch.categorical.len(), 2);
    assert_eq!(
        batch.categorical[0].iter().collect::<Vec<_>>(),
        ["red", "", "blue"]
    );
    assert_eq!(batch.categorical[1].get(2), "c");
    assert_eq!(batch.label(0), LabelRef::Name("x"));
    assert!(matches!(&batch.labels, Labels::Name(c) if c.len() == 3));
    assert_eq!(batch.to_examples(), examples);
    batch.check().unwrap();
}

#[test]
fn borrowed_rows_show_what_each_example_holds() {
    let examples = three();
    let batch = ColumnarBatch::from_examples(&examples).unwrap();
    assert_eq!(batch.rows().len(), 3);
    for (row, example) in batch.rows().zip(&examples) {
        assert_eq!(row.dense(), example.dense.as_slice());
        assert_eq!(row.categorical_len(), 2);
        let cats: Vec<&str> = (0..2).map(|c| row.categorical(c)).collect();
        assert_eq!(cats, example.categorical);
        assert_eq!(row.label().to_label(), example.label);
    }
    assert_eq!(batch.row(1).categorical(1), "b");
}

#[test]
fn class_float_and_missing_labels() {
    let classes = [
        ex(&[0.5], &[], Label::Class(7)),
        ex(&[1.5], &[], Label::Class(2)),
    ];
    let batch = ColumnarBatch::from_examples(&classes).unwrap();
    assert_eq!(batch.labels, Labels::Class(vec![7, 2]));
    assert_eq!(batch.to_examples(), classes);
    let floats = [ex(&[], &[], Label::Float(0.25))];
    let batch = ColumnarBatch::from_examples(&floats).unwrap();
    assert_eq!((batch.rows, batch.dense_width), (1, 0));
    assert_eq!(batch.labels, Labels::Float(vec![0.25]));
    assert!(batch.dense_row(0).is_empty());
    let none = [ex(&[1.0], &[], Label::None), ex(&[2.0], &[], Label::None)];
    let batch = ColumnarBatch::from_examples(&none).unwrap();
    assert_eq!(batch.labels, Labels::None);
    assert_eq!(batch.label(1), LabelRef::None);
    assert_eq!(batch.to_examples(), none);
    let empty = ColumnarBatch::from_examples(&[]).unwrap();
    assert!(empty.is_empty());
    assert!(empty.to_examples().is_empty());
}

#[test]
fn inconsistent_rows_are_errors_naming_the_row_and_field() {
    let cases = [
        (
            ex(&[1.0], &["a", "b"], Label::Name("z".into())),
            "ColumnarBatch::from_examples: row 2: 1 dense values, not as in row 0",
        ),
        (
            ex(&[1.0, 2.0], &["a"], Label::Name("z".into())),
            "ColumnarBatch::from_examples: row 2: 1 categorical values, not as in row 0",
        ),
        (
            ex(&[1.0, 2.0], &["a", "b"], Label::Class(1)),
            "ColumnarBatch::from_examples: row 2: label: a class id label, not as in row 0",
        ),
    ];
    for (bad, message) in cases {
        let mut rows = three();
        rows[2] = bad;
        let err = ColumnarBatch::from_examples(&rows).unwrap_err();
        assert!(matches!(err, Error::Layout { .. }));
        assert_eq!(err.to_string(), message);
    }
}

#[test]
fn serde_round_trip_and_inconsistent_json_is_an_error() {
    let batch = ColumnarBatch::from_examples(&three()).unwrap();
    let json = serde_json::to_string(&batch).unwrap();
    let back: ColumnarBatch = serde_json::from_str(&json).unwrap();
    assert_eq!(back, batch);
    let mut value: serde_json::Value = serde_json::from_str(&json).unwrap();
    value["rows"] = 4.into();
    let err = serde_json::from_value::<ColumnarBatch>(value).unwrap_err();
    assert!(
        err.to_string().contains("6 dense values for 4 rows of 2"),
        "{err}"
    );
    let mut short = batch.clone();
    short.labels = Labels::Class(vec![1]);
    assert_eq!(
        short.check().unwrap_err().to_string(),
        "ColumnarBatch: 1 labels for 3 rows"
    );
}

#[test]
fn dropped_batches_give_their_buffers_back() {
    let recycler = Recycler::default();
    let mut batch = ColumnarBatch::recycled(&recycler);
    for e in three() {
        batch.push_row(&e, "test").unwrap();
    }
    let dense_ptr = batch.dense.as_ptr();
    // Dropped on another thread, as after a prefetch.
    std::thread::spawn(move || drop(batch)).join().unwrap();
    assert_eq!(recycler.available(), 1);
    let mut again = ColumnarBatch::recycled(&recycler);
    assert_eq!(recycler.available(), 0);
    assert!(again.is_empty());
    let row = ex(&[9.0, 8.0], &["q", "r"], Label::Class(4));
    again.push_row(&row, "test").unwrap();
    assert_eq!(
        again.dense.as_ptr(),
        dense_ptr,
        "the dense buffer is reused"
    );
    assert_eq!(again.to_examples(), vec![row]);
    // A clone has buffers of its own and does not fill the pool.
    drop(again.clone());
    assert_eq!(recycler.available(), 0);
    drop(again);
    assert_eq!(recycler.available(), 1);
}
