//! The body-read timeout: a client that sends a request head and then stalls mid-body is
//! answered 408 naming the flag and its connection closed, within the timeout, while the
//! server goes on answering others.

use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use estimator_serve::Limits;
use serde_json::json;

use crate::support::*;

const LONG: Option<Duration> = Some(Duration::from_secs(60));
const BODY_TIMEOUT: Duration = Duration::from_millis(400);

#[test]
fn a_client_stalling_mid_body_is_answered_408_and_closed_within_the_body_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let limits = Limits {
        header_read_timeout: LONG,
        idle_timeout: LONG,
        body_read_timeout: Some(BODY_TIMEOUT),
        ..Limits::default()
    };
    let running = start_iris_with(dir.path(), limits);
    let address = running.url.trim_start_matches("http://").to_string();
    let body = json!({"instances": rows()}).to_string();
    let request = request_bytes("/v1/models/iris:predict", &body);
    let cut = request.len() - body.len() / 2;

    let mut stalled = TcpStream::connect(&address).unwrap();
    stalled
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let started = Instant::now();
    stalled.write_all(&request[..cut]).unwrap();
    let (code, reply) = read_answer(&mut stalled);
    let answered = started.elapsed();
    assert_eq!(code, 408, "{reply}");
    assert!(reply.contains("--body-read-timeout-ms"), "{reply}");
    assert!(
        answered >= BODY_TIMEOUT && answered < BODY_TIMEOUT + Duration::from_secs(5),
        "answered after {answered:?}"
    );
    assert!(
        closed_after(&mut stalled, Duration::from_secs(5)).is_some(),
        "the stalled connection is still open"
    );

    // A client whose body comes, slowly but within the timeout, is answered as usual.
    let mut slow = TcpStream::connect(&address).unwrap();
    slow.write_all(&request[..cut]).unwrap();
    std::thread::sleep(BODY_TIMEOUT / 4);
    slow.write_all(&request[cut..]).unwrap();
    let (code, reply) = read_answer(&mut slow);
    assert_eq!(code, 200, "{reply}");
}
