//! The protobuf encoding: merged and unpacked Examples read as prost reads them; malformed
//! records are errors that leave the batch as it was.

use super::*;

#[test]
fn protobuf_merge_semantics() {
    let spec = spec(
        r#"{"features": {"x": {"kind": "fixed", "shape": [2], "dtype": "float32"},
                          "n": {"kind": "fixed", "shape": [], "dtype": "int64"}}}"#,
    );
    // Two serialized Examples back to back are one merged Example: a name given in both
    // takes the later entry.
    let mut merged = record(&[("x", floats(&[1.0, 2.0])), ("n", ints(&[1]))]);
    merged.extend(record(&[("x", floats(&[3.0, 4.0]))]));
    assert_eq!(row(&spec, &merged).unwrap().dense, [3.0, 4.0, 1.0]);
    let prost = TfExample::decode(merged.as_slice()).unwrap();
    assert_eq!(prost.features.unwrap().feature["x"], floats(&[3.0, 4.0]));
    // Unpacked values (another writer's choice) read the same as packed ones.
    let mut unpacked_list = Vec::new();
    for v in [5.0f32, 6.0] {
        unpacked_list.push(0x0d); // field 1, 32-bit
        unpacked_list.extend_from_slice(&v.to_le_bytes());
    }
    let ints_list = [0x08u8, 0x07]; // field 1, varint 7
    let entry = |name: &[u8], kind: u8, list: &[u8]| {
        let mut feature = vec![(kind << 3) | 2, list.len() as u8];
        feature.extend_from_slice(list);
        let mut entry = vec![0x0a, name.len() as u8];
        entry.extend_from_slice(name);
        entry.extend_from_slice(&[0x12, feature.len() as u8]);
        entry.extend_from_slice(&feature);
        let mut features = vec![0x0a, entry.len() as u8];
        features.extend_from_slice(&entry);
        let mut example = vec![0x0a, features.len() as u8];
        example.extend_from_slice(&features);
        example
    };
    let mut hand = entry(b"x", 2, &unpacked_list);
    hand.extend(entry(b"n", 3, &ints_list));
    assert_eq!(row(&spec, &hand).unwrap().dense, [5.0, 6.0, 7.0]);
    let prost = TfExample::decode(hand.as_slice()).unwrap();
    assert_eq!(prost.features.unwrap().feature["x"], floats(&[5.0, 6.0]));
}

#[test]
fn malformed_records_are_errors_and_the_batch_stays_as_it_was() {
    let spec = spec(MIXED);
    let parser = ExampleParser::new(&spec).unwrap();
    let mut batch = ColumnarBatch::default();
    parser.begin(&mut batch);
    let mut found = Found::new();
    let good = mixed_record();
    parser.parse_row(&good, &mut batch, &mut found).unwrap();
    let before = batch.clone();
    let mut bad = vec![record(&[("image", floats(&[1.0]))])];
    bad.push(good[..good.len() - 3].to_vec());
    bad.push(vec![0x0a, 0x05, 0x01]);
    bad.push(b"not a tf.Example at all".to_vec());
    // The last feature fails after the others were written: all of them are taken back.
    bad.push(record(&[
        ("pair", strings(&[b"p", b"q"])),
        ("label", ints(&[2])),
        ("image", floats(&[1.0, -2.5, 3.0, 0.25])),
        ("count", ints(&[-7])),
        ("colour", strings(&[b"red"])),
        ("tags", strings(&[b"a", b"b"])),
    ]));
    for record in &bad {
        let err = parser
            .parse_row(record, &mut batch, &mut found)
            .unwrap_err();
        assert!(!err.to_string().is_empty());
        assert_eq!(batch, before, "{err}");
        batch.check().unwrap();
    }
    let err = parser
        .parse_row(&[0x0a, 0x05, 0x01], &mut batch, &mut found)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "malformed tf.Example: a length past the end"
    );
    // A list of another wire type inside one feature: the error names the feature.
    let mut entry = vec![0x0a, 5];
    entry.extend_from_slice(b"image");
    entry.extend_from_slice(&[0x12, 2, 0x10, 0x01]); // float_list as a varint
    let mut features = vec![0x0a, entry.len() as u8];
    features.extend_from_slice(&entry);
    let mut example = vec![0x0a, features.len() as u8];
    example.extend_from_slice(&features);
    let err = parser
        .parse_row(&example, &mut batch, &mut found)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "malformed tf.Example: a value list is not length-delimited in feature 'image'"
    );
    assert_eq!(batch, before);
    parser.parse_row(&good, &mut batch, &mut found).unwrap();
    assert_eq!(batch.rows, 2);
    assert_eq!(batch.example(1), batch.example(0));
}
