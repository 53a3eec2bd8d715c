//! Cross-origin requests, as TF Serving answers them: preflights always, and the CORS
//! headers on the model URLs' answers with `--rest-api-enable-cors-support`.

use serde_json::json;

use crate::support::*;

/// The status and the `Access-Control-Allow-Origin` header of a reply, whatever the status.
fn allowed(reply: Result<ureq::Response, ureq::Error>) -> (u16, Option<String>) {
    let response = match reply {
        Ok(r) | Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("no answer: {e}"),
    };
    let origin = response
        .header("Access-Control-Allow-Origin")
        .map(String::from);
    (response.status(), origin)
}

#[test]
fn preflights_are_answered_and_with_cors_on_every_model_answer_allows_any_origin() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("export");
    export_iris(&dir.path().join("model"), &base, 20);
    let plain = Running::start(load_iris(&base));
    let cors = Running::start(load_iris(&base).with_cors(true));
    let preflight = |running: &Running, origin: Option<&str>| {
        let request = ureq::request(
            "OPTIONS",
            &format!("{}/v1/models/iris:predict", running.url),
        );
        let request = match origin {
            Some(origin) => request.set("Origin", origin),
            None => request,
        };
        allowed(request.call())
    };
    let predict = |running: &Running, model: &str| {
        let url = format!("{}/v1/models/{model}:predict", running.url);
        allowed(ureq::post(&url).send_json(json!({"instances": rows()})))
    };

    // Without the flag: a preflight naming its origin is answered, but no answer lets
    // another origin read it.
    assert_eq!(preflight(&plain, Some("https://app.example")), (200, None));
    assert_eq!(preflight(&plain, None).0, 400);
    assert_eq!(predict(&plain, "iris"), (200, None));

    // With it: every answer of the model URLs, refusals included; not the metrics'.
    let any = Some("*".to_string());
    assert_eq!(
        preflight(&cors, Some("http://localhost:3000")),
        (200, any.clone())
    );
    assert_eq!(predict(&cors, "iris"), (200, any.clone()));
    assert_eq!(predict(&cors, "rose"), (404, any.clone()));
    let status = ureq::get(&format!("{}/v1/models/iris", cors.url)).call();
    assert_eq!(allowed(status), (200, any));
    let metrics = ureq::get(&format!("{}/monitoring/prometheus/metrics", cors.url)).call();
    assert_eq!(allowed(metrics), (200, None));
    let reply = ureq::request("OPTIONS", &format!("{}/v1/models/iris", cors.url))
        .set("Origin", "file.html")
        .call();
    let Err(ureq::Error::Status(400, refused)) = reply else {
        panic!("a preflight with no http(s) origin answered")
    };
    let body: serde_json::Value = refused.into_json().unwrap();
    assert_eq!(
        error_of(&body),
        "Origin header is missing in CORS preflight"
    );
}
