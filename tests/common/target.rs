//! A fake HTTP target for tool calls: an axum server that records every
//! request (counted on arrival, before any delay) and answers
//! `200 target got METHOD PATH`. `GET /redirect?to=URL` answers `302` to
//! URL, so tests can send a tool from one host to another.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Router;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One request the target received.
#[derive(Debug, Clone)]
pub struct Hit {
    pub method: String,
    pub path: String,
    pub body: String,
}

struct TargetShared {
    hits: Mutex<Vec<Hit>>,
    /// Requests with this method and path are answered only after the delay.
    slow: Option<(String, String, Duration)>,
}

/// An HTTP server on 127.0.0.1 that records every request (counted on
/// arrival, before any delay) and answers `200 target got METHOD PATH`.
pub struct Target {
    /// `http://127.0.0.1:PORT`, no trailing slash.
    pub url: String,
    shared: Arc<TargetShared>,
}

impl Target {
    pub fn start() -> Target {
        Target::start_with(None)
    }

    pub fn start_with(slow: Option<(&str, &str, Duration)>) -> Target {
        Target::start_on("127.0.0.1:0", slow).expect("bind the target on 127.0.0.1")
    }

    /// A target on another address (`[::1]:0`); `None` when the machine
    /// cannot bind it.
    pub fn start_on(addr: &str, slow: Option<(&str, &str, Duration)>) -> Option<Target> {
        let listener = std::net::TcpListener::bind(addr).ok()?;
        listener.set_nonblocking(true).expect("non-blocking");
        let local = listener.local_addr().ok()?;
        let (listener_ip, port) = (local.ip(), local.port());
        let shared = Arc::new(TargetShared {
            hits: Mutex::new(Vec::new()),
            slow: slow.map(|(m, p, d)| (m.to_string(), p.to_string(), d)),
        });
        let app = Router::new().fallback(hit).with_state(shared.clone());
        super::serve_on(listener, app);
        let host = match listener_ip {
            std::net::IpAddr::V6(ip) => format!("[{ip}]"),
            std::net::IpAddr::V4(ip) => ip.to_string(),
        };
        Some(Target {
            url: format!("http://{host}:{port}"),
            shared,
        })
    }

    pub fn hits(&self) -> Vec<Hit> {
        self.shared.hits.lock().expect("hits").clone()
    }

    /// How many `method path` requests arrived.
    pub fn count(&self, method: &str, path: &str) -> usize {
        self.hits()
            .iter()
            .filter(|h| h.method == method && h.path == path)
            .count()
    }

    /// Requests other than GET, whatever their path.
    pub fn writes(&self) -> usize {
        self.hits().iter().filter(|h| h.method != "GET").count()
    }

    pub fn wait_for(&self, method: &str, path: &str, n: usize, timeout: Duration) {
        let until = Instant::now() + timeout;
        while self.count(method, path) < n {
            assert!(
                Instant::now() < until,
                "the target got {} {method} {path} within {timeout:?}, wanted {n}",
                self.count(method, path)
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

async fn hit(
    State(shared): State<Arc<TargetShared>>,
    method: Method,
    uri: Uri,
    body: Bytes,
) -> Response {
    let method = method.to_string();
    let path = uri.path().to_string();
    shared.hits.lock().expect("hits").push(Hit {
        method: method.clone(),
        path: path.clone(),
        body: String::from_utf8_lossy(&body).into_owned(),
    });
    if let Some((m, p, d)) = &shared.slow {
        if (m == "*" || *m == method) && (p == "*" || *p == path) {
            tokio::time::sleep(*d).await;
        }
    }
    if path == "/redirect" {
        let to = url::form_urlencoded::parse(uri.query().unwrap_or_default().as_bytes())
            .find(|(k, _)| k == "to")
            .map(|(_, v)| v.into_owned())
            .unwrap_or_default();
        return (StatusCode::FOUND, [(header::LOCATION, to)], "").into_response();
    }
    format!("target got {method} {path}").into_response()
}
