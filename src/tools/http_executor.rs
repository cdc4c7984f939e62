//! strands-cli's `tools.http_executors` entries as tools: each one is an
//! HTTP API at a fixed `base_url` with fixed headers (often credentials).
//!
//! The model chooses the method, a `path` appended to `base_url`, query
//! parameters, extra headers and a body; every request stays inside
//! `base_url` (same scheme, host and port, path under the base path), and
//! so does every redirect followed. The executor's headers are always sent
//! and the model's headers cannot override them. Header values may be
//! secrets: they never appear in results, errors, `describe()` or `Debug`,
//! and query parameters that come from `base_url` itself are shown masked.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use reqwest::header::{self, HeaderMap, HeaderName, HeaderValue};
use reqwest::Url;
use serde_json::{json, Value};

use super::builtin::{
    self, body_size, header_names, headers_schema, is_web_url, method_changes_state, model_headers,
    parse_method, short, short_n, str_arg, HttpCall,
};
use super::{Risk, ToolEnv, ToolMeta, ToolResult};
use crate::provider::ToolSpec;

/// Request headers the model may not set on an executor call: they would
/// change where or how the request is delivered.
const RESERVED_HEADERS: [&str; 5] = [
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "upgrade",
];

/// One `tools.http_executors` entry.
#[derive(Clone)]
pub struct HttpExecutor {
    /// The tool's name as the model sees it.
    pub id: String,
    pub base_url: String,
    /// Sent with every request; values may be secrets.
    pub headers: BTreeMap<String, String>,
    /// Overrides [`ToolEnv::timeout`] when set.
    pub timeout: Option<Duration>,
    pub description: Option<String>,
}

/// Header values are secrets: `Debug` shows only their names.
impl fmt::Debug for HttpExecutor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpExecutor")
            .field("id", &self.id)
            .field("base_url", &self.shown_base())
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("timeout", &self.timeout)
            .field("description", &self.description)
            .finish()
    }
}

impl HttpExecutor {
    /// Name, description and JSON schema offered to the model.
    pub fn spec(&self) -> ToolSpec {
        let base = self.shown_base();
        let mechanics = format!(
            "Calls the HTTP API at {base}: `path` is appended to that URL and requests cannot \
             leave it. Returns the status, a summary of the response headers and the body (long \
             bodies are cut). GET and HEAD only read; other methods may change state and may \
             need a human's approval first."
        );
        let description = match self.description.as_deref().map(str::trim) {
            Some(d) if !d.is_empty() => format!("{d}\n\n{mechanics}"),
            _ => mechanics,
        };
        ToolSpec {
            name: self.id.clone(),
            description,
            parameters: json!({
                "type": "object",
                "properties": {
                    "method": {
                        "type": "string",
                        "enum": builtin::HTTP_METHODS,
                        "default": "GET",
                        "description": "The HTTP method (default GET)."
                    },
                    "path": {
                        "type": "string",
                        "description": "Path appended to the API's base URL, e.g. `/users/42` (may end with `?key=value`; no scheme or host)."
                    },
                    "query": {
                        "type": "object",
                        "additionalProperties": {"type": "string"},
                        "description": "Query parameters, name to value."
                    },
                    "headers": headers_schema("Extra request headers, name to value (cannot replace the API's own headers)."),
                    "body": {
                        "type": ["string", "object"],
                        "description": "Request body: a string is sent as given; an object is sent as JSON."
                    }
                },
                "required": ["path"],
                "additionalProperties": false
            }),
        }
    }

    fn method<'a>(&self, args: &'a Value) -> &'a str {
        str_arg(args, "method").unwrap_or("GET")
    }

    /// True unless the method (default GET) is GET or HEAD.
    pub fn changes_state(&self, args: &Value) -> bool {
        method_changes_state(self.method(args))
    }

    /// GET and HEAD: reversible, low risk; other methods: irreversible,
    /// medium risk.
    pub fn meta(&self, args: &Value) -> ToolMeta {
        if self.changes_state(args) {
            ToolMeta {
                reversible: false,
                risk: Risk::Medium,
            }
        } else {
            ToolMeta {
                reversible: true,
                risk: Risk::Low,
            }
        }
    }

    /// One line for the approval request, e.g.
    /// `POST https://api.example.com/v1/pay via payments (124-byte body)`.
    /// Never shows header values.
    pub fn describe(&self, args: &Value) -> String {
        let method = self.method(args).to_ascii_uppercase();
        let path = str_arg(args, "path").unwrap_or_default();
        let query = string_pairs(args.get("query"));
        let target = match self.build_url(path, &query) {
            Ok(url) => self.show(&url),
            Err(_) => format!("{}{} (refused path)", self.shown_base(), short(path)),
        };
        let mut extras = Vec::new();
        match args.get("body") {
            Some(Value::String(s)) => extras.push(body_size(s.len())),
            Some(v @ Value::Object(_)) => {
                extras.push(format!("JSON {}", body_size(v.to_string().len())))
            }
            _ => {}
        }
        if let Some(names) = header_names(args.get("headers")) {
            extras.push(names);
        }
        let mut line = format!(
            "{} {} via {}",
            short_n(&method, 10),
            short_n(&target, 200),
            short(&self.id)
        );
        if !extras.is_empty() {
            line.push_str(&format!(" ({})", extras.join(", ")));
        }
        line
    }

    /// Runs the call. Never panics; failures are error results.
    pub async fn run(&self, args: &Value, env: &ToolEnv) -> ToolResult {
        let method = match parse_method(self.method(args)) {
            Ok(m) => m,
            Err(e) => return ToolResult::error(e),
        };
        let path = str_arg(args, "path").unwrap_or_default();
        let query = string_pairs(args.get("query"));
        let url = match self.build_url(path, &query) {
            Ok(u) => u,
            Err(e) => return ToolResult::error(e),
        };
        let mut headers = match self.own_headers() {
            Ok(h) => h,
            Err(e) => return ToolResult::error(e),
        };
        let mut notes = Vec::new();
        let extra = match model_headers(args.get("headers")) {
            Ok(h) => h,
            Err(e) => return ToolResult::error(e),
        };
        for (name, value) in &extra {
            if headers.contains_key(name) {
                notes.push(format!(
                    "[header `{name}` from the call was ignored: the API sets it]"
                ));
            } else if RESERVED_HEADERS.contains(&name.as_str()) {
                notes.push(format!(
                    "[header `{name}` from the call was ignored: it cannot be set]"
                ));
            } else {
                headers.append(name.clone(), value.clone());
            }
        }
        let body = match args.get("body") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.as_bytes().to_vec()),
            Some(v @ Value::Object(_)) => {
                if !headers.contains_key(header::CONTENT_TYPE) {
                    headers.insert(
                        header::CONTENT_TYPE,
                        HeaderValue::from_static("application/json"),
                    );
                }
                Some(v.to_string().into_bytes())
            }
            Some(_) => return ToolResult::error("`body` must be a string or an object"),
        };
        let base = match self.base() {
            Ok(b) => b,
            Err(e) => return ToolResult::error(e),
        };
        let inside = |next: &Url| {
            if within(&base, next) {
                Ok(())
            } else {
                Err("it leaves the API's base URL".to_string())
            }
        };
        let show = |u: &Url| self.show(u);
        let mut result = builtin::send(
            env,
            HttpCall {
                method,
                url,
                headers,
                body,
                timeout: self.timeout.unwrap_or(env.timeout),
                max_bytes: env.max_bytes,
                may_follow: &inside,
                show: &show,
            },
        )
        .await;
        if !notes.is_empty() {
            result.content = format!("{}\n{}", notes.join("\n"), result.content);
        }
        result
    }

    /// `base_url`, parsed and checked.
    fn base(&self) -> Result<Url, String> {
        match Url::parse(self.base_url.trim()) {
            Ok(u) if is_web_url(&u) => Ok(u),
            _ => Err(format!(
                "the base URL of `{}` is not an absolute http(s) URL",
                short(&self.id)
            )),
        }
    }

    /// `base_url` for people: no user name, password or query values.
    fn shown_base(&self) -> String {
        match self.base() {
            Ok(u) => self.show(&u),
            Err(_) => "<invalid base URL>".to_string(),
        }
    }

    /// `url` without credentials, and with the values of query parameters
    /// that come from `base_url` masked (they may be API keys).
    fn show(&self, url: &Url) -> String {
        let mut clean = url.clone();
        let _ = clean.set_username("");
        let _ = clean.set_password(None);
        clean.set_fragment(None);
        let secret_keys: Vec<String> = self
            .base()
            .map(|b| b.query_pairs().map(|(k, _)| k.into_owned()).collect())
            .unwrap_or_default();
        if clean.query().is_some() {
            let pairs: Vec<(String, String)> = clean
                .query_pairs()
                .map(|(k, v)| {
                    let v = if secret_keys.iter().any(|s| *s == k) {
                        "***".to_string()
                    } else {
                        v.into_owned()
                    };
                    (k.into_owned(), v)
                })
                .collect();
            clean.set_query(None);
            if !pairs.is_empty() {
                clean.query_pairs_mut().extend_pairs(pairs);
            }
        }
        clean.to_string()
    }

    /// The executor's own headers. Errors name the header, never its value.
    fn own_headers(&self) -> Result<HeaderMap, String> {
        let mut map = HeaderMap::new();
        for (name, value) in &self.headers {
            let header = HeaderName::from_bytes(name.trim().as_bytes()).map_err(|_| {
                format!(
                    "`{}`: `{}` is not a valid header name",
                    short(&self.id),
                    short(name)
                )
            })?;
            let mut value = HeaderValue::from_str(value).map_err(|_| {
                format!(
                    "`{}`: the value of header `{header}` is not a valid header value",
                    short(&self.id)
                )
            })?;
            value.set_sensitive(true);
            map.insert(header, value);
        }
        Ok(map)
    }

    /// `base_url` + `path` (+ query), refusing anything that would leave
    /// `base_url`.
    fn build_url(&self, path: &str, query: &[(String, String)]) -> Result<Url, String> {
        let base = self.base()?;
        let shown = short(path);
        if path.contains("://") || path.trim_start().starts_with("//") {
            return Err(format!(
                "path `{shown}` is refused: give a path under the API's base URL, not a URL"
            ));
        }
        if path.contains('\\') || path.chars().any(char::is_control) {
            return Err(format!(
                "path `{shown}` is refused: backslashes and control characters are not allowed"
            ));
        }
        if path.contains('#') {
            return Err(format!(
                "path `{shown}` is refused: fragments (`#`) are not allowed"
            ));
        }
        let (path_part, query_part) = match path.split_once('?') {
            Some((p, q)) => (p, Some(q)),
            None => (path, None),
        };
        if path_part.split('/').any(is_dot_dot) {
            return Err(format!("path `{shown}` is refused: `..` may not be used"));
        }
        let mut url = base.clone();
        let rel = path_part.trim_start_matches('/');
        if !rel.is_empty() {
            let joined = format!("{}/{rel}", base.path().trim_end_matches('/'));
            url.set_path(&joined);
        }
        let mut query_text: Vec<String> = base.query().map(str::to_string).into_iter().collect();
        if let Some(q) = query_part.filter(|q| !q.is_empty()) {
            query_text.push(q.to_string());
        }
        let query_text = query_text.join("&");
        url.set_query(
            Some(&query_text)
                .filter(|q| !q.is_empty())
                .map(String::as_str),
        );
        if !query.is_empty() {
            url.query_pairs_mut().extend_pairs(query);
        }
        // Whatever the parser made of it, the result must stay inside.
        let url = Url::parse(url.as_str()).map_err(|e| format!("path `{shown}`: {e}"))?;
        if !within(&base, &url) {
            return Err(format!(
                "path `{shown}` is refused: it leaves the API's base URL"
            ));
        }
        Ok(url)
    }
}

/// True for `..` in any spelling (`%2e%2E`, `.%2e`, …).
fn is_dot_dot(segment: &str) -> bool {
    let lowered = segment.to_ascii_lowercase().replace("%2e", ".");
    lowered == ".."
}

/// Same scheme, host and port as `base`, and a path under `base`'s path.
fn within(base: &Url, url: &Url) -> bool {
    if url.origin() != base.origin() {
        return false;
    }
    let prefix = base.path().trim_end_matches('/');
    prefix.is_empty() || url.path() == prefix || url.path().starts_with(&format!("{prefix}/"))
}

/// The string-valued entries of an object argument, in order.
fn string_pairs(v: Option<&Value>) -> Vec<(String, String)> {
    v.and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::builtin::{loopback_allowed, test_server};
    use crate::tools::{schema, Grant, Tool};

    const SECRET: &str = "sk-live-TOPSECRET-123";

    fn executor(base_url: &str) -> HttpExecutor {
        HttpExecutor {
            id: "payments".into(),
            base_url: base_url.into(),
            headers: BTreeMap::from([
                ("Authorization".to_string(), format!("Bearer {SECRET}")),
                ("X-Team".to_string(), "blue".to_string()),
            ]),
            timeout: None,
            description: Some("The payments API.".into()),
        }
    }

    fn env() -> ToolEnv {
        ToolEnv {
            workspace: std::env::temp_dir().join("strands-http-executor-tests-unused"),
            http: crate::tools::egress::client(&loopback_allowed()).expect("client"),
            egress: loopback_allowed(),
            max_bytes: 1000,
            timeout: Duration::from_secs(5),
            shell_enabled: false,
            search: Default::default(),
            clock: std::sync::Arc::new(crate::clock::FixedClock::at(crate::clock::test_epoch())),
        }
    }

    async fn call(x: &HttpExecutor, args: Value) -> ToolResult {
        let r = Tool::Http(x.clone())
            .run(&args, &env(), Grant::Policy)
            .await;
        assert!(!r.content.contains(SECRET), "secret leaked: {}", r.content);
        r
    }

    #[test]
    fn spec_and_schema() {
        let x = executor("https://api.example.com/v1?api_key=KEY123");
        let spec = x.spec();
        assert_eq!(spec.name, "payments");
        assert!(
            spec.description.starts_with("The payments API.\n\n"),
            "{}",
            spec.description
        );
        assert!(spec
            .description
            .contains("https://api.example.com/v1?api_key=***"));
        assert!(!spec.description.contains("KEY123"));
        let p = &spec.parameters;
        assert_eq!(p["type"], "object");
        assert_eq!(p["additionalProperties"], false);
        assert_eq!(p["properties"]["method"]["default"], "GET");
        let ok = |a: Value| schema::validate(p, &a);
        assert!(ok(json!({"path": "/x"})).is_ok());
        assert!(
            ok(json!({"path": "/x", "method": "POST", "body": {"a": 1}, "query": {"q": "1"}}))
                .is_ok()
        );
        assert!(ok(json!({"path": "/x", "body": "raw"})).is_ok());
        let e = ok(json!({"method": "GET"})).expect_err("path required");
        assert!(e.contains("path"), "{e}");
        let e = ok(json!({"path": 3})).expect_err("type");
        assert!(e.contains("/path"), "{e}");
        let e = ok(json!({"path": "/", "body": [1]})).expect_err("body type");
        assert!(e.contains("/body"), "{e}");
        let e = ok(json!({"path": "/", "url": "http://evil"})).expect_err("unknown");
        assert!(e.contains("url"), "{e}");
        let e = ok(json!({"path": "/", "query": {"a": 1}})).expect_err("query values");
        assert!(e.contains("/query/a"), "{e}");
    }

    #[test]
    fn state_meta_and_describe() {
        let x = executor("https://api.example.com/v1/");
        assert!(!x.changes_state(&json!({"path": "/"})), "GET by default");
        assert!(!x.changes_state(&json!({"path": "/", "method": "HEAD"})));
        assert!(x.changes_state(&json!({"path": "/", "method": "DELETE"})));
        assert_eq!(
            x.meta(&json!({"path": "/"})),
            ToolMeta {
                reversible: true,
                risk: Risk::Low
            }
        );
        assert_eq!(
            x.meta(&json!({"path": "/", "method": "POST"})),
            ToolMeta {
                reversible: false,
                risk: Risk::Medium
            }
        );
        assert_eq!(
            x.describe(&json!({"path": "/pay", "method": "POST", "body": "x".repeat(124)})),
            "POST https://api.example.com/v1/pay via payments (124-byte body)"
        );
        assert_eq!(
            x.describe(&json!({"path": "users", "query": {"q": "a b"}})),
            "GET https://api.example.com/v1/users?q=a+b via payments"
        );
        assert_eq!(
            x.describe(&json!({"path": "/x", "method": "PUT", "body": {"a": 1}, "headers": {"If-Match": "1"}})),
            "PUT https://api.example.com/v1/x via payments (JSON 7-byte body, headers: If-Match)"
        );
        let refused = x.describe(&json!({"path": "//evil.com/x"}));
        assert!(refused.contains("(refused path)"), "{refused}");
        let dbg = format!("{x:?}");
        assert!(
            !dbg.contains(SECRET) && dbg.contains("Authorization"),
            "{dbg}"
        );
        for args in [
            json!({"path": "/"}),
            json!({"path": "/", "method": "POST", "body": "b"}),
        ] {
            assert!(!x.describe(&args).contains(SECRET));
        }
    }

    #[test]
    fn urls_stay_under_the_base() {
        let x = executor("https://api.example.com/v1");
        let url = |p: &str| x.build_url(p, &[]).map(|u| u.to_string());
        assert_eq!(url("").as_deref(), Ok("https://api.example.com/v1"));
        assert_eq!(
            url("/users/42").as_deref(),
            Ok("https://api.example.com/v1/users/42")
        );
        assert_eq!(
            url("users?x=1").as_deref(),
            Ok("https://api.example.com/v1/users?x=1")
        );
        assert_eq!(
            url("a b").as_deref(),
            Ok("https://api.example.com/v1/a%20b")
        );
        for bad in [
            "https://evil.com/x",
            "//evil.com/x",
            "/../admin",
            "a/../../admin",
            "/%2e%2e/admin",
            "/.%2E/admin",
            "\\\\evil.com",
            "/x#frag",
            "/x\n",
        ] {
            let e = url(bad).expect_err(bad);
            assert!(e.contains("refused"), "{bad}: {e}");
        }
        // `@` and `:` in a path stay in the path.
        assert_eq!(
            url("@evil.com").as_deref(),
            Ok("https://api.example.com/v1/@evil.com")
        );
        assert_eq!(
            url(":443@evil.com/").as_deref(),
            Ok("https://api.example.com/v1/:443@evil.com/")
        );
        // The base's own query is kept; the model's is added.
        let k = executor("https://api.example.com/v1?key=K");
        assert_eq!(
            k.build_url("/x?a=1", &[("b".into(), "2&3".into())])
                .map(|u| u.to_string())
                .as_deref(),
            Ok("https://api.example.com/v1/x?key=K&a=1&b=2%263")
        );
        assert!(within(
            &Url::parse("https://h/").expect("url"),
            &Url::parse("https://h/anything").expect("url")
        ));
        assert!(!within(
            &Url::parse("https://h/v1").expect("url"),
            &Url::parse("https://h/v10").expect("url")
        ));
        assert!(!within(
            &Url::parse("https://h/v1").expect("url"),
            &Url::parse("http://h/v1").expect("url")
        ));
    }

    #[tokio::test]
    async fn runs_with_the_executors_headers() {
        let server = test_server::start().await;
        let x = executor(&format!("{}/api", server.url));
        let r = call(
            &x,
            json!({
                "path": "/echo",
                "query": {"q": "rust lang"},
                "headers": {"authorization": "Bearer model-token", "X-Extra": "1", "Host": "evil.com"}
            }),
        )
        .await;
        assert!(!r.is_error, "{}", r.content);
        let (notes, response) = r.content.split_once("HTTP 200 OK\n").expect("status");
        assert!(
            notes.contains("[header `authorization` from the call was ignored: the API sets it]\n"),
            "{notes}"
        );
        assert!(
            notes.contains("[header `host` from the call was ignored: it cannot be set]\n"),
            "{notes}"
        );
        assert!(response.contains("host: 127.0.0.1:"), "{response}");
        assert!(
            r.content.contains("GET /api/echo?q=rust+lang\n"),
            "{}",
            r.content
        );
        assert!(r.content.contains("x-team: blue\n"), "{}", r.content);
        assert!(r.content.contains("x-extra: 1\n"), "{}", r.content);
        assert!(!r.content.contains("evil.com"), "{}", r.content);
        // The executor's Authorization was sent, not the model's (the echo
        // shows its length: `Bearer ` + the secret).
        assert!(
            r.content
                .contains(&format!("authorization: <{} bytes>\n", 7 + SECRET.len())),
            "{}",
            r.content
        );
        assert_eq!(r.content.matches("authorization: <").count(), 1);
        let x2 = HttpExecutor {
            headers: BTreeMap::from([("X-Key".into(), "visible-test-value".into())]),
            ..x.clone()
        };
        let r = Tool::Http(x2)
            .run(&json!({"path": "/echo"}), &env(), Grant::Policy)
            .await;
        assert!(
            r.content.contains("x-key: visible-test-value\n"),
            "{}",
            r.content
        );
    }

    #[tokio::test]
    async fn bodies_and_redirects() {
        let server = test_server::start().await;
        let x = executor(&format!("{}/api", server.url));
        let r = call(
            &x,
            json!({"method": "POST", "path": "echo", "body": {"amount": 5}}),
        )
        .await;
        assert!(r.content.contains("POST /api/echo\n"), "{}", r.content);
        assert!(
            r.content.contains("content-type: application/json\n"),
            "{}",
            r.content
        );
        assert!(r.content.ends_with("\n\n{\"amount\":5}"), "{}", r.content);

        let r = call(
            &x,
            json!({"method": "PUT", "path": "echo", "body": "plain"}),
        )
        .await;
        assert!(r.content.contains("PUT /api/echo\n") && r.content.ends_with("\n\nplain"));

        let r = call(&x, json!({"path": "/in"})).await;
        assert!(r.content.contains("(after 1 redirect)"), "{}", r.content);
        assert!(
            r.content.contains("GET /api/echo?from=in\n"),
            "{}",
            r.content
        );

        let r = call(&x, json!({"path": "/out"})).await;
        assert!(r.content.starts_with("HTTP 302 Found\n"), "{}", r.content);
        assert!(
            r.content.contains(&format!(
                "[redirect to {}/private/data not followed: it leaves the API's base URL]",
                server.url
            )),
            "{}",
            r.content
        );

        let r = call(&x, json!({"path": "//evil.com/steal"})).await;
        assert!(r.is_error && r.content.contains("refused"), "{}", r.content);
    }

    #[tokio::test]
    async fn errors_never_show_secrets() {
        let port = {
            let l = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind");
            l.local_addr().expect("addr").port()
        };
        let x = executor(&format!("http://127.0.0.1:{port}/api?token={SECRET}"));
        let r = call(&x, json!({"path": "/x"})).await;
        assert!(r.is_error);
        assert!(
            r.content.starts_with(&format!(
                "GET http://127.0.0.1:{port}/api/x?token=*** failed: "
            )),
            "{}",
            r.content
        );
        assert!(!x.describe(&json!({"path": "/x"})).contains(SECRET));
        assert!(!x.spec().description.contains(SECRET));

        let bad = HttpExecutor {
            headers: BTreeMap::from([("X-Key".into(), format!("{SECRET}\n"))]),
            ..executor("http://127.0.0.1:9/")
        };
        let r = call(&bad, json!({"path": "/"})).await;
        assert!(r.is_error, "{}", r.content);
        assert!(
            r.content
                .ends_with("the value of header `x-key` is not a valid header value"),
            "{}",
            r.content
        );

        let timeout = HttpExecutor {
            timeout: Some(Duration::from_millis(200)),
            ..executor("http://127.0.0.1:9/")
        };
        assert_eq!(timeout.timeout, Some(Duration::from_millis(200)));
        let none = executor("ftp://example.com/");
        let r = call(&none, json!({"path": "/"})).await;
        assert!(
            r.is_error && r.content.contains("not an absolute http(s) URL"),
            "{}",
            r.content
        );
    }

    #[tokio::test]
    async fn the_executor_timeout_applies() {
        let server = test_server::start().await;
        let x = HttpExecutor {
            timeout: Some(Duration::from_millis(300)),
            ..executor(&server.url)
        };
        let started = std::time::Instant::now();
        let r = call(&x, json!({"path": "/slow"})).await;
        assert!(started.elapsed() < Duration::from_secs(3));
        assert!(
            r.is_error && r.content.contains("timed out"),
            "{}",
            r.content
        );
    }
}
