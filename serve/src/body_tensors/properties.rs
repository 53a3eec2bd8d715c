//! Properties of the tensor reading of REST bodies: any body is read or declined, never a
//! panic, and what is read holds the values, the format and the signature name the JSON
//! reading gives the same body.

use proptest::prelude::*;
use serde_json::Value;

use super::tests::through_json;
use super::*;
use crate::request::signature_name;

/// Two signatures: three inputs of each type (one shaped), and one bare scalar input.
fn signatures() -> [Signature; 2] {
    [
        Signature::new()
            .with_shaped_input("x", DType::Float32, vec![2])
            .with_input("city", DType::String)
            .with_input("n", DType::Int64),
        Signature::new().with_input("x", DType::Float32),
    ]
}

/// Any JSON scalar a client might send, the awkward ones often.
fn leaf() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<i64>().prop_map(|n| n.to_string()),
        any::<u64>().prop_map(|n| n.to_string()),
        (-1e6f64..1e6).prop_map(|x| x.to_string()),
        any::<f64>()
            .prop_filter("finite", |x| x.is_finite())
            .prop_map(|x| format!("{x:e}")),
        prop::sample::select(vec![
            "1e39",
            "-3.5e38",
            "-0.0",
            "18446744073709551616",
            "9223372036854775808",
            "null",
            "true",
            r#"{"b64": "YQ=="}"#,
            r#""\u00e9\n""#,
        ])
        .prop_map(String::from),
        "[a-z]{0,3}".prop_map(|s| format!("\"{s}\"")),
    ]
}

/// Any value: scalars nested in lists.
fn value() -> impl Strategy<Value = String> {
    leaf().prop_recursive(3, 12, 3, |inner| {
        prop::collection::vec(inner, 0..4).prop_map(|items| format!("[{}]", items.join(", ")))
    })
}

/// A value for input `key`, mostly of its form (`x` a number if `scalar`, else two); a
/// scalar now and then as a one-element list.
fn value_of(key: &'static str, scalar: bool) -> impl Strategy<Value = String> {
    let number = || (-1e3f64..1e3).prop_map(|x| x.to_string());
    let fitting = match key {
        "x" if scalar => number().boxed(),
        "x" => (number(), number())
            .prop_map(|(a, b)| format!("[{a}, {b}]"))
            .boxed(),
        "city" => "[a-z]{0,3}".prop_map(|s| format!("\"{s}\"")).boxed(),
        _ => any::<i32>().prop_map(|n| n.to_string()).boxed(),
    };
    let listed = key != "x" || scalar;
    let fitting =
        (fitting, prop::bool::weighted(0.2)).prop_map(move |(value, list)| match list && listed {
            true => format!("[{value}]"),
            false => value,
        });
    prop_oneof![15 => fitting, 1 => value()]
}

fn key() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec!["x", "city", "n", "m"])
}

/// Every input's value, in the signature's order.
fn every_input(scalar: bool) -> impl Strategy<Value = [String; 3]> {
    let values = (
        value_of("x", scalar),
        value_of("city", scalar),
        value_of("n", scalar),
    );
    values.prop_map(|(x, c, n)| [x, c, n])
}

/// A row: an object of every input in some order, now and then with one missing, repeated
/// or unknown; a list of values; or a bare value.
fn row(scalar: bool) -> impl Strategy<Value = String> {
    let member = move || {
        key().prop_flat_map(move |k| value_of(k, scalar).prop_map(move |v| format!("\"{k}\": {v}")))
    };
    let named = (
        every_input(scalar),
        any::<u8>(),
        prop::option::weighted(0.1, member()),
    );
    prop_oneof![
        6 => named.prop_map(|(values, order, odd)| {
            let mut members: Vec<String> = (["x", "city", "n"].iter().zip(values))
                .map(|(k, v)| format!("\"{k}\": {v}"))
                .collect();
            members.rotate_left(usize::from(order) % 3);
            match (odd, order % 2) {
                (Some(odd), 0) => members[0] = odd,
                (Some(odd), _) => members.push(odd),
                (None, _) => {}
            }
            format!("{{{}}}", members.join(", "))
        }),
        1 => prop::collection::vec(member(), 0..5).prop_map(|m| format!("{{{}}}", m.join(", "))),
        2 => every_input(scalar).prop_map(|values| format!("[{}]", values.join(", "))),
        1 => prop::collection::vec(value(), 0..5).prop_map(|v| format!("[{}]", v.join(", "))),
        2 => value_of("x", scalar),
    ]
}

/// Columns: every input's list of one value per row, now and then one of another length,
/// or a column set of random members.
fn columns(scalar: bool) -> impl Strategy<Value = String> {
    let column = move |k: &'static str, n: usize| {
        prop::collection::vec(value_of(k, scalar), n..=n)
            .prop_map(move |values| format!("\"{k}\": [{}]", values.join(", ")))
    };
    let random = key().prop_flat_map(move |k| column(k, 2));
    prop_oneof![
        4 => (1..4usize, 0..5usize).prop_flat_map(move |(n, other)| {
            (column("x", n), column("city", n), column("n", if other == 0 { n + 1 } else { n }))
                .prop_map(|(x, c, n)| format!("{{{x}, {c}, {n}}}"))
        }),
        1 => prop::collection::vec(random, 0..4).prop_map(|c| format!("{{{}}}", c.join(", "))),
        2 => prop::collection::vec(value_of("x", scalar), 0..4)
            .prop_map(|v| format!("[{}]", v.join(", "))),
    ]
}

/// A body: rows or columns under one member or another, a signature name or not.
fn body(scalar: bool) -> impl Strategy<Value = String> {
    let rows = move || {
        prop::collection::vec(row(scalar), 1..3).prop_map(|rows| format!("[{}]", rows.join(", ")))
    };
    let member = prop_oneof![
        3 => rows().prop_map(|rows| format!("\"instances\": {rows}")),
        3 => rows().prop_map(|rows| format!("\"examples\": {rows}")),
        3 => columns(scalar).prop_map(|columns| format!("\"inputs\": {columns}")),
        1 => Just(r#""instances": []"#.to_string()),
        1 => Just(r#""context": {"n": 1}"#.to_string()),
        1 => Just(r#""signature_name": "serving_default""#.to_string()),
        1 => Just(r#""signature_name": 3"#.to_string()),
    ];
    let members = prop_oneof![
        3 => member.clone().prop_map(|m| vec![m]),
        1 => prop::collection::vec(member, 1..4),
    ];
    members.prop_map(|m| format!("{{{}}}", m.join(", ")))
}

/// A signature (its place in [`signatures`]) and a body written for it.
fn signature_and_body() -> impl Strategy<Value = (usize, String)> {
    (0..2usize).prop_flat_map(|which| (Just(which), body(which == 1)))
}

proptest! {
    #[test]
    fn what_is_read_is_what_the_json_reading_reads(
        (which, body) in signature_and_body(),
        other_member in prop::bool::weighted(0.1),
    ) {
        let signature = &signatures()[which];
        // Mostly the method whose member the body has, now and then the other.
        let rows_in = match body.contains("\"examples\"") != other_member {
            true => RowsIn::Examples,
            false => RowsIn::InstancesOrInputs,
        };
        if let Some(read) = body_tensors(body.as_bytes(), signature, rows_in) {
            let (format, expected) = through_json(&body, signature, rows_in);
            prop_assert_eq!(read.format, format);
            prop_assert_eq!(&read.inputs, &expected);
            let value: Value = serde_json::from_str(&body).unwrap();
            prop_assert_eq!(read.signature_name.as_str(), signature_name(&value).unwrap());
        }
    }
}
