//! `http_request`, and the sending machinery it shares with the HTTP
//! executors in [`crate::tools::http_executor`].
//!
//! Requests go through [`ToolEnv::http`], which comes from
//! [`crate::tools::egress::client`]: that client follows no redirects by
//! itself, so that the tools can follow at most [`MAX_REDIRECTS`] of them,
//! check the scheme and the egress policy of every hop, never resend a
//! state-changing request to another site, and drop credentials when a
//! redirect leaves the origin. An `http_request` that ran without a human
//! follows redirects only to hosts the spec names.
//!
//! This module does not decide whether a request may be sent at all: the
//! egress policy (in `egress`) and the engine's gates do.

use std::time::Duration;

use reqwest::header::{self, HeaderMap, HeaderName, HeaderValue};
use reqwest::{Method, StatusCode, Url};
use serde_json::{json, Value};

use super::str_arg;
use super::text::{
    cut_note, effective_timeout, human_duration, human_size, list_cut, lossy_text, short, short_n,
};
use crate::tools::{Grant, ToolEnv, ToolResult};

/// Redirects followed per request, at most.
pub const MAX_REDIRECTS: usize = 5;
/// The methods `http_request` and the HTTP executors accept.
pub const HTTP_METHODS: [&str; 6] = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"];
/// After the limit, a body is still read (and counted) up to this many more
/// bytes, so that the result can say how much was cut.
const DRAIN_LIMIT: u64 = 8 << 20;
/// Response headers listed in a result, at most.
const MAX_SHOWN_HEADERS: usize = 30;

// ---------------------------------------------------------------------------
// Argument helpers shared with `http_executor`.

pub(crate) fn method_schema(description: &str) -> Value {
    json!({"type": "string", "enum": HTTP_METHODS, "description": description})
}

pub(crate) fn headers_schema(description: &str) -> Value {
    json!({
        "type": "object",
        "additionalProperties": {"type": "string"},
        "description": description
    })
}

/// True unless `method` is GET or HEAD (in any case).
pub(crate) fn method_changes_state(method: &str) -> bool {
    !matches!(method.trim().to_ascii_uppercase().as_str(), "GET" | "HEAD")
}

/// `method` as one of [`HTTP_METHODS`].
pub(crate) fn parse_method(method: &str) -> Result<Method, String> {
    let upper = method.trim().to_ascii_uppercase();
    if !HTTP_METHODS.contains(&upper.as_str()) {
        return Err(format!(
            "method `{}` is not allowed (use one of {})",
            short(method),
            HTTP_METHODS.join(", ")
        ));
    }
    Method::from_bytes(upper.as_bytes()).map_err(|_| format!("method `{upper}` is not valid"))
}

/// Request headers the model gave, as a header map. Errors name the
/// header, never its value.
pub(crate) fn model_headers(headers: Option<&Value>) -> Result<HeaderMap, String> {
    let mut map = HeaderMap::new();
    let Some(headers) = headers else {
        return Ok(map);
    };
    let Some(obj) = headers.as_object() else {
        return Err("`headers` must be an object of strings".into());
    };
    for (name, value) in obj {
        let Some(value) = value.as_str() else {
            return Err(format!("header `{}` must be a string", short(name)));
        };
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("`{}` is not a valid header name", short(name)))?;
        let value = HeaderValue::from_str(value)
            .map_err(|_| format!("the value of header `{name}` is not a valid header value"))?;
        map.append(name, value);
    }
    Ok(map)
}

/// `Content-Type, Accept` for the approval line, or `None` without headers.
pub(crate) fn header_names(headers: Option<&Value>) -> Option<String> {
    let obj = headers.and_then(Value::as_object)?;
    if obj.is_empty() {
        return None;
    }
    let names: Vec<String> = obj.keys().map(|k| short_n(k, 40)).collect();
    Some(format!("headers: {}", list_cut(&names, 5)))
}

/// `124-byte body` or `2.1 KB body`.
pub(crate) fn body_size(len: usize) -> String {
    if len < 1024 {
        format!("{len}-byte body")
    } else {
        format!("{} body", human_size(len as u64))
    }
}

/// `POST https://x/y (124-byte body)`.
pub(crate) fn http_line(method: &str, url: &str, extras: &[String]) -> String {
    let mut line = format!("{} {}", short_n(method, 10), short_n(url, 200));
    if !extras.is_empty() {
        line.push_str(&format!(" ({})", extras.join(", ")));
    }
    line
}

// ---------------------------------------------------------------------------
// HTTP, shared with `http_executor`.

/// Whether a redirect target may be followed; `Err` says why not.
pub(crate) type RedirectRule<'a> = &'a (dyn Fn(&Url) -> Result<(), String> + Send + Sync);
/// How a URL is shown in results (executors hide their base URL's query).
pub(crate) type UrlShow<'a> = &'a (dyn Fn(&Url) -> String + Send + Sync);

/// One HTTP call as a tool makes it.
pub(crate) struct HttpCall<'a> {
    pub method: Method,
    pub url: Url,
    pub headers: HeaderMap,
    pub body: Option<Vec<u8>>,
    pub timeout: Duration,
    pub max_bytes: usize,
    pub may_follow: RedirectRule<'a>,
    pub show: UrlShow<'a>,
}

/// True for http and https URLs with a host.
/// Whether a redirect to `next` is followed: anywhere a human approved
/// the request for (the egress policy still checks every hop), only to
/// hosts the spec names for a request nobody looked at.
pub(crate) fn may_follow(
    grant: Grant,
    egress: &crate::tools::egress::Egress,
    next: &Url,
) -> Result<(), String> {
    match (grant, next.host()) {
        (Grant::Human, _) => Ok(()),
        (Grant::Policy, Some(h)) if egress.names(&h) => Ok(()),
        (Grant::Policy, _) => Err(
            "the spec does not name that host (tools.network.allow), and nobody approved going there"
                .to_string(),
        ),
    }
}

pub(crate) fn is_web_url(url: &Url) -> bool {
    matches!(url.scheme(), "http" | "https") && url.host().is_some()
}

/// Sends `call`, following redirects per the rules in the module docs, and
/// formats the response for the model. Transport failures and timeouts are
/// error results; any HTTP response, 4xx and 5xx included, is a result.
pub(crate) async fn send(env: &ToolEnv, call: HttpCall<'_>) -> ToolResult {
    let limit = effective_timeout(call.timeout);
    let what = format!("{} {}", call.method, (call.show)(&call.url));
    let sent = async {
        match fetch(env, &call, limit).await {
            Ok(f) => describe_response(f, &call).await,
            Err(refused) => refused,
        }
    };
    match tokio::time::timeout(limit, sent).await {
        Ok(result) => result,
        Err(_) => ToolResult::error(format!("{what} timed out after {}", human_duration(limit))),
    }
}

/// A response a tool received, after the redirects it followed.
pub(crate) struct Fetched {
    pub response: reqwest::Response,
    /// The method and URL of the last request (after redirects).
    pub method: Method,
    pub url: Url,
    /// Redirects followed.
    pub hops: usize,
    /// Why a redirect was not followed, if one was not.
    pub note: Option<String>,
}

enum Hop {
    Follow { next: Url, method: Method },
    Stop(String),
    Done,
}

/// Sends `call` and follows redirects per the rules in the module docs,
/// within `limit` for all hops together (the caller bounds the whole
/// exchange, body included). A refused destination, a transport failure
/// or a URL that is not http(s) is the error result the model reads.
pub(crate) async fn fetch(
    env: &ToolEnv,
    call: &HttpCall<'_>,
    limit: Duration,
) -> Result<Fetched, ToolResult> {
    let deadline = tokio::time::Instant::now() + limit;
    let first_origin = call.url.origin();
    let mut url = call.url.clone();
    let mut method = call.method.clone();
    let mut body = call.body.clone();
    let mut headers = call.headers.clone();
    let mut hops = 0usize;
    loop {
        if !is_web_url(&url) {
            return Err(ToolResult::error(format!(
                "only http and https URLs are allowed, not {}",
                (call.show)(&url)
            )));
        }
        // Names are checked by the client's resolver at connect time; an IP
        // literal is connected to as it is, so it is checked here.
        if let Err(b) = env.egress.check_literal(&url) {
            return Err(ToolResult::blocked(b));
        }
        let remaining = deadline
            .saturating_duration_since(tokio::time::Instant::now())
            .max(Duration::from_millis(1));
        let mut request = env
            .http
            .request(method.clone(), url.clone())
            .headers(headers.clone())
            .timeout(remaining);
        if let Some(b) = &body {
            request = request.body(b.clone());
        }
        let response = match request.send().await {
            Ok(r) => r,
            Err(e) => {
                if let Some(b) = crate::tools::egress::blocked_in(&e) {
                    return Err(ToolResult::blocked(b));
                }
                let what = if e.is_timeout() {
                    "timed out"
                } else {
                    "failed"
                };
                return Err(ToolResult::error(format!(
                    "{method} {} {what}: {}",
                    (call.show)(&url),
                    crate::error::transport(e)
                )));
            }
        };
        let note = match next_hop(call, &response, &url, &method, hops, &first_origin) {
            Hop::Follow {
                next,
                method: next_method,
            } => {
                if next.origin() != url.origin() {
                    for h in [
                        header::AUTHORIZATION,
                        header::COOKIE,
                        header::PROXY_AUTHORIZATION,
                    ] {
                        headers.remove(h);
                    }
                }
                if next_method != method {
                    body = None;
                    headers.remove(header::CONTENT_TYPE);
                    headers.remove(header::CONTENT_LENGTH);
                }
                method = next_method;
                url = next;
                hops += 1;
                continue;
            }
            Hop::Stop(note) => Some(note),
            Hop::Done => None,
        };
        return Ok(Fetched {
            response,
            method,
            url,
            hops,
            note,
        });
    }
}

/// Whether (and how) to follow `response` if it is a redirect.
fn next_hop(
    call: &HttpCall<'_>,
    response: &reqwest::Response,
    url: &Url,
    method: &Method,
    hops: usize,
    first_origin: &url::Origin,
) -> Hop {
    let status = response.status();
    if !matches!(
        status,
        StatusCode::MOVED_PERMANENTLY
            | StatusCode::FOUND
            | StatusCode::SEE_OTHER
            | StatusCode::TEMPORARY_REDIRECT
            | StatusCode::PERMANENT_REDIRECT
    ) {
        return Hop::Done;
    }
    let Some(location) = response
        .headers()
        .get(header::LOCATION)
        .and_then(|v| v.to_str().ok())
    else {
        return Hop::Stop("[redirect not followed: no readable Location header]".into());
    };
    let Ok(next) = url.join(location) else {
        return Hop::Stop(format!(
            "[redirect not followed: Location `{}` is not a valid URL]",
            short(location)
        ));
    };
    if !is_web_url(&next) {
        return Hop::Stop(format!(
            "[redirect not followed: `{}` is not an http or https URL]",
            short(next.scheme())
        ));
    }
    if hops >= MAX_REDIRECTS {
        return Hop::Stop(format!(
            "[redirect to {} not followed: already followed {MAX_REDIRECTS} redirects]",
            (call.show)(&next)
        ));
    }
    if let Err(why) = (call.may_follow)(&next) {
        return Hop::Stop(format!(
            "[redirect to {} not followed: {why}]",
            (call.show)(&next)
        ));
    }
    let next_method = if (status == StatusCode::SEE_OTHER && *method != Method::HEAD)
        || (matches!(status, StatusCode::MOVED_PERMANENTLY | StatusCode::FOUND)
            && *method == Method::POST)
    {
        Method::GET
    } else {
        method.clone()
    };
    if method_changes_state(next_method.as_str()) && next.origin() != *first_origin {
        return Hop::Stop(format!(
            "[redirect to {} not followed: it would send the {next_method} request to another site]",
            (call.show)(&next)
        ));
    }
    Hop::Follow {
        next,
        method: next_method,
    }
}

/// A response body read up to a limit.
pub(crate) struct Body {
    /// The first `max` bytes.
    pub kept: Vec<u8>,
    /// Bytes received (past `max`, reading goes on for a while to count).
    pub total: u64,
    /// Whether the whole body was read.
    pub complete: bool,
    /// The declared `Content-Length`, if any.
    pub declared: Option<u64>,
    /// Why reading stopped early, if it failed.
    pub error: Option<String>,
}

impl Body {
    pub fn was_cut(&self) -> bool {
        self.total > self.kept.len() as u64
    }

    /// The kept bytes as text (a character split by a cut is dropped).
    pub fn text(&self) -> String {
        lossy_text(&self.kept, self.was_cut())
    }

    /// `[body cut: ...]` when the body was cut.
    pub fn cut_note(&self) -> Option<String> {
        if !self.was_cut() {
            return None;
        }
        let (total, exact) = match (self.complete, self.declared) {
            (true, _) => (self.total, true),
            (false, Some(d)) if d >= self.total && self.error.is_none() => (d, true),
            (false, _) => (self.total, false),
        };
        Some(cut_note("body", self.kept.len(), total, exact))
    }
}

/// Reads `response`'s body, keeping the first `max` bytes.
pub(crate) async fn read_body(response: &mut reqwest::Response, max: usize) -> Body {
    let declared = response.content_length();
    let mut kept: Vec<u8> = Vec::new();
    let mut total: u64 = 0;
    let mut complete = true;
    let mut error = None;
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                total += chunk.len() as u64;
                let room = max.saturating_sub(kept.len());
                kept.extend_from_slice(&chunk[..room.min(chunk.len())]);
                if total > max as u64 + DRAIN_LIMIT {
                    complete = false;
                    break;
                }
            }
            Ok(None) => break,
            Err(e) => {
                error = Some(crate::error::transport(e));
                complete = false;
                break;
            }
        }
    }
    Body {
        kept,
        total,
        complete,
        declared,
        error,
    }
}

/// Status, headers summary and (cut) body, as the model reads them.
async fn describe_response(fetched: Fetched, call: &HttpCall<'_>) -> ToolResult {
    let Fetched {
        mut response,
        method,
        url,
        hops,
        note,
    } = fetched;
    let status = response.status();
    let mut out = match status.canonical_reason() {
        Some(reason) => format!("HTTP {} {reason}", status.as_u16()),
        None => format!("HTTP {}", status.as_u16()),
    };
    out.push_str(&format!("\n{method} {}", (call.show)(&url)));
    if hops > 0 {
        let s = if hops == 1 { "" } else { "s" };
        out.push_str(&format!(" (after {hops} redirect{s})"));
    }
    out.push('\n');
    if let Some(note) = note {
        out.push_str(&note);
        out.push('\n');
    }
    out.push_str("headers:\n");
    let headers = response.headers();
    for (name, value) in headers.iter().take(MAX_SHOWN_HEADERS) {
        let value = value
            .to_str()
            .map(|v| short_n(v, 200))
            .unwrap_or_else(|_| "<not text>".into());
        out.push_str(&format!("  {name}: {value}\n"));
    }
    if headers.len() > MAX_SHOWN_HEADERS {
        out.push_str(&format!(
            "  … {} more headers\n",
            headers.len() - MAX_SHOWN_HEADERS
        ));
    }
    if method == Method::HEAD {
        out.push_str("body: (none: HEAD request)");
        return ToolResult::ok(out);
    }
    let body = read_body(&mut response, call.max_bytes).await;
    if body.total == 0 && body.error.is_none() {
        out.push_str("body: (empty)");
        return ToolResult::ok(out);
    }
    out.push_str(&format!("body ({}):\n", human_size(body.total)));
    out.push_str(&body.text());
    if let Some(note) = body.cut_note() {
        out.push('\n');
        out.push_str(&note);
    }
    if let Some(e) = &body.error {
        out.push_str(&format!("\n[reading the body failed: {e}]"));
    }
    ToolResult::ok(out)
}

pub(super) async fn http_request(args: &Value, env: &ToolEnv, grant: Grant) -> ToolResult {
    let method = match parse_method(str_arg(args, "method").unwrap_or_default()) {
        Ok(m) => m,
        Err(e) => return ToolResult::error(e),
    };
    let Some(raw_url) = str_arg(args, "url") else {
        return ToolResult::error("missing `url`");
    };
    let url = match Url::parse(raw_url.trim()) {
        Ok(u) if is_web_url(&u) => u,
        Ok(u) => {
            return ToolResult::error(format!(
                "only http and https URLs are allowed, not `{}:`",
                short(u.scheme())
            ))
        }
        Err(e) => {
            return ToolResult::error(format!("`{}` is not a valid URL: {e}", short(raw_url)))
        }
    };
    let headers = match model_headers(args.get("headers")) {
        Ok(h) => h,
        Err(e) => return ToolResult::error(e),
    };
    let body = str_arg(args, "body").map(|b| b.as_bytes().to_vec());
    // A human who approved this URL may be sent on (the egress policy still
    // checks every hop); a request nobody looked at stays on named hosts.
    let follow = |next: &Url| may_follow(grant, &env.egress, next);
    let full = |u: &Url| u.to_string();
    send(
        env,
        HttpCall {
            method,
            url,
            headers,
            body,
            timeout: env.timeout,
            max_bytes: env.max_bytes,
            may_follow: &follow,
            show: &full,
        },
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::super::testing::{call, fixture};
    use super::super::{test_server, Builtin};
    use serde_json::json;
    use std::time::{Duration, Instant};

    // -- http_request ------------------------------------------------------

    #[tokio::test]
    async fn http_get_and_post() {
        let f = fixture();
        let server = test_server::start().await;
        let r = call(
            Builtin::HttpRequest,
            json!({"method": "GET", "url": format!("{}/hello", server.url)}),
            &f.env,
        )
        .await;
        assert!(!r.is_error, "{}", r.content);
        assert!(
            r.content.starts_with(&format!(
                "HTTP 200 OK\nGET {}/hello\nheaders:\n",
                server.url
            )),
            "{}",
            r.content
        );
        assert!(
            r.content.contains("  content-type: text/plain\n"),
            "{}",
            r.content
        );
        assert!(r.content.contains("  x-test: yes\n"), "{}", r.content);
        assert!(
            r.content.ends_with("body (11 bytes):\nhello world"),
            "{}",
            r.content
        );

        let r = call(
            Builtin::HttpRequest,
            json!({
                "method": "POST",
                "url": format!("{}/echo?x=1", server.url),
                "headers": {"X-Custom": "abc", "Content-Type": "application/json"},
                "body": "{\"n\":1}"
            }),
            &f.env,
        )
        .await;
        assert!(!r.is_error, "{}", r.content);
        assert!(r.content.contains("POST /echo?x=1\n"), "{}", r.content);
        assert!(r.content.contains("x-custom: abc\n"), "{}", r.content);
        assert!(r.content.ends_with("\n\n{\"n\":1}"), "{}", r.content);

        let r = call(
            Builtin::HttpRequest,
            json!({"method": "HEAD", "url": format!("{}/hello", server.url)}),
            &f.env,
        )
        .await;
        assert!(
            r.content.ends_with("body: (none: HEAD request)"),
            "{}",
            r.content
        );
    }

    #[tokio::test]
    async fn http_bodies_are_cut_and_calls_time_out() {
        let mut f = fixture();
        let server = test_server::start().await;
        let r = call(
            Builtin::HttpRequest,
            json!({"method": "GET", "url": format!("{}/big", server.url)}),
            &f.env,
        )
        .await;
        assert!(!r.is_error);
        assert!(r
            .content
            .contains(&format!("body (9.8 KB):\n{}\n", "a".repeat(1000))));
        assert!(
            r.content
                .ends_with("[body cut: showing the first 1000 of 10000 bytes; 9000 bytes cut]"),
            "{}",
            r.content
        );

        let r = call(
            Builtin::HttpRequest,
            json!({"method": "GET", "url": format!("{}/utf8", server.url)}),
            &f.env,
        )
        .await;
        assert!(r
            .content
            .contains(&format!("\n{}\n[body cut", "é".repeat(500))));

        f.env.timeout = Duration::from_millis(300);
        let started = Instant::now();
        let r = call(
            Builtin::HttpRequest,
            json!({"method": "GET", "url": format!("{}/slow", server.url)}),
            &f.env,
        )
        .await;
        assert!(started.elapsed() < Duration::from_secs(3));
        assert!(r.is_error);
        assert!(r.content.contains("timed out"), "{}", r.content);
    }

    #[tokio::test]
    async fn http_redirects() {
        let f = fixture();
        let server = test_server::start().await;
        let get = |path: &str| json!({"method": "GET", "url": format!("{}{path}", server.url)});

        let r = call(Builtin::HttpRequest, get("/redirect/3"), &f.env).await;
        assert!(
            r.content.starts_with(&format!(
                "HTTP 200 OK\nGET {}/redirect/0 (after 3 redirects)\n",
                server.url
            )),
            "{}",
            r.content
        );
        assert!(r.content.ends_with("landed"));

        let r = call(Builtin::HttpRequest, get("/redirect/6"), &f.env).await;
        assert!(r.content.starts_with("HTTP 302 Found\n"), "{}", r.content);
        assert!(r.content.contains("(after 5 redirects)"), "{}", r.content);
        assert!(r
            .content
            .contains("not followed: already followed 5 redirects"));

        let r = call(Builtin::HttpRequest, get("/to-file"), &f.env).await;
        assert!(r.content.starts_with("HTTP 302 Found\n"), "{}", r.content);
        assert!(
            r.content
                .contains("[redirect not followed: `file` is not an http or https URL]"),
            "{}",
            r.content
        );

        // 303 turns a POST into a GET without the body.
        let r = call(
            Builtin::HttpRequest,
            json!({"method": "POST", "url": format!("{}/see-other", server.url), "body": "secret"}),
            &f.env,
        )
        .await;
        assert!(r.content.contains("GET /echo?after=303\n"), "{}", r.content);
        assert!(!r.content.contains("secret"), "{}", r.content);

        // A 307 would resend the POST to another site: not followed.
        let r = call(
            Builtin::HttpRequest,
            json!({"method": "POST", "url": format!("{}/post-away", server.url), "body": "x"}),
            &f.env,
        )
        .await;
        assert!(
            r.content.starts_with("HTTP 307 Temporary Redirect\n"),
            "{}",
            r.content
        );
        assert!(
            r.content
                .contains("not followed: it would send the POST request to another site"),
            "{}",
            r.content
        );
    }

    #[tokio::test]
    async fn http_refuses_other_schemes_and_bad_input() {
        let f = fixture();
        for url in [
            "file:///etc/passwd",
            "ftp://example.com/x",
            "data:text/plain,hi",
        ] {
            let r = call(
                Builtin::HttpRequest,
                json!({"method": "GET", "url": url}),
                &f.env,
            )
            .await;
            assert!(r.is_error, "{url}");
            assert!(
                r.content.contains("only http and https"),
                "{url}: {}",
                r.content
            );
        }
        let r = call(
            Builtin::HttpRequest,
            json!({"method": "GET", "url": "not a url"}),
            &f.env,
        )
        .await;
        assert!(
            r.is_error && r.content.contains("not a valid URL"),
            "{}",
            r.content
        );
        let r = call(
            Builtin::HttpRequest,
            json!({"method": "GET", "url": "http://127.0.0.1:9/", "headers": {"bad name": "x"}}),
            &f.env,
        )
        .await;
        assert!(
            r.is_error && r.content.contains("not a valid header name"),
            "{}",
            r.content
        );
        // Invalid arguments never reach the tool.
        let r = call(Builtin::HttpRequest, json!({"url": "http://x"}), &f.env).await;
        assert!(
            r.is_error && r.content.starts_with("invalid arguments:"),
            "{}",
            r.content
        );
    }

    #[tokio::test]
    async fn http_connection_errors_are_results() {
        let f = fixture();
        let port = {
            let l = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind");
            l.local_addr().expect("addr").port()
        };
        let r = call(
            Builtin::HttpRequest,
            json!({"method": "GET", "url": format!("http://127.0.0.1:{port}/x")}),
            &f.env,
        )
        .await;
        assert!(r.is_error);
        assert!(
            r.content
                .starts_with(&format!("GET http://127.0.0.1:{port}/x failed: ")),
            "{}",
            r.content
        );
    }
}
