//! Retries for every HTTP provider, in one place.
//!
//! Model APIs fail transiently all the time: rate limits (429), overloaded or
//! restarting servers (5xx), timeouts and dropped connections. A workflow that
//! gave up on the first such blip would throw away every step already paid
//! for, so each provider sends its request through [`send_with_retry`], which
//! waits (honouring `Retry-After`, else exponential backoff) and tries again a
//! bounded number of times. Errors that retrying cannot fix (400, 401, 404…)
//! fail at once. Failure messages name the URL without its query string or
//! credentials, never a header, and carry a short excerpt of the body.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use reqwest::header::{HeaderMap, RETRY_AFTER};
use reqwest::StatusCode;

use crate::error::{self, Error, Result};

/// The longest body excerpt put into an error message, in characters.
pub const EXCERPT_CHARS: usize = 300;

/// How often and how patiently a provider call is retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt: at most `max_retries + 1` attempts.
    pub max_retries: u32,
    /// The wait before the first retry; doubled for each later one.
    pub base_delay: Duration,
    /// No single wait is longer than this, `Retry-After` included.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 3,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(20),
        }
    }
}

impl RetryPolicy {
    /// The default policy, adjusted by `STRANDS_MAX_RETRIES` (a count) and
    /// `STRANDS_RETRY_BASE_MS` (milliseconds) when they are set. A value that
    /// does not parse is ignored with a warning.
    pub fn from_env() -> Self {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// [`RetryPolicy::from_env`] with the environment given as a lookup
    /// function, so that it can be tested without touching the process
    /// environment.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Self {
        let mut policy = RetryPolicy::default();
        if let Some(raw) = lookup("STRANDS_MAX_RETRIES") {
            match raw.trim().parse::<u32>() {
                Ok(n) => policy.max_retries = n,
                Err(_) => tracing::warn!(
                    value = %raw,
                    "ignoring STRANDS_MAX_RETRIES: not a non-negative integer"
                ),
            }
        }
        if let Some(raw) = lookup("STRANDS_RETRY_BASE_MS") {
            match raw.trim().parse::<u64>() {
                Ok(ms) => policy.base_delay = Duration::from_millis(ms),
                Err(_) => tracing::warn!(
                    value = %raw,
                    "ignoring STRANDS_RETRY_BASE_MS: not a non-negative integer"
                ),
            }
        }
        policy
    }

    /// The wait before retry number `retry` (0 for the first retry):
    /// `base_delay * 2^retry`, capped at `max_delay`. Deterministic.
    pub fn backoff(&self, retry: u32) -> Duration {
        let factor = 2u32.checked_pow(retry);
        let delay = factor.and_then(|f| self.base_delay.checked_mul(f));
        match delay {
            Some(d) => d.min(self.max_delay),
            None => self.max_delay,
        }
    }

    /// The wait after a 429: `Retry-After` seconds when the server sent a
    /// usable value, else [`RetryPolicy::backoff`]; capped at `max_delay`
    /// either way.
    pub fn delay_after_429(&self, headers: &HeaderMap, retry: u32) -> Duration {
        let header = headers
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(parse_retry_after);
        match header {
            Some(d) => d.min(self.max_delay),
            None => self.backoff(retry),
        }
    }

    /// The backoff for `retry` plus up to a quarter of it as jitter (taken
    /// from the clock's nanoseconds, so no random-number crate is needed),
    /// still capped at `max_delay`. Spreads out clients that failed together.
    fn jittered_backoff(&self, retry: u32) -> Duration {
        let delay = self.backoff(retry);
        let quarter = u64::try_from(delay.as_nanos() / 4).unwrap_or(u64::MAX);
        if quarter == 0 {
            return delay;
        }
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| u64::from(d.subsec_nanos()))
            .unwrap_or(0);
        (delay + Duration::from_nanos(nanos % quarter)).min(self.max_delay)
    }
}

/// Parses a `Retry-After` value given in whole seconds (`"0"`, `"12"`).
/// The HTTP-date form and anything else unparsable yield `None`, and the
/// caller falls back to backoff.
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    value.trim().parse::<u64>().ok().map(Duration::from_secs)
}

/// `url` without its query string, fragment, user name or password, for
/// logs and error messages: API keys sometimes travel in the query.
pub fn redact_url(url: &reqwest::Url) -> String {
    let mut clean = url.clone();
    clean.set_query(None);
    clean.set_fragment(None);
    // These fail only for URLs that cannot have credentials, which is fine.
    let _ = clean.set_username("");
    let _ = clean.set_password(None);
    clean.to_string()
}

/// At most [`EXCERPT_CHARS`] characters of `body`, whitespace runs collapsed
/// to one space, with `…` marking a cut.
pub fn excerpt(body: &str) -> String {
    let collapsed = body.split_whitespace().collect::<Vec<_>>().join(" ");
    if collapsed.chars().count() <= EXCERPT_CHARS {
        return collapsed;
    }
    let mut cut: String = collapsed.chars().take(EXCERPT_CHARS - 1).collect();
    cut.push('…');
    cut
}

/// True for transport failures worth another attempt: timeouts, failures to
/// connect, and connections that broke while the request was in flight.
fn is_retryable_transport(err: &reqwest::Error) -> bool {
    err.is_timeout() || err.is_connect() || err.is_request()
}

fn attempts_text(n: u32) -> String {
    if n == 1 {
        "1 attempt".to_string()
    } else {
        format!("{n} attempts")
    }
}

/// Sends the request that `build` makes, retrying transient failures per
/// `policy`, and returns the first successful (2xx) response.
///
/// `build` is called once per attempt, because a sent request is consumed.
/// `provider` names the provider in logs and errors (`"openai"`…).
///
/// Retried: HTTP 429 (waiting `Retry-After` seconds if given, capped at
/// `max_delay`), HTTP 5xx, timeouts and connection errors. Any other 4xx
/// fails at once. The error is `Error::Runtime` naming the method, the
/// redacted URL, the status, a body excerpt and the number of attempts.
pub async fn send_with_retry<F>(
    policy: &RetryPolicy,
    provider: &str,
    build: F,
) -> Result<reqwest::Response>
where
    F: Fn() -> reqwest::RequestBuilder,
{
    let mut attempt: u32 = 0;
    loop {
        attempt += 1;
        let (client, request) = build().build_split();
        let request = request.map_err(|e| {
            Error::Runtime(format!(
                "{provider}: could not build the request: {}",
                error::transport(e)
            ))
        })?;
        let method = request.method().clone();
        let url = redact_url(request.url());
        let retries_left = attempt <= policy.max_retries;
        let retry_index = attempt - 1;

        match client.execute(request).await {
            Ok(response) => {
                let status = response.status();
                if status.is_success() {
                    return Ok(response);
                }
                let retryable = status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error();
                if retryable && retries_left {
                    let delay = if status == StatusCode::TOO_MANY_REQUESTS {
                        policy.delay_after_429(response.headers(), retry_index)
                    } else {
                        policy.jittered_backoff(retry_index)
                    };
                    drop(response);
                    tracing::warn!(
                        provider,
                        %method,
                        url = %url,
                        status = status.as_u16(),
                        attempt,
                        max_attempts = policy.max_retries.saturating_add(1),
                        delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                        "provider call failed; retrying"
                    );
                    tokio::time::sleep(delay).await;
                    continue;
                }
                let body = match response.text().await {
                    Ok(body) => excerpt(&body),
                    Err(e) => format!("<body unreadable: {}>", error::transport(e)),
                };
                let body = if body.is_empty() {
                    "<empty body>".to_string()
                } else {
                    body
                };
                return Err(Error::Runtime(format!(
                    "{provider}: {method} {url} returned HTTP {status} after {}: {body}",
                    attempts_text(attempt)
                )));
            }
            Err(err) => {
                if is_retryable_transport(&err) && retries_left {
                    let delay = policy.jittered_backoff(retry_index);
                    tracing::warn!(
                        provider,
                        %method,
                        url = %url,
                        error = %error::transport(err),
                        attempt,
                        max_attempts = policy.max_retries.saturating_add(1),
                        delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                        "provider call failed; retrying"
                    );
                    tokio::time::sleep(delay).await;
                    continue;
                }
                let what = if err.is_timeout() {
                    "timed out"
                } else {
                    "failed"
                };
                return Err(Error::Runtime(format!(
                    "{provider}: {method} {url} {what} after {}: {}",
                    attempts_text(attempt),
                    error::transport(err)
                )));
            }
        }
    }
}

/// The HTTP client every provider uses: rustls with ring, and `timeout`
/// for each whole attempt (none when it is zero).
pub(crate) fn http_client(provider: &str, timeout: Duration) -> Result<reqwest::Client> {
    crate::provider::install_crypto();
    let mut builder = reqwest::Client::builder();
    if !timeout.is_zero() {
        builder = builder.timeout(timeout);
    }
    builder.build().map_err(|e| {
        Error::Runtime(format!(
            "{provider}: could not set up the HTTP client: {}",
            error::transport(e)
        ))
    })
}

/// Checks that `base` is an absolute http(s) URL and returns it without
/// trailing slashes. `origin` says where it came from, for the message.
pub(crate) fn normalize_base_url(provider: &str, origin: &str, base: &str) -> Result<String> {
    let trimmed = base.trim().trim_end_matches('/').to_string();
    match reqwest::Url::parse(&trimmed) {
        Ok(url) if matches!(url.scheme(), "http" | "https") && url.host().is_some() => Ok(trimmed),
        _ => Err(Error::Usage(format!(
            "{provider}: base URL from {origin} is not an absolute http(s) URL: `{}`",
            match reqwest::Url::parse(&trimmed) {
                Ok(url) => redact_url(&url),
                Err(_) => excerpt(&trimmed),
            }
        ))),
    }
}

/// Reads a successful response's body as JSON. A body that is not JSON is
/// an `Error::Runtime` with an excerpt. Also returns the raw text, so that
/// callers can quote it when the JSON lacks what they need.
pub(crate) async fn read_json(
    provider: &str,
    url: &str,
    response: reqwest::Response,
) -> Result<(serde_json::Value, String)> {
    let text = response.text().await.map_err(|e| {
        Error::Runtime(format!(
            "{provider}: reading the response from {url} failed: {}",
            error::transport(e)
        ))
    })?;
    match serde_json::from_str(&text) {
        Ok(value) => Ok((value, text)),
        Err(e) => Err(Error::Runtime(format!(
            "{provider}: the response from {url} is not JSON ({e}): {}",
            excerpt(&text)
        ))),
    }
}

/// A minimal HTTP/1.1 server on 127.0.0.1 for the providers' tests: it reads
/// each request head and `Content-Length` body, records them, and answers
/// with whatever the test's handler returns, then closes the connection.
#[cfg(test)]
pub(crate) mod fake_server {
    use std::collections::HashMap;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    /// What the server answers to one request.
    #[derive(Debug, Clone)]
    pub struct Reply {
        pub status: u16,
        pub headers: Vec<(String, String)>,
        pub body: String,
        /// Wait this long before answering (to provoke client timeouts).
        pub delay: Duration,
    }

    impl Reply {
        pub fn new(status: u16, body: &str) -> Self {
            Reply {
                status,
                headers: Vec::new(),
                body: body.to_string(),
                delay: Duration::ZERO,
            }
        }
        pub fn header(mut self, name: &str, value: &str) -> Self {
            self.headers.push((name.to_string(), value.to_string()));
            self
        }
        pub fn delayed(mut self, delay: Duration) -> Self {
            self.delay = delay;
            self
        }
    }

    /// One request as the server saw it.
    #[derive(Debug, Clone)]
    pub struct Seen {
        pub method: String,
        pub path: String,
        /// Header names lowercased.
        pub headers: HashMap<String, String>,
        pub body: String,
    }

    impl Seen {
        pub fn header(&self, name: &str) -> Option<&str> {
            self.headers
                .get(&name.to_ascii_lowercase())
                .map(String::as_str)
        }
        pub fn json(&self) -> serde_json::Value {
            serde_json::from_str(&self.body).expect("request body is JSON")
        }
    }

    pub struct FakeServer {
        /// `http://127.0.0.1:PORT`, no trailing slash.
        pub url: String,
        pub hits: Arc<AtomicUsize>,
        pub seen: Arc<Mutex<Vec<Seen>>>,
        task: tokio::task::JoinHandle<()>,
    }

    impl FakeServer {
        pub fn hits(&self) -> usize {
            self.hits.load(Ordering::SeqCst)
        }
        pub fn seen(&self) -> Vec<Seen> {
            self.seen.lock().expect("lock").clone()
        }
    }

    impl Drop for FakeServer {
        fn drop(&mut self) {
            self.task.abort();
        }
    }

    /// Starts the server; `handler` gets the 0-based index of each request.
    pub async fn start<H>(handler: H) -> FakeServer
    where
        H: Fn(usize) -> Reply + Send + Sync + 'static,
    {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("local addr");
        let hits = Arc::new(AtomicUsize::new(0));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let handler = Arc::new(handler);
        let task = {
            let hits = hits.clone();
            let seen = seen.clone();
            tokio::spawn(async move {
                loop {
                    let Ok((stream, _)) = listener.accept().await else {
                        return;
                    };
                    let hits = hits.clone();
                    let seen = seen.clone();
                    let handler = handler.clone();
                    tokio::spawn(async move {
                        let _ = serve_one(stream, hits, seen, handler).await;
                    });
                }
            })
        };
        FakeServer {
            url: format!("http://{addr}"),
            hits,
            seen,
            task,
        }
    }

    async fn serve_one<H>(
        mut stream: TcpStream,
        hits: Arc<AtomicUsize>,
        seen: Arc<Mutex<Vec<Seen>>>,
        handler: Arc<H>,
    ) -> std::io::Result<()>
    where
        H: Fn(usize) -> Reply + Send + Sync + 'static,
    {
        const LIMIT: usize = 1 << 20;
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        let head_end = loop {
            if let Some(pos) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break pos;
            }
            let n = stream.read(&mut chunk).await?;
            if n == 0 || buf.len() > LIMIT {
                return Ok(());
            }
            buf.extend_from_slice(&chunk[..n]);
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
        let mut lines = head.split("\r\n");
        let request_line = lines.next().unwrap_or_default();
        let mut parts = request_line.split(' ');
        let method = parts.next().unwrap_or_default().to_string();
        let path = parts.next().unwrap_or_default().to_string();
        let headers: HashMap<String, String> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
            .collect();
        let length: usize = headers
            .get("content-length")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let mut body = buf[head_end + 4..].to_vec();
        while body.len() < length && body.len() <= LIMIT {
            let n = stream.read(&mut chunk).await?;
            if n == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..n]);
        }
        let index = hits.fetch_add(1, Ordering::SeqCst);
        seen.lock().expect("lock").push(Seen {
            method,
            path,
            headers,
            body: String::from_utf8_lossy(&body).to_string(),
        });
        let reply = handler(index);
        if !reply.delay.is_zero() {
            tokio::time::sleep(reply.delay).await;
        }
        let mut out = format!("HTTP/1.1 {} Fake\r\n", reply.status);
        for (k, v) in &reply.headers {
            out.push_str(&format!("{k}: {v}\r\n"));
        }
        out.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            reply.body.len()
        ));
        out.push_str(&reply.body);
        stream.write_all(out.as_bytes()).await?;
        stream.flush().await?;
        stream.shutdown().await
    }
}

#[cfg(test)]
mod tests {
    use super::fake_server::{start, Reply};
    use super::*;
    use reqwest::header::HeaderValue;

    fn tiny() -> RetryPolicy {
        RetryPolicy {
            max_retries: 2,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(5),
        }
    }

    fn client() -> reqwest::Client {
        crate::provider::install_crypto();
        reqwest::Client::builder()
            .timeout(Duration::from_secs(5))
            .build()
            .expect("client")
    }

    #[test]
    fn default_policy_matches_the_contract() {
        let p = RetryPolicy::default();
        assert_eq!(p.max_retries, 3);
        assert_eq!(p.base_delay, Duration::from_millis(500));
        assert_eq!(p.max_delay, Duration::from_secs(20));
    }

    #[test]
    fn backoff_doubles_and_is_capped() {
        let p = RetryPolicy::default();
        assert_eq!(p.backoff(0), Duration::from_millis(500));
        assert_eq!(p.backoff(1), Duration::from_millis(1000));
        assert_eq!(p.backoff(2), Duration::from_millis(2000));
        assert_eq!(p.backoff(5), Duration::from_millis(16000));
        assert_eq!(p.backoff(6), Duration::from_secs(20));
        // Overflowing exponents saturate at the cap instead of panicking.
        assert_eq!(p.backoff(40), Duration::from_secs(20));
        assert_eq!(p.backoff(u32::MAX), Duration::from_secs(20));
    }

    #[test]
    fn jitter_stays_within_a_quarter_and_the_cap() {
        let p = RetryPolicy::default();
        for retry in 0..8 {
            let base = p.backoff(retry);
            let j = p.jittered_backoff(retry);
            assert!(j >= base, "{j:?} < {base:?}");
            assert!(j <= (base + base / 4).min(p.max_delay), "{j:?} too long");
        }
    }

    #[test]
    fn retry_after_parsing() {
        assert_eq!(parse_retry_after("0"), Some(Duration::ZERO));
        assert_eq!(parse_retry_after(" 7 "), Some(Duration::from_secs(7)));
        assert_eq!(parse_retry_after("-1"), None);
        assert_eq!(parse_retry_after("1.5"), None);
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
        assert_eq!(parse_retry_after(""), None);
    }

    #[test]
    fn delay_after_429_honours_and_caps_retry_after() {
        let p = RetryPolicy::default();
        let mut h = HeaderMap::new();
        h.insert(RETRY_AFTER, HeaderValue::from_static("3"));
        assert_eq!(p.delay_after_429(&h, 0), Duration::from_secs(3));
        h.insert(RETRY_AFTER, HeaderValue::from_static("3600"));
        assert_eq!(p.delay_after_429(&h, 0), Duration::from_secs(20));
        h.insert(RETRY_AFTER, HeaderValue::from_static("soon"));
        assert_eq!(p.delay_after_429(&h, 2), Duration::from_secs(2));
        assert_eq!(
            p.delay_after_429(&HeaderMap::new(), 1),
            Duration::from_secs(1)
        );
    }

    #[test]
    fn policy_from_lookup() {
        let p = RetryPolicy::from_lookup(|k| match k {
            "STRANDS_MAX_RETRIES" => Some("7".into()),
            "STRANDS_RETRY_BASE_MS" => Some("25".into()),
            _ => None,
        });
        assert_eq!(p.max_retries, 7);
        assert_eq!(p.base_delay, Duration::from_millis(25));
        assert_eq!(p.max_delay, Duration::from_secs(20));

        let bad = RetryPolicy::from_lookup(|_| Some("lots".into()));
        assert_eq!(bad, RetryPolicy::default());
        assert_eq!(RetryPolicy::from_lookup(|_| None), RetryPolicy::default());
    }

    #[test]
    fn excerpt_is_bounded_and_char_safe() {
        assert_eq!(excerpt("  a \n b  "), "a b");
        let long = "é".repeat(1000);
        let e = excerpt(&long);
        assert_eq!(e.chars().count(), EXCERPT_CHARS);
        assert!(e.ends_with('…'));
    }

    #[test]
    fn redact_url_drops_query_and_credentials() {
        let url =
            reqwest::Url::parse("https://user:pw@example.com/v1/x?key=SECRET#frag").expect("url");
        assert_eq!(redact_url(&url), "https://example.com/v1/x");
    }

    #[tokio::test]
    async fn retries_429_then_succeeds() {
        let server = start(|i| {
            if i == 0 {
                Reply::new(429, "{\"error\":\"slow down\"}").header("Retry-After", "0")
            } else {
                Reply::new(200, "ok")
            }
        })
        .await;
        let http = client();
        let url = format!("{}/x", server.url);
        let resp = send_with_retry(&tiny(), "test", || http.post(&url).body("hi"))
            .await
            .expect("success after retry");
        assert_eq!(resp.status(), 200);
        assert_eq!(resp.text().await.expect("body"), "ok");
        assert_eq!(server.hits(), 2);
        // The body was re-sent on the retry.
        assert!(server.seen().iter().all(|s| s.body == "hi"));
    }

    #[tokio::test]
    async fn gives_up_on_5xx_after_all_attempts() {
        let server = start(|_| Reply::new(503, "overloaded, try later")).await;
        let http = client();
        let url = format!("{}/v1/thing?api_key=SECRET", server.url);
        let err = send_with_retry(&tiny(), "test", || http.post(&url))
            .await
            .expect_err("must fail");
        assert_eq!(server.hits(), 3);
        let msg = err.to_string();
        assert!(matches!(err, Error::Runtime(_)));
        assert!(msg.contains("HTTP 503"), "{msg}");
        assert!(msg.contains("3 attempts"), "{msg}");
        assert!(msg.contains("overloaded, try later"), "{msg}");
        assert!(msg.contains(&format!("{}/v1/thing", server.url)), "{msg}");
        assert!(!msg.contains("SECRET"), "{msg}");
    }

    #[tokio::test]
    async fn does_not_retry_other_4xx() {
        let server = start(|_| Reply::new(401, "{\"error\":\"bad key\"}")).await;
        let http = client();
        let url = format!("{}/x", server.url);
        let err = send_with_retry(&tiny(), "test", || http.post(&url))
            .await
            .expect_err("must fail");
        assert_eq!(server.hits(), 1);
        let msg = err.to_string();
        assert!(msg.contains("HTTP 401"), "{msg}");
        assert!(msg.contains("1 attempt:"), "{msg}");
        assert!(msg.contains("bad key"), "{msg}");
    }

    #[tokio::test]
    async fn long_error_bodies_are_excerpted() {
        let server = start(|_| Reply::new(400, &"x".repeat(5000))).await;
        let http = client();
        let url = format!("{}/x", server.url);
        let msg = send_with_retry(&tiny(), "test", || http.post(&url))
            .await
            .expect_err("must fail")
            .to_string();
        assert!(msg.contains(&format!("{}…", "x".repeat(EXCERPT_CHARS - 1))));
        assert!(!msg.contains(&"x".repeat(EXCERPT_CHARS)), "{msg}");
    }

    #[tokio::test]
    async fn retries_timeouts() {
        let server = start(|_| Reply::new(200, "late").delayed(Duration::from_secs(3))).await;
        crate::provider::install_crypto();
        let http = reqwest::Client::builder()
            .timeout(Duration::from_millis(100))
            .build()
            .expect("client");
        let url = format!("{}/x", server.url);
        let policy = RetryPolicy {
            max_retries: 1,
            ..tiny()
        };
        let msg = send_with_retry(&policy, "test", || http.post(&url))
            .await
            .expect_err("must time out")
            .to_string();
        assert_eq!(server.hits(), 2);
        assert!(msg.contains("timed out after 2 attempts"), "{msg}");
    }

    #[tokio::test]
    async fn retries_connection_errors() {
        // Bind then drop a listener to get a port nothing listens on.
        let port = {
            let l = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind");
            l.local_addr().expect("addr").port()
        };
        let http = client();
        let url = format!("http://127.0.0.1:{port}/x");
        let msg = send_with_retry(&tiny(), "test", || http.post(&url))
            .await
            .expect_err("must fail")
            .to_string();
        assert!(msg.contains("failed after 3 attempts"), "{msg}");
        assert!(msg.contains(&format!("127.0.0.1:{port}/x")), "{msg}");
    }
}
