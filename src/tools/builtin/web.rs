//! `web_fetch`: strands-cli's page fetcher. A GET through the same client,
//! egress policy and redirect rules as `http_request`, answered with
//! strands-cli's JSON: `{status, url, headers, body}` (`mode: html`, the
//! default) or `{status, url, markdown}` (`mode: markdown`, optionally with
//! `raw_html`).
//!
//! Markdown comes from `htmd` with scripts, styles and page chrome (`nav`,
//! `header`, `footer`, forms) left out; strands-cli picks the main content
//! with trafilatura first, which is smarter about boilerplate. Bodies longer
//! than the workflow's output limit are cut, and the JSON says so in
//! `truncated`. strands-cli retries a failed request once; this does not.
//!
//! Whether a fetch needs a human is the approval policy's business
//! (`engine::tools`): like `http_request`, a page on a host the spec does
//! not name is shown to a human first.

use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderValue, ACCEPT, ACCEPT_LANGUAGE, USER_AGENT};
use reqwest::{Method, Url};
use serde_json::{json, Map, Value};

use super::http::{
    fetch, headers_schema, is_web_url, may_follow, model_headers, read_body, HttpCall,
};
use super::str_arg;
use super::text::{effective_timeout, human_duration, short, short_n};
use crate::tools::{Grant, ToolEnv, ToolResult};

/// strands-cli's default time limit of one fetch, seconds.
const DEFAULT_TIMEOUT_SECS: u64 = 10;

/// The `User-Agent` of tool requests that do not set one.
pub(crate) fn user_agent() -> String {
    format!("strands-web-fetch/{}", env!("CARGO_PKG_VERSION"))
}

pub(super) fn spec() -> (&'static str, Value) {
    (
        "Fetch static web pages over HTTP/HTTPS and optionally convert the main content to \
         markdown. Returns JSON: status, final url, and the body (mode html) or markdown \
         (mode markdown).",
        json!({
            "type": "object",
            "properties": {
                "url": {"type": "string", "description": "HTTP or HTTPS URL to fetch."},
                "timeout": {"type": "integer", "minimum": 1, "description": "Request timeout in seconds (default 10)."},
                "headers": headers_schema("Optional HTTP headers to include with the request."),
                "mode": {"type": "string", "enum": ["html", "markdown"], "description": "Response processing mode (default html)."},
                "include_raw_html": {"type": "boolean", "description": "Include the raw HTML when returning markdown output."}
            },
            "required": ["url"],
            "additionalProperties": false
        }),
    )
}

pub(super) fn describe(args: &Value) -> String {
    let url = short_n(str_arg(args, "url").unwrap_or("?"), 200);
    match str_arg(args, "mode") {
        Some("markdown") => format!("fetch {url} (as markdown)"),
        _ => format!("fetch {url}"),
    }
}

pub(super) async fn web_fetch(args: &Value, env: &ToolEnv, grant: Grant) -> ToolResult {
    let raw = str_arg(args, "url").unwrap_or_default().trim();
    if raw.is_empty() {
        return ToolResult::error("No URL provided.");
    }
    let url = match Url::parse(raw) {
        Ok(u) if is_web_url(&u) => u,
        _ => {
            return ToolResult::error(format!(
                "Invalid URL: {}. Only http and https are allowed.",
                short(raw)
            ))
        }
    };
    let markdown = str_arg(args, "mode") == Some("markdown");
    let include_raw = markdown
        && args
            .get("include_raw_html")
            .and_then(Value::as_bool)
            .unwrap_or(false);
    let asked = args
        .get("timeout")
        .and_then(Value::as_u64)
        .unwrap_or(DEFAULT_TIMEOUT_SECS)
        .max(1);
    let limit = effective_timeout(env.timeout).min(Duration::from_secs(asked));
    let mut headers = HeaderMap::new();
    headers.insert(
        ACCEPT,
        HeaderValue::from_static("text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"),
    );
    headers.insert(ACCEPT_LANGUAGE, HeaderValue::from_static("en-US,en;q=0.9"));
    if let Ok(v) = HeaderValue::from_str(&user_agent()) {
        headers.insert(USER_AGENT, v);
    }
    match model_headers(args.get("headers")) {
        Ok(given) => {
            for (name, value) in given.iter() {
                headers.insert(name.clone(), value.clone());
            }
        }
        Err(e) => return ToolResult::error(e),
    }
    let follow = |next: &Url| may_follow(grant, &env.egress, next);
    let full = |u: &Url| u.to_string();
    let call = HttpCall {
        method: Method::GET,
        url: url.clone(),
        headers,
        body: None,
        timeout: limit,
        max_bytes: env.max_bytes,
        may_follow: &follow,
        show: &full,
    };
    let exchange = async {
        let mut fetched = fetch(env, &call, limit).await?;
        let body = read_body(&mut fetched.response, env.max_bytes).await;
        Ok::<_, ToolResult>((fetched, body))
    };
    let (fetched, body) = match tokio::time::timeout(limit, exchange).await {
        Ok(Ok(done)) => done,
        Ok(Err(refused)) => return refused,
        Err(_) => {
            return ToolResult::error(format!(
                "Request to {url} timed out after {}.",
                human_duration(limit)
            ))
        }
    };
    let status = fetched.response.status().as_u16();
    let text = body.text();
    let mut out = Map::new();
    out.insert("status".into(), json!(status));
    out.insert("url".into(), json!(fetched.url.to_string()));
    if markdown {
        let is_html = fetched
            .response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_none_or(|t| t.contains("html") || t.contains("xml"));
        let md = if is_html {
            to_markdown(&text)
        } else {
            text.clone()
        };
        out.insert("markdown".into(), json!(md));
        if include_raw {
            out.insert("raw_html".into(), json!(text));
        }
    } else {
        let mut headers = Map::new();
        for (name, value) in fetched.response.headers() {
            let value = value.to_str().unwrap_or("<not text>").to_string();
            headers.insert(name.to_string(), json!(value));
        }
        out.insert("headers".into(), Value::Object(headers));
        out.insert("body".into(), json!(text));
    }
    if let Some(note) = fetched.note {
        out.insert("redirect".into(), json!(note));
    }
    if let Some(note) = body.cut_note() {
        out.insert("truncated".into(), json!(note));
    }
    if let Some(e) = body.error {
        out.insert(
            "error".into(),
            json!(format!("reading the body failed: {e}")),
        );
    }
    ToolResult::ok(Value::Object(out).to_string())
}

/// The page as markdown, without scripts, styles and page chrome.
pub(crate) fn to_markdown(html: &str) -> String {
    let converter = htmd::HtmlToMarkdown::builder()
        .skip_tags(vec![
            "script", "style", "noscript", "template", "svg", "iframe", "head", "nav", "header",
            "footer", "form", "button",
        ])
        .build();
    match converter.convert(html) {
        Ok(md) => md.trim().to_string(),
        Err(_) => html.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{call, fixture};
    use super::super::{test_server, Builtin};
    use super::*;

    #[test]
    fn markdown_keeps_the_content_and_drops_the_chrome() {
        let md = to_markdown(
            "<html><head><title>T</title><style>p{}</style></head><body><nav>menu</nav>\
             <h1>Title</h1><p>Some <b>bold</b> text and <a href=\"https://e.com/x\">a link</a>.</p>\
             <script>alert(1)</script><ul><li>one</li><li>two</li></ul><footer>foot</footer></body></html>",
        );
        assert!(md.starts_with("# Title"), "{md}");
        assert!(
            md.contains("Some **bold** text and [a link](https://e.com/x)."),
            "{md}"
        );
        assert!(md.contains("one") && md.contains("two"), "{md}");
        for gone in ["menu", "alert", "foot", "p{}"] {
            assert!(!md.contains(gone), "{gone} in {md}");
        }
    }

    #[tokio::test]
    async fn fetches_a_page_as_json() {
        let f = fixture();
        let server = test_server::start().await;
        let r = call(
            Builtin::WebFetch,
            json!({"url": format!("{}/hello", server.url)}),
            &f.env,
        )
        .await;
        assert!(!r.is_error, "{}", r.content);
        let v: Value = serde_json::from_str(&r.content).expect("json");
        assert_eq!(v["status"], 200);
        assert_eq!(v["body"], "hello world");
        assert_eq!(v["headers"]["x-test"], "yes");
        let r = call(
            Builtin::WebFetch,
            json!({"url": format!("{}/big", server.url), "mode": "markdown"}),
            &f.env,
        )
        .await;
        let v: Value = serde_json::from_str(&r.content).expect("json");
        assert_eq!(v["markdown"].as_str().map(str::len), Some(1000));
        assert!(
            v["truncated"]
                .as_str()
                .is_some_and(|t| t.contains("9000 bytes cut")),
            "{v}"
        );
    }

    #[tokio::test]
    async fn loopback_is_refused_unless_allowed() {
        let mut f = fixture();
        let server = test_server::start().await;
        // The default policy: no exceptions.
        let egress = std::sync::Arc::new(crate::tools::egress::Egress::default());
        f.env.http = crate::tools::egress::client(&egress).expect("client");
        f.env.egress = egress;
        let r = call(
            Builtin::WebFetch,
            json!({"url": format!("{}/hello", server.url)}),
            &f.env,
        )
        .await;
        assert!(r.is_error);
        assert_eq!(
            r.blocked.as_deref(),
            Some("blocked: 127.0.0.1 is a loopback address; allow it in tools.network.allow")
        );
        let r = call(
            Builtin::WebFetch,
            json!({"url": "http://localhost:9/x"}),
            &f.env,
        )
        .await;
        assert!(r.blocked.is_some(), "{}", r.content);
        let r = call(
            Builtin::WebFetch,
            json!({"url": "file:///etc/passwd"}),
            &f.env,
        )
        .await;
        assert!(
            r.is_error && r.content.starts_with("Invalid URL"),
            "{}",
            r.content
        );
    }
}
