//! A local HTTP server for the HTTP tools' tests (127.0.0.1 only).

use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use std::time::Duration;

pub struct Server {
    /// `http://127.0.0.1:PORT`, no trailing slash.
    pub url: String,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

pub async fn start() -> Server {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let app = axum::Router::new().fallback(handle);
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Server {
        url: format!("http://{addr}"),
        task,
    }
}

fn reply(status: u16, headers: &[(&str, String)], body: impl Into<Body>) -> Response {
    let mut b = Response::builder().status(status);
    for (k, v) in headers {
        b = b.header(*k, v.as_str());
    }
    b.body(body.into()).expect("response")
}

fn redirect(status: u16, to: impl Into<String>) -> Response {
    reply(status, &[("location", to.into())], "")
}

/// Routes: `/hello`, `/big` (10,000 bytes), `/utf8` (1,000 `é`),
/// `/slow` (10 s), `/redirect/N` (N hops, then `landed`), `/to-file`,
/// `/see-other`, `/post-away` (307 to another origin), `/api/out` (302
/// out of `/api`), `/api/in` (302 inside it); anything else echoes the
/// request: `METHOD URI`, the headers one a line (the value of
/// `authorization` as its length), a blank line, the body.
async fn handle(req: Request) -> Response {
    let method = req.method().to_string();
    let uri = req.uri().clone();
    let port = req
        .headers()
        .get("host")
        .and_then(|h| h.to_str().ok())
        .and_then(|h| h.rsplit(':').next())
        .unwrap_or("1")
        .to_string();
    // Authorization values are not echoed, only their length, so that
    // tests can check that secrets never reach a result.
    let headers: Vec<String> = req
        .headers()
        .iter()
        .map(|(k, v)| match k.as_str() {
            "authorization" => format!("{k}: <{} bytes>", v.len()),
            _ => format!("{k}: {}", v.to_str().unwrap_or("?")),
        })
        .collect();
    let body = axum::body::to_bytes(req.into_body(), 1 << 20)
        .await
        .unwrap_or_default();
    let path = uri.path();
    match path {
        "/hello" => reply(
            200,
            &[
                ("content-type", "text/plain".into()),
                ("x-test", "yes".into()),
            ],
            "hello world",
        ),
        "/big" => reply(200, &[], "a".repeat(10_000)),
        "/utf8" => reply(200, &[], "é".repeat(1000)),
        "/slow" => {
            tokio::time::sleep(Duration::from_secs(10)).await;
            reply(200, &[], "late")
        }
        "/to-file" => redirect(302, "file:///etc/passwd"),
        "/see-other" => redirect(303, "/echo?after=303"),
        "/post-away" => redirect(307, format!("http://localhost:{port}/echo")),
        "/api/out" => redirect(302, "/private/data"),
        "/api/in" => redirect(302, "/api/echo?from=in"),
        p if p.starts_with("/redirect/") => {
            let n: u32 = p["/redirect/".len()..].parse().unwrap_or(0);
            if n == 0 {
                reply(200, &[], "landed")
            } else {
                redirect(302, format!("/redirect/{}", n - 1))
            }
        }
        _ => reply(
            200,
            &[("content-type", "text/plain".into())],
            format!(
                "{method} {uri}\n{}\n\n{}",
                headers.join("\n"),
                String::from_utf8_lossy(&body)
            ),
        ),
    }
}
