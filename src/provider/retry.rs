//! Sending a provider's HTTP request, and the small helpers every provider
//! shares around it.
//!
//! Model APIs fail transiently all the time, and a workflow that gave up on
//! the first blip would throw away every step already paid for, so each
//! provider sends its request through [`send_with_retry`]: it sorts each
//! failure for the shared [`RetryPolicy`] (429 waits `Retry-After`, 5xx,
//! timeouts and broken connections back off, other 4xx fail at once) and
//! words the final error. Failure messages name the URL without its query
//! string or credentials, never a header, and carry a short excerpt of the
//! body.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use reqwest::{Method, StatusCode};

use crate::error::{self, Error, Result};
use crate::retry::{self, Retry, Transient};

/// The shared policy, under the name code that builds a provider's config
/// (the engine) already uses.
pub use crate::retry::RetryPolicy;

/// The longest body excerpt put into an error message, in characters.
pub const EXCERPT_CHARS: usize = 300;

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

/// How a status that is not 2xx is retried: 429 after `Retry-After` (or the
/// backoff when the server gave no usable value), 5xx after the backoff,
/// anything else not at all.
fn retry_for_status(status: StatusCode, headers: &reqwest::header::HeaderMap) -> Retry {
    if status == StatusCode::TOO_MANY_REQUESTS {
        retry::retry_after(headers).map_or(Retry::Backoff, Retry::After)
    } else if status.is_server_error() {
        Retry::Backoff
    } else {
        Retry::Never
    }
}

fn attempts_text(n: u32) -> String {
    if n == 1 {
        "1 attempt".to_string()
    } else {
        format!("{n} attempts")
    }
}

/// What one attempt at a provider call hit.
enum Failure {
    /// The request could not be built: no attempt will do better.
    Build(reqwest::Error),
    /// The server answered with a status that is not 2xx. The response is
    /// kept for its body, which the final error quotes.
    Status {
        method: Method,
        url: String,
        response: reqwest::Response,
        retry: Retry,
    },
    /// No answer: the connection failed, broke or timed out. `error` no
    /// longer carries the URL (it may hold credentials); `url` is redacted.
    Transport {
        method: Method,
        url: String,
        error: reqwest::Error,
    },
}

impl Transient for Failure {
    fn retry(&self) -> Retry {
        match self {
            Failure::Build(_) => Retry::Never,
            Failure::Status { retry, .. } => *retry,
            Failure::Transport { error, .. } if is_retryable_transport(error) => Retry::Backoff,
            Failure::Transport { .. } => Retry::Never,
        }
    }
}

impl Failure {
    /// Logs that this failure will be retried after `delay`.
    fn log_retry(&self, provider: &str, attempt: u32, max_attempts: u32, delay: Duration) {
        let delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
        match self {
            Failure::Status {
                method,
                url,
                response,
                ..
            } => tracing::warn!(
                provider,
                %method,
                url = %url,
                status = response.status().as_u16(),
                attempt,
                max_attempts,
                delay_ms,
                "provider call failed; retrying"
            ),
            Failure::Transport { method, url, error } => tracing::warn!(
                provider,
                %method,
                url = %url,
                error = %error::chain(error),
                attempt,
                max_attempts,
                delay_ms,
                "provider call failed; retrying"
            ),
            // Never retried, so never logged here.
            Failure::Build(_) => {}
        }
    }

    /// The error the caller gets after `attempts` attempts ended in this.
    async fn into_error(self, provider: &str, attempts: u32) -> Error {
        let attempts = attempts_text(attempts);
        match self {
            Failure::Build(e) => Error::Runtime(format!(
                "{provider}: could not build the request: {}",
                error::transport(e)
            )),
            Failure::Status {
                method,
                url,
                response,
                ..
            } => {
                let status = response.status();
                let body = match response.text().await {
                    Ok(body) if body.trim().is_empty() => "<empty body>".to_string(),
                    Ok(body) => excerpt(&body),
                    Err(e) => format!("<body unreadable: {}>", error::transport(e)),
                };
                Error::Runtime(format!(
                    "{provider}: {method} {url} returned HTTP {status} after {attempts}: {body}"
                ))
            }
            Failure::Transport { method, url, error } => {
                let what = if error.is_timeout() {
                    "timed out"
                } else {
                    "failed"
                };
                Error::Runtime(format!(
                    "{provider}: {method} {url} {what} after {attempts}: {}",
                    error::transport(error)
                ))
            }
        }
    }
}

/// Sends the request that `build` makes, retrying transient failures per
/// `policy`, and returns the first successful (2xx) response.
///
/// `build` is called once per attempt, because a sent request is consumed.
/// `provider` names the provider in logs and errors (`"openai"`…).
///
/// Retried: HTTP 429 (waiting `Retry-After` if given, capped at the policy's
/// `max_server_delay`), HTTP 5xx, timeouts and connection errors. Any other
/// 4xx fails at once. The error is `Error::Runtime` naming the method, the
/// redacted URL, the status, a body excerpt and the number of attempts.
pub async fn send_with_retry<F>(
    policy: &RetryPolicy,
    provider: &str,
    build: F,
) -> Result<reqwest::Response>
where
    F: Fn() -> reqwest::RequestBuilder,
{
    let attempts = AtomicU32::new(0);
    let max_attempts = policy.max_retries.saturating_add(1);
    let outcome = policy
        .run(
            || {
                attempts.fetch_add(1, Ordering::Relaxed);
                let (client, request) = build().build_split();
                async move {
                    let request = request.map_err(Failure::Build)?;
                    let method = request.method().clone();
                    let url = redact_url(request.url());
                    match client.execute(request).await {
                        Ok(response) if response.status().is_success() => Ok(response),
                        Ok(response) => Err(Failure::Status {
                            retry: retry_for_status(response.status(), response.headers()),
                            method,
                            url,
                            response,
                        }),
                        Err(error) => Err(Failure::Transport {
                            method,
                            url,
                            error: error.without_url(),
                        }),
                    }
                }
            },
            |failure, delay| {
                failure.log_retry(
                    provider,
                    attempts.load(Ordering::Relaxed),
                    max_attempts,
                    delay,
                )
            },
        )
        .await;
    match outcome {
        Ok(response) => Ok(response),
        Err(failure) => Err(failure
            .into_error(provider, attempts.load(Ordering::Relaxed))
            .await),
    }
}

/// The HTTP client every provider uses: rustls with ring, and `timeout`
/// for each whole attempt (none when it is zero); one per timeout in the
/// process, so runs share its connections (`crate::http::shared`).
pub(crate) fn http_client(provider: &str, timeout: Duration) -> Result<reqwest::Client> {
    crate::http::shared(timeout).map_err(|e| {
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
            max_server_delay: Duration::from_secs(2),
        }
    }

    fn client() -> reqwest::Client {
        crate::http::install_crypto();
        reqwest::Client::builder()
            .timeout(Duration::from_secs(5))
            .build()
            .expect("client")
    }

    #[test]
    fn statuses_are_sorted_for_the_policy() {
        use reqwest::header::{HeaderMap, RETRY_AFTER};
        let none = HeaderMap::new();
        let mut asked = HeaderMap::new();
        asked.insert(RETRY_AFTER, HeaderValue::from_static("3"));
        let mut unusable = HeaderMap::new();
        unusable.insert(RETRY_AFTER, HeaderValue::from_static("soon"));
        let too_many = StatusCode::TOO_MANY_REQUESTS;
        assert_eq!(
            retry_for_status(too_many, &asked),
            Retry::After(Duration::from_secs(3))
        );
        assert_eq!(retry_for_status(too_many, &none), Retry::Backoff);
        assert_eq!(retry_for_status(too_many, &unusable), Retry::Backoff);
        assert_eq!(
            retry_for_status(StatusCode::BAD_GATEWAY, &asked),
            Retry::Backoff
        );
        for status in [400, 401, 403, 404, 422] {
            let status = StatusCode::from_u16(status).expect("status");
            assert_eq!(retry_for_status(status, &none), Retry::Never, "{status}");
        }
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
    async fn a_429_waits_what_retry_after_asks_not_the_backoff() {
        let server = start(|i| {
            if i == 0 {
                Reply::new(429, "{}").header("Retry-After", "1")
            } else {
                Reply::new(200, "ok")
            }
        })
        .await;
        let http = client();
        let url = format!("{}/x", server.url);
        let started = std::time::Instant::now();
        send_with_retry(&tiny(), "test", || http.post(&url))
            .await
            .expect("success after retry");
        assert_eq!(server.hits(), 2);
        let waited = started.elapsed();
        assert!(
            waited >= Duration::from_millis(950),
            "tiny()'s backoff is 1 ms, Retry-After asked 1 s: {waited:?}"
        );
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
        crate::http::install_crypto();
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
