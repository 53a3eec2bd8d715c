//! Connections held to their cap and timeouts: idle clients past the cap make room for a
//! working one, a connection past the cap with none idle is answered 503, a quiet
//! connection is closed after the idle timeout and a stalled request head after the header
//! timeout, the two timed apart; the binary under a low descriptor limit.

use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use estimator_serve::Limits;
use serde_json::json;

use crate::support::*;

const LONG: Option<Duration> = Some(Duration::from_secs(60));
const SHORT: Duration = Duration::from_millis(300);

fn body() -> String {
    json!({"instances": rows()}).to_string()
}

#[test]
fn idle_connections_past_the_cap_make_room_for_a_working_client() {
    let dir = tempfile::tempdir().unwrap();
    let limits = Limits {
        max_connections: 8,
        header_read_timeout: LONG,
        idle_timeout: LONG,
        ..Limits::default()
    };
    let running = start_iris_with(dir.path(), limits);
    let address = running.url.trim_start_matches("http://").to_string();
    let mut idle: Vec<TcpStream> = (0..30)
        .map(|_| TcpStream::connect(&address).unwrap())
        .collect();
    let (code, reply) = running.post("/v1/models/iris:predict", &json!({"instances": rows()}));
    assert_eq!(code, 200, "{reply}");
    // Each connection past the cap closed the one idle longest; the working client's took
    // one more place, so at most 7 of the idle ones are still open.
    let closed = count_closed(&mut idle, 23, Duration::from_secs(10));
    assert!(
        closed >= 23,
        "only {closed} of 30 idle connections were closed"
    );
    // A keep-alive client between requests is idle too, but not the one idle longest while
    // idle connections keep arriving, so it keeps its connection.
    // A connection's idle time starts when it is admitted, so each new one is let in before
    // the next request: were the server's admissions to fall eight behind, the new ones
    // would all be younger than the working client's last answer, and it would go.
    let mut working = TcpStream::connect(&address).unwrap();
    for i in 1..=20 {
        let (code, reply) = raw_post(&mut working, "/v1/models/iris:predict", &body());
        assert_eq!(code, 200, "{reply}");
        idle.push(TcpStream::connect(&address).unwrap());
        let closed = count_closed(&mut idle, 23 + i, Duration::from_secs(10));
        assert!(
            closed >= 23 + i,
            "only {closed} idle connections were closed"
        );
    }
    let closed = count_closed(&mut idle, 30 + 20 - 7, Duration::from_secs(10));
    assert!(
        closed >= 30 + 20 - 7,
        "only {closed} of 50 idle connections were closed"
    );
}

#[test]
fn a_connection_past_the_cap_with_none_idle_is_answered_503_naming_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let limits = Limits {
        max_connections: 2,
        header_read_timeout: LONG,
        idle_timeout: LONG,
        ..Limits::default()
    };
    let running = start_iris_with(dir.path(), limits);
    let address = running.url.trim_start_matches("http://").to_string();
    // Two connections in the middle of a request head: busy, not idle.
    let stalled: Vec<TcpStream> = (0..2)
        .map(|_| {
            let mut stream = TcpStream::connect(&address).unwrap();
            stream
                .write_all(b"POST /v1/models/iris:predict HTTP/1.1\r\nhost: x\r\n")
                .unwrap();
            stream
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let (code, reply) = running.post("/v1/models/iris:predict", &json!({"instances": rows()}));
    assert_eq!(code, 503, "{reply}");
    assert!(
        error_of(&reply).contains("limit of 2 connections (--max-connections)"),
        "{reply}"
    );
    // Once they leave, the places are free again (as soon as the server has seen them go).
    drop(stalled);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (code, reply) = running.post("/v1/models/iris:predict", &json!({"instances": rows()}));
        if code == 503 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
            continue;
        }
        assert_eq!(code, 200, "{reply}");
        break;
    }
}

#[test]
fn a_quiet_connection_is_closed_after_the_idle_timeout_and_a_stalled_head_after_the_header_timeout()
{
    let dir = tempfile::tempdir().unwrap();
    let idle_short = start_iris_with(
        &dir.path().join("idle"),
        Limits {
            header_read_timeout: LONG,
            idle_timeout: Some(SHORT),
            ..Limits::default()
        },
    );
    let address = idle_short.url.trim_start_matches("http://").to_string();
    // Never a request; then quiet after one answer.
    let mut silent = TcpStream::connect(&address).unwrap();
    let after = closed_after(&mut silent, Duration::from_secs(10)).expect("closed");
    assert!(
        after >= Duration::from_millis(250),
        "closed after {after:?}"
    );
    let mut kept_alive = TcpStream::connect(&address).unwrap();
    let (code, reply) = raw_post(&mut kept_alive, "/v1/models/iris:predict", &body());
    assert_eq!(code, 200, "{reply}");
    let after = closed_after(&mut kept_alive, Duration::from_secs(10)).expect("closed");
    assert!(
        after >= Duration::from_millis(250),
        "closed after {after:?}"
    );
    // A stalled head is not idle: the 60 s header timeout holds it open.
    let mut stalled = TcpStream::connect(&address).unwrap();
    stalled
        .write_all(b"POST /v1/models/iris:predict HTTP/1.1\r\n")
        .unwrap();
    assert_eq!(closed_after(&mut stalled, Duration::from_secs(1)), None);

    let header_short = start_iris_with(
        &dir.path().join("header"),
        Limits {
            header_read_timeout: Some(SHORT),
            idle_timeout: LONG,
            ..Limits::default()
        },
    );
    let address = header_short.url.trim_start_matches("http://").to_string();
    let mut stalled = TcpStream::connect(&address).unwrap();
    stalled
        .write_all(b"POST /v1/models/iris:predict HTTP/1.1\r\n")
        .unwrap();
    let after = closed_after(&mut stalled, Duration::from_secs(10)).expect("closed");
    assert!(
        after >= Duration::from_millis(250),
        "closed after {after:?}"
    );
    // A connection that sends nothing is idle, held open by the 60 s idle timeout; one
    // that sent its head in pieces within the timeout is answered.
    let mut silent = TcpStream::connect(&address).unwrap();
    assert_eq!(closed_after(&mut silent, Duration::from_secs(1)), None);
    let mut slow = TcpStream::connect(&address).unwrap();
    let request = request_bytes("/v1/models/iris:predict", &body());
    let (first, rest) = request.split_at(20);
    slow.write_all(first).unwrap();
    std::thread::sleep(Duration::from_millis(100));
    slow.write_all(rest).unwrap();
    let (code, reply) = read_answer(&mut slow);
    assert_eq!(code, 200, "{reply}");
}

#[test]
fn the_binary_under_a_low_descriptor_limit_keeps_serving_past_hundreds_of_idle_connections() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("export");
    export_iris(&dir.path().join("model"), &base, 20);
    let base = base.to_str().unwrap();
    let served = Binary::start(
        &["--model-name", "iris", "--model-base-path", base],
        Some(256),
    );
    // The default cap keeps the server inside its 256 descriptors.
    let line = served.log.last().unwrap();
    assert!(line.contains("(at most 192 connections)"), "{line}");
    let predict_past_idle_connections = |served: &Binary| {
        let address = served.url.trim_start_matches("http://").to_string();
        let idle: Vec<TcpStream> = (0..400)
            .map(|_| TcpStream::connect(&address).unwrap())
            .collect();
        for _ in 0..3 {
            let reply = answer(
                ureq::post(&format!("{}/v1/models/iris:predict", served.url))
                    .timeout(Duration::from_secs(20))
                    .set("Content-Type", "application/json")
                    .send_string(&body()),
            );
            assert_eq!(reply.0, 200, "{}", reply.1);
        }
        drop(idle);
    };
    predict_past_idle_connections(&served);

    // A cap above the descriptor limit: accepting fails for want of descriptors, and the
    // server closes idle connections to go on, saying so, instead of stalling.
    let over = Binary::start(
        &[
            "--model-name",
            "iris",
            "--model-base-path",
            base,
            "--max-connections",
            "1000",
        ],
        Some(256),
    );
    predict_past_idle_connections(&over);
    let log = over.logged("cannot accept a connection", Duration::from_secs(5));
    let warning = log.last().map(String::as_str).unwrap_or_default();
    assert!(
        warning.contains("cannot accept a connection")
            && warning.contains("closing the connection idle longest"),
        "{log:?}"
    );
}
