//! The built-in tools: `http_request`, `file_read`, `file_write`,
//! `list_files`, `delete_files` and `shell`.
//!
//! File tools are confined to [`ToolEnv::workspace`]: every path argument is
//! relative to it; absolute paths and `..` components are refused, and so is
//! anything that resolves outside the canonical workspace once symbolic
//! links are followed (the deepest existing ancestor of the path is
//! canonicalized, so a link pointing outside, dangling or not, never lets a
//! call escape). Opens add `O_NOFOLLOW` where the platform has it. The
//! checks run right before each operation; they do not defend against a
//! second process swapping directories for links at the same instant.
//!
//! `shell` runs only when the spec enables it, as `sh -c` in the workspace,
//! in its own process group with a minimal environment (so that provider
//! keys and tokens in strands' own environment are not visible to it), and
//! the whole group is killed when the time limit is reached or the command
//! ends.
//!
//! `http_request` (and the HTTP executors in `http_executor`) send requests
//! through [`ToolEnv::http`], which comes from [`super::egress::client`]:
//! that client follows no redirects by itself, so that the tools can follow
//! at most [`MAX_REDIRECTS`] of them, check the scheme and the egress policy
//! of every hop, never resend a state-changing request to another site, and
//! drop credentials when a redirect leaves the origin. An `http_request`
//! that ran without a human follows redirects only to hosts the spec names.

use std::fs;
use std::io::{Read, Write};
use std::path::{Component, Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use reqwest::header::{self, HeaderMap, HeaderName, HeaderValue};
use reqwest::{Method, StatusCode, Url};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tokio::io::AsyncReadExt;

use super::{Grant, Risk, ToolEnv, ToolMeta, ToolResult};
use crate::provider::ToolSpec;

/// Redirects followed per request, at most.
pub const MAX_REDIRECTS: usize = 5;
/// Entries `list_files` returns, at most.
pub const MAX_LIST_ENTRIES: usize = 1000;
/// The methods `http_request` and the HTTP executors accept.
pub const HTTP_METHODS: [&str; 6] = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"];
/// The message `shell` returns when the spec has not enabled it.
pub const SHELL_DISABLED: &str = "shell is disabled: enable it with tools.shell: true";
/// The longest `timeout_seconds` a `shell` call may ask for.
pub const MAX_SHELL_TIMEOUT_SECS: u64 = 3600;

/// Environment variables a `shell` command inherits; nothing else is passed.
const SHELL_ENV: [&str; 9] = [
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR",
];
/// After the limit, a body is still read (and counted) up to this many more
/// bytes, so that the result can say how much was cut.
const DRAIN_LIMIT: u64 = 8 << 20;
/// Response headers listed in a result, at most.
const MAX_SHOWN_HEADERS: usize = 30;
/// Characters of a value shown in `describe()` and header summaries.
const SHORT_CHARS: usize = 120;
/// How long output pipes may stay open after a shell command has ended.
const PIPE_GRACE: Duration = Duration::from_secs(2);
/// The per-call limit used when the configured one is zero ("no limit").
const NO_LIMIT: Duration = Duration::from_secs(24 * 3600);

/// A built-in tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Builtin {
    HttpRequest,
    FileRead,
    FileWrite,
    ListFiles,
    DeleteFiles,
    Shell,
}

impl Builtin {
    pub const ALL: [Builtin; 6] = [
        Builtin::HttpRequest,
        Builtin::FileRead,
        Builtin::FileWrite,
        Builtin::ListFiles,
        Builtin::DeleteFiles,
        Builtin::Shell,
    ];

    /// The built-in called `name` (`http_request`, `file_read`, …).
    pub fn from_name(name: &str) -> Option<Builtin> {
        Builtin::ALL.into_iter().find(|b| b.name() == name)
    }

    pub fn name(&self) -> &'static str {
        match self {
            Builtin::HttpRequest => "http_request",
            Builtin::FileRead => "file_read",
            Builtin::FileWrite => "file_write",
            Builtin::ListFiles => "list_files",
            Builtin::DeleteFiles => "delete_files",
            Builtin::Shell => "shell",
        }
    }

    /// Name, description and JSON schema offered to the model.
    pub fn spec(&self) -> ToolSpec {
        let (description, parameters) = match self {
            Builtin::HttpRequest => (
                "Send an HTTP request to an http:// or https:// URL. Returns the status, a summary \
                 of the response headers and the response body (long bodies are cut, saying how \
                 much). Up to 5 redirects are followed. GET and HEAD only read; other methods may \
                 change state on the server and may need a human's approval first.",
                json!({
                    "type": "object",
                    "properties": {
                        "method": method_schema("The HTTP method."),
                        "url": {
                            "type": "string",
                            "description": "Absolute http:// or https:// URL, query string included."
                        },
                        "headers": headers_schema("Request headers, name to value."),
                        "body": {
                            "type": "string",
                            "description": "Request body, sent as given (set a Content-Type header to match)."
                        }
                    },
                    "required": ["method", "url"],
                    "additionalProperties": false
                }),
            ),
            Builtin::FileRead => (
                "Read a text file in the workspace and return its content (invalid UTF-8 is \
                 replaced; long files are cut, saying how much).",
                json!({
                    "type": "object",
                    "properties": {
                        "path": path_schema("File path relative to the workspace, e.g. `notes/todo.md`.")
                    },
                    "required": ["path"],
                    "additionalProperties": false
                }),
            ),
            Builtin::FileWrite => (
                "Write text to a file in the workspace, creating it and any missing parent \
                 directories. Replaces the file's content unless `append` is true. May need a \
                 human's approval first.",
                json!({
                    "type": "object",
                    "properties": {
                        "path": path_schema("File path relative to the workspace, e.g. `reports/q3.md`."),
                        "content": {"type": "string", "description": "The text to write."},
                        "append": {
                            "type": "boolean",
                            "description": "Add to the end of the file instead of replacing it (default false)."
                        }
                    },
                    "required": ["path", "content"],
                    "additionalProperties": false
                }),
            ),
            Builtin::ListFiles => (
                "List the files and directories at a path in the workspace. Entries are relative \
                 to the workspace; directories end with `/`, symbolic links with `@` (not \
                 followed). At most 1000 entries are returned.",
                json!({
                    "type": "object",
                    "properties": {
                        "path": path_schema("Directory relative to the workspace (default `.`, the workspace itself)."),
                        "recursive": {
                            "type": "boolean",
                            "description": "Also list the contents of subdirectories (default false)."
                        }
                    },
                    "additionalProperties": false
                }),
            ),
            Builtin::DeleteFiles => (
                "Delete files or directories in the workspace. Deletion cannot be undone and \
                 may need a human's approval first. Returns, per path, whether it was deleted. \
                 A directory that is not empty is deleted only with `recursive: true`.",
                json!({
                    "type": "object",
                    "properties": {
                        "paths": {
                            "type": "array",
                            "items": path_schema("Path relative to the workspace."),
                            "minItems": 1,
                            "description": "Paths to delete, relative to the workspace."
                        },
                        "recursive": {
                            "type": "boolean",
                            "description": "Delete directories together with their contents (default false)."
                        }
                    },
                    "required": ["paths"],
                    "additionalProperties": false
                }),
            ),
            Builtin::Shell => (
                "Run a shell command with `sh -c` in the workspace directory. Returns the exit \
                 code, stdout and stderr (long output is cut). The command is killed when it \
                 runs out of time. Needs a human's approval first.",
                json!({
                    "type": "object",
                    "properties": {
                        "command": {"type": "string", "description": "The command line, e.g. `ls -la`."},
                        "timeout_seconds": {
                            "type": "integer",
                            "minimum": 1,
                            "maximum": MAX_SHELL_TIMEOUT_SECS,
                            "description": "Time limit in seconds (default: the workflow's tool time limit)."
                        }
                    },
                    "required": ["command"],
                    "additionalProperties": false
                }),
            ),
        };
        ToolSpec {
            name: self.name().to_string(),
            description: description.to_string(),
            parameters,
        }
    }

    /// Whether this call changes state: writes, deletes, HTTP methods other
    /// than GET and HEAD (an unreadable method counts as changing), and any
    /// shell command.
    pub fn changes_state(&self, args: &Value) -> bool {
        match self {
            Builtin::HttpRequest => {
                method_changes_state(str_arg(args, "method").unwrap_or_default())
            }
            Builtin::FileRead | Builtin::ListFiles => false,
            Builtin::FileWrite | Builtin::DeleteFiles | Builtin::Shell => true,
        }
    }

    /// Default reversibility and risk.
    pub fn meta(&self, args: &Value) -> ToolMeta {
        let (reversible, risk) = match self {
            Builtin::HttpRequest => {
                if self.changes_state(args) {
                    (false, Risk::Medium)
                } else {
                    (true, Risk::Low)
                }
            }
            Builtin::FileRead | Builtin::ListFiles => (true, Risk::Low),
            Builtin::FileWrite => (false, Risk::Medium),
            Builtin::DeleteFiles => (false, Risk::High),
            Builtin::Shell => (false, Risk::Critical),
        };
        ToolMeta { reversible, risk }
    }

    /// One line saying what the call would do, e.g.
    /// `DELETE 3 paths in the workspace: a.log, b.log, c.log`.
    pub fn describe(&self, args: &Value) -> String {
        match self {
            Builtin::HttpRequest => {
                let method = str_arg(args, "method").unwrap_or("?").to_ascii_uppercase();
                let url = str_arg(args, "url").unwrap_or("?");
                let mut extras = Vec::new();
                if let Some(body) = str_arg(args, "body") {
                    extras.push(body_size(body.len()));
                }
                if let Some(names) = header_names(args.get("headers")) {
                    extras.push(names);
                }
                http_line(&method, url, &extras)
            }
            Builtin::FileRead => format!("read {}", short(str_arg(args, "path").unwrap_or("?"))),
            Builtin::FileWrite => {
                let path = short(str_arg(args, "path").unwrap_or("?"));
                let size = human_size(str_arg(args, "content").unwrap_or_default().len() as u64);
                if bool_arg(args, "append") {
                    format!("append {size} to {path}")
                } else {
                    format!("write {size} to {path} (overwrite)")
                }
            }
            Builtin::ListFiles => {
                let path = str_arg(args, "path").unwrap_or(".");
                let place = if matches!(path.trim(), "" | "." | "./") {
                    "the workspace".to_string()
                } else {
                    short(path)
                };
                let rec = if bool_arg(args, "recursive") {
                    " (recursive)"
                } else {
                    ""
                };
                format!("list files in {place}{rec}")
            }
            Builtin::DeleteFiles => {
                let paths: Vec<String> = args
                    .get("paths")
                    .and_then(Value::as_array)
                    .map(|a| {
                        a.iter()
                            .map(|p| p.as_str().map(short).unwrap_or_else(|| "?".into()))
                            .collect()
                    })
                    .unwrap_or_default();
                let n = paths.len();
                let noun = if n == 1 { "path" } else { "paths" };
                let rec = if bool_arg(args, "recursive") {
                    " (recursive)"
                } else {
                    ""
                };
                format!(
                    "DELETE {n} {noun} in the workspace{rec}: {}",
                    list_cut(&paths, 5)
                )
            }
            Builtin::Shell => {
                let cmd = short_n(str_arg(args, "command").unwrap_or("?"), 200);
                match args.get("timeout_seconds").and_then(Value::as_u64) {
                    Some(t) => format!("run shell command: {cmd} (time limit {t}s)"),
                    None => format!("run shell command: {cmd}"),
                }
            }
        }
    }

    /// Runs the call. Never panics; failures are error results.
    pub async fn run(&self, args: &Value, env: &ToolEnv, grant: Grant) -> ToolResult {
        match self {
            Builtin::HttpRequest => http_request(args, env, grant).await,
            Builtin::FileRead => {
                let Some(path) = str_arg(args, "path").map(str::to_string) else {
                    return ToolResult::error("missing `path`");
                };
                blocking(env, move |root, env| file_read(&root, &path, env.max_bytes)).await
            }
            Builtin::FileWrite => {
                let (Some(path), Some(content)) = (str_arg(args, "path"), str_arg(args, "content"))
                else {
                    return ToolResult::error("missing `path` or `content`");
                };
                let (path, content) = (path.to_string(), content.to_string());
                let append = bool_arg(args, "append");
                blocking(env, move |root, _| {
                    file_write(&root, &path, &content, append)
                })
                .await
            }
            Builtin::ListFiles => {
                let path = str_arg(args, "path").unwrap_or(".").to_string();
                let recursive = bool_arg(args, "recursive");
                blocking(env, move |root, _| list_files(&root, &path, recursive)).await
            }
            Builtin::DeleteFiles => {
                let Some(paths) = args.get("paths").and_then(Value::as_array) else {
                    return ToolResult::error("missing `paths`");
                };
                let Some(paths) = paths
                    .iter()
                    .map(|p| p.as_str().map(str::to_string))
                    .collect::<Option<Vec<String>>>()
                else {
                    return ToolResult::error("`paths` must be strings");
                };
                if paths.is_empty() {
                    return ToolResult::error("`paths` is empty: name at least one path");
                }
                let recursive = bool_arg(args, "recursive");
                blocking(env, move |root, _| delete_files(&root, &paths, recursive)).await
            }
            Builtin::Shell => shell(args, env).await,
        }
    }
}

// ---------------------------------------------------------------------------
// Argument helpers shared with `http_executor`.

pub(crate) fn str_arg<'a>(args: &'a Value, key: &str) -> Option<&'a str> {
    args.get(key).and_then(Value::as_str)
}

fn bool_arg(args: &Value, key: &str) -> bool {
    args.get(key).and_then(Value::as_bool).unwrap_or(false)
}

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

fn path_schema(description: &str) -> Value {
    json!({"type": "string", "description": description})
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
// Text helpers.

/// `s` on one line, at most [`SHORT_CHARS`] characters, `…` marking a cut.
pub(crate) fn short(s: &str) -> String {
    short_n(s, SHORT_CHARS)
}

/// `s` on one line (control characters become spaces, line breaks `↵`), at
/// most `max` characters with `…` marking a cut.
pub(crate) fn short_n(s: &str, max: usize) -> String {
    let one_line: String = s
        .chars()
        .map(|c| match c {
            '\n' => '↵',
            c if c.is_control() => ' ',
            c => c,
        })
        .collect();
    if one_line.chars().count() <= max {
        return one_line;
    }
    let mut out: String = one_line.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// The first `max` items joined with `, `, then `and N more`.
fn list_cut(items: &[String], max: usize) -> String {
    let mut out = items
        .iter()
        .take(max)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if items.len() > max {
        out.push_str(&format!(" and {} more", items.len() - max));
    }
    out
}

/// `1 byte`, `512 bytes`, `2.1 KB`, `3.0 MB`, `1.2 GB`.
pub(crate) fn human_size(n: u64) -> String {
    const KB: f64 = 1024.0;
    let f = n as f64;
    if n == 1 {
        "1 byte".into()
    } else if n < 1024 {
        format!("{n} bytes")
    } else if f < KB * KB {
        format!("{:.1} KB", f / KB)
    } else if f < KB * KB * KB {
        format!("{:.1} MB", f / (KB * KB))
    } else {
        format!("{:.1} GB", f / (KB * KB * KB))
    }
}

/// `5s`, `1.5s`, `250ms`.
pub(crate) fn human_duration(d: Duration) -> String {
    if d.as_millis() < 1000 {
        format!("{}ms", d.as_millis())
    } else if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{:.1}s", d.as_secs_f64())
    }
}

/// A zero limit means "no limit".
pub(crate) fn effective_timeout(d: Duration) -> Duration {
    if d.is_zero() {
        NO_LIMIT
    } else {
        d
    }
}

/// `bytes` as text, invalid UTF-8 replaced. When the bytes were cut from a
/// longer text, a character split by the cut is dropped rather than shown
/// as a replacement character.
pub(crate) fn lossy_text(bytes: &[u8], was_cut: bool) -> String {
    let mut end = bytes.len();
    if was_cut {
        for back in 1..=3.min(bytes.len()) {
            let b = bytes[bytes.len() - back];
            if b < 0x80 {
                break;
            }
            if b & 0xC0 == 0xC0 {
                let width = if b >= 0xF0 {
                    4
                } else if b >= 0xE0 {
                    3
                } else {
                    2
                };
                if width > back {
                    end = bytes.len() - back;
                }
                break;
            }
        }
    }
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

/// `[what cut: showing the first N of M bytes; K bytes cut]`.
fn cut_note(what: &str, kept: usize, total: u64, exact: bool) -> String {
    let cut = total.saturating_sub(kept as u64);
    let at_least = if exact { "" } else { "at least " };
    format!(
        "[{what} cut: showing the first {kept} of {at_least}{total} bytes; {at_least}{cut} bytes cut]"
    )
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

/// A transport error as one line: its message and causes, without the URL
/// (it may carry a query string). Header values are never part of it.
pub(crate) fn transport_error(err: reqwest::Error) -> String {
    let err = err.without_url();
    let mut text = err.to_string();
    let mut source = std::error::Error::source(&err);
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// True for http and https URLs with a host.
pub(crate) fn is_web_url(url: &Url) -> bool {
    matches!(url.scheme(), "http" | "https") && url.host().is_some()
}

/// Sends `call`, following redirects per the rules in the module docs, and
/// formats the response for the model. Transport failures and timeouts are
/// error results; any HTTP response, 4xx and 5xx included, is a result.
pub(crate) async fn send(env: &ToolEnv, call: HttpCall<'_>) -> ToolResult {
    let limit = effective_timeout(call.timeout);
    let what = format!("{} {}", call.method, (call.show)(&call.url));
    match tokio::time::timeout(limit, send_following(env, &call, limit)).await {
        Ok(result) => result,
        Err(_) => ToolResult::error(format!("{what} timed out after {}", human_duration(limit))),
    }
}

enum Hop {
    Follow { next: Url, method: Method },
    Stop(String),
    Done,
}

async fn send_following(env: &ToolEnv, call: &HttpCall<'_>, limit: Duration) -> ToolResult {
    let deadline = tokio::time::Instant::now() + limit;
    let first_origin = call.url.origin();
    let mut url = call.url.clone();
    let mut method = call.method.clone();
    let mut body = call.body.clone();
    let mut headers = call.headers.clone();
    let mut hops = 0usize;
    loop {
        if !is_web_url(&url) {
            return ToolResult::error(format!(
                "only http and https URLs are allowed, not {}",
                (call.show)(&url)
            ));
        }
        // Names are checked by the client's resolver at connect time; an IP
        // literal is connected to as it is, so it is checked here.
        if let Err(b) = env.egress.check_literal(&url) {
            return ToolResult::blocked(b);
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
                if let Some(b) = super::egress::blocked_in(&e) {
                    return ToolResult::blocked(b);
                }
                let what = if e.is_timeout() {
                    "timed out"
                } else {
                    "failed"
                };
                return ToolResult::error(format!(
                    "{method} {} {what}: {}",
                    (call.show)(&url),
                    transport_error(e)
                ));
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
        return describe_response(response, &method, &url, hops, note, call).await;
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

/// Status, headers summary and (cut) body, as the model reads them.
async fn describe_response(
    mut response: reqwest::Response,
    method: &Method,
    url: &Url,
    hops: usize,
    note: Option<String>,
    call: &HttpCall<'_>,
) -> ToolResult {
    let status = response.status();
    let mut out = match status.canonical_reason() {
        Some(reason) => format!("HTTP {} {reason}", status.as_u16()),
        None => format!("HTTP {}", status.as_u16()),
    };
    out.push_str(&format!("\n{method} {}", (call.show)(url)));
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
    let declared = response.content_length();
    if *method == Method::HEAD {
        out.push_str("body: (none: HEAD request)");
        return ToolResult::ok(out);
    }

    let max = call.max_bytes;
    let mut kept: Vec<u8> = Vec::new();
    let mut total: u64 = 0;
    let mut complete = true;
    let mut read_error = None;
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
                read_error = Some(transport_error(e));
                complete = false;
                break;
            }
        }
    }
    let was_cut = total > kept.len() as u64;
    if total == 0 && read_error.is_none() {
        out.push_str("body: (empty)");
        return ToolResult::ok(out);
    }
    out.push_str(&format!("body ({}):\n", human_size(total)));
    out.push_str(&lossy_text(&kept, was_cut));
    if was_cut {
        let (total, exact) = match (complete, declared) {
            (true, _) => (total, true),
            (false, Some(d)) if d >= total && read_error.is_none() => (d, true),
            (false, _) => (total, false),
        };
        out.push('\n');
        out.push_str(&cut_note("body", kept.len(), total, exact));
    }
    if let Some(e) = read_error {
        out.push_str(&format!("\n[reading the body failed: {e}]"));
    }
    ToolResult::ok(out)
}

async fn http_request(args: &Value, env: &ToolEnv, grant: Grant) -> ToolResult {
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
    let egress = &env.egress;
    let follow = |next: &Url| {
        match (grant, next.host()) {
        (Grant::Human, _) => Ok(()),
        (Grant::Policy, Some(h)) if egress.names(&h) => Ok(()),
        (Grant::Policy, _) => Err(
            "the spec does not name that host (tools.network.allow), and nobody approved going there"
                .to_string(),
        ),
    }
    };
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

// ---------------------------------------------------------------------------
// The workspace.

/// Runs a file operation on a blocking thread with the canonical workspace.
async fn blocking<F>(env: &ToolEnv, op: F) -> ToolResult
where
    F: FnOnce(PathBuf, ToolEnv) -> ToolResult + Send + 'static,
{
    let env = env.clone();
    let task = tokio::task::spawn_blocking(move || match workspace_root(&env.workspace) {
        Ok(root) => op(root, env),
        Err(e) => ToolResult::error(e),
    });
    match task.await {
        Ok(result) => result,
        Err(e) => ToolResult::error(format!("the file operation did not finish: {e}")),
    }
}

/// The workspace, created if missing, canonicalized.
pub(crate) fn workspace_root(workspace: &Path) -> Result<PathBuf, String> {
    fs::create_dir_all(workspace)
        .map_err(|e| format!("could not create the workspace directory: {e}"))?;
    fs::canonicalize(workspace).map_err(|e| format!("could not resolve the workspace: {e}"))
}

/// A path argument checked and resolved inside the workspace.
#[derive(Debug, Clone)]
struct Resolved {
    /// The path with every existing symbolic link followed; inside `root`.
    real: PathBuf,
    /// The path's normal components, as given (none for the workspace).
    parts: Vec<PathBuf>,
    /// `a/b.txt` for messages; `.` for the workspace itself.
    shown: String,
}

/// Checks `raw` (relative to the canonical workspace `root`) and resolves
/// it: absolute paths, `..` components and anything that resolves outside
/// `root` once existing symbolic links are followed are refused.
fn resolve(root: &Path, raw: &str) -> Result<Resolved, String> {
    let given = short(raw);
    if raw.contains('\0') {
        return Err(format!("`{given}`: paths cannot contain NUL bytes"));
    }
    let path = Path::new(raw);
    let mut parts = Vec::new();
    for component in path.components() {
        match component {
            Component::Normal(p) => parts.push(PathBuf::from(p)),
            Component::CurDir => {}
            Component::ParentDir => {
                return Err(format!(
                    "`{given}` is refused: `..` may not be used; paths are relative to the workspace"
                ))
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(format!(
                    "`{given}` is refused: absolute paths may not be used; paths are relative to the workspace"
                ))
            }
        }
    }
    let shown = if parts.is_empty() {
        ".".to_string()
    } else {
        parts
            .iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("/")
    };

    // The deepest ancestor that exists (a dangling link counts as existing).
    let mut existing = parts.len();
    loop {
        let candidate: PathBuf = parts[..existing]
            .iter()
            .fold(root.to_path_buf(), |p, c| p.join(c));
        if existing == 0 || fs::symlink_metadata(&candidate).is_ok() {
            let canonical = fs::canonicalize(&candidate).map_err(|e| {
                format!("`{shown}` is refused: it could not be resolved inside the workspace ({e})")
            })?;
            let real = parts[existing..].iter().fold(canonical, |p, c| p.join(c));
            if !real.starts_with(root) {
                return Err(format!(
                    "`{shown}` is refused: it resolves outside the workspace"
                ));
            }
            return Ok(Resolved { real, parts, shown });
        }
        existing -= 1;
    }
}

/// Opens for reading without following a final symbolic link.
fn open_read(path: &Path) -> std::io::Result<fs::File> {
    let mut options = fs::OpenOptions::new();
    options.read(true);
    no_follow(&mut options);
    options.open(path)
}

#[cfg(unix)]
fn no_follow(options: &mut fs::OpenOptions) {
    use std::os::unix::fs::OpenOptionsExt;
    options.custom_flags(libc::O_NOFOLLOW);
}

#[cfg(not(unix))]
fn no_follow(_options: &mut fs::OpenOptions) {}

fn file_read(root: &Path, raw: &str, max_bytes: usize) -> ToolResult {
    let target = match resolve(root, raw) {
        Ok(t) => t,
        Err(e) => return ToolResult::error(e),
    };
    let shown = &target.shown;
    let meta = match fs::metadata(&target.real) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return ToolResult::error(format!("`{shown}` does not exist"))
        }
        Err(e) => return ToolResult::error(format!("could not read `{shown}`: {e}")),
    };
    if meta.is_dir() {
        return ToolResult::error(format!(
            "`{shown}` is a directory: use list_files to see what it holds"
        ));
    }
    if !meta.is_file() {
        return ToolResult::error(format!("`{shown}` is not a regular file"));
    }
    let mut bytes = Vec::new();
    let read = open_read(&target.real).and_then(|f| {
        let mut limited = f.take(max_bytes as u64 + 1);
        limited.read_to_end(&mut bytes)
    });
    if let Err(e) = read {
        return ToolResult::error(format!("could not read `{shown}`: {e}"));
    }
    let total = meta.len().max(bytes.len() as u64);
    let was_cut = bytes.len() > max_bytes;
    bytes.truncate(max_bytes);
    let mut text = lossy_text(&bytes, was_cut);
    if was_cut {
        text.push_str("\n\n");
        text.push_str(&cut_note("file", bytes.len(), total, true));
    }
    ToolResult::ok(text)
}

fn file_write(root: &Path, raw: &str, content: &str, append: bool) -> ToolResult {
    let target = match resolve(root, raw) {
        Ok(t) => t,
        Err(e) => return ToolResult::error(e),
    };
    let shown = &target.shown;
    if target.parts.is_empty() || target.real == root {
        return ToolResult::error("the workspace itself cannot be written to: name a file in it");
    }
    if target.real.is_dir() {
        return ToolResult::error(format!("`{shown}` is a directory"));
    }
    let mut created_dirs = false;
    if let Some(parent) = target.real.parent() {
        if !parent.exists() {
            if let Err(e) = fs::create_dir_all(parent) {
                return ToolResult::error(format!(
                    "could not create the directories for `{shown}`: {e}"
                ));
            }
            created_dirs = true;
        }
    }
    let mut options = fs::OpenOptions::new();
    options.create(true);
    if append {
        options.append(true);
    } else {
        options.write(true).truncate(true);
    }
    no_follow(&mut options);
    let written = options
        .open(&target.real)
        .and_then(|mut f| f.write_all(content.as_bytes()).and_then(|()| f.flush()));
    if let Err(e) = written {
        return ToolResult::error(format!("could not write `{shown}`: {e}"));
    }
    let verb = if append { "appended" } else { "wrote" };
    let size = human_size(content.len() as u64);
    let dirs = if created_dirs {
        " (created missing directories)"
    } else {
        ""
    };
    let exact = if content.len() >= 1024 {
        format!(" ({} bytes)", content.len())
    } else {
        String::new()
    };
    ToolResult::ok(format!("{verb} {size}{exact} to {shown}{dirs}"))
}

/// `rel/path`, with `/` after directories and `@` after symbolic links.
fn entry_name(root: &Path, path: &Path, kind: fs::FileType) -> String {
    let rel = path.strip_prefix(root).unwrap_or(path);
    let mut name = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/");
    if kind.is_symlink() {
        name.push('@');
    } else if kind.is_dir() {
        name.push('/');
    }
    name
}

/// The entries of `dir`, sorted by name.
fn sorted_entries(dir: &Path) -> std::io::Result<Vec<(PathBuf, fs::FileType)>> {
    let mut entries = Vec::new();
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        entries.push((entry.path(), entry.file_type()?));
    }
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(entries)
}

fn list_files(root: &Path, raw: &str, recursive: bool) -> ToolResult {
    let target = match resolve(root, raw) {
        Ok(t) => t,
        Err(e) => return ToolResult::error(e),
    };
    let shown = &target.shown;
    let meta = match fs::metadata(&target.real) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return ToolResult::error(format!("`{shown}` does not exist"))
        }
        Err(e) => return ToolResult::error(format!("could not list `{shown}`: {e}")),
    };
    if !meta.is_dir() {
        return ToolResult::ok(format!("`{shown}` is a file ({})", human_size(meta.len())));
    }
    let place = if target.real == root {
        "the workspace".to_string()
    } else {
        format!("`{shown}`")
    };
    let mut lines: Vec<String> = Vec::new();
    let mut problems: Vec<String> = Vec::new();
    let mut stopped = false;
    let mut symlinks = false;
    // Depth-first, in name order: a directory is listed before its contents.
    let mut stack: Vec<(PathBuf, fs::FileType)> = match sorted_entries(&target.real) {
        Ok(mut e) => {
            e.reverse();
            e
        }
        Err(e) => return ToolResult::error(format!("could not list `{shown}`: {e}")),
    };
    while let Some((path, kind)) = stack.pop() {
        if lines.len() >= MAX_LIST_ENTRIES {
            stopped = true;
            break;
        }
        symlinks |= kind.is_symlink();
        lines.push(entry_name(root, &path, kind));
        if recursive && kind.is_dir() {
            match sorted_entries(&path) {
                Ok(children) => stack.extend(children.into_iter().rev()),
                Err(e) => problems.push(format!(
                    "[could not list `{}`: {e}]",
                    entry_name(root, &path, kind)
                )),
            }
        }
    }
    if lines.is_empty() && problems.is_empty() {
        return ToolResult::ok(format!("{place} is empty"));
    }
    let rec = if recursive { ", recursively" } else { "" };
    let mut out = format!(
        "{} entries in {place}{rec} (paths relative to the workspace):\n",
        lines.len()
    );
    out.push_str(&lines.join("\n"));
    for p in &problems {
        out.push('\n');
        out.push_str(p);
    }
    if symlinks {
        out.push_str("\n[`@` marks a symbolic link; links are not followed]");
    }
    if stopped {
        out.push_str(&format!(
            "\n[listing stopped at {MAX_LIST_ENTRIES} entries: list a subdirectory to see more]"
        ));
    }
    ToolResult::ok(out)
}

/// Deletes one path; `Ok` says what was deleted.
fn delete_one(root: &Path, raw: &str, recursive: bool) -> Result<String, String> {
    let target = resolve(root, raw)?;
    let shown = target.shown.clone();
    if target.parts.is_empty() || target.real == root {
        return Err(format!(
            "`{shown}` is refused: the workspace itself cannot be deleted"
        ));
    }
    // A symbolic link is removed itself, never what it points to. Its
    // directory is resolved first so that the link that is removed is the
    // one inside the workspace.
    let (parent_parts, name) = target.parts.split_at(target.parts.len() - 1);
    let parent_raw = parent_parts
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/");
    let parent = resolve(root, &parent_raw)?;
    let lexical = name.iter().fold(parent.real, |p, c| p.join(c));
    let meta = match fs::symlink_metadata(&lexical) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(format!("`{shown}` does not exist"))
        }
        Err(e) => return Err(format!("`{shown}`: {e}")),
    };
    if meta.file_type().is_symlink() {
        fs::remove_file(&lexical).map_err(|e| format!("`{shown}`: {e}"))?;
        return Ok(format!("{shown} (symbolic link)"));
    }
    if meta.is_dir() {
        if recursive {
            fs::remove_dir_all(&lexical).map_err(|e| format!("`{shown}`: {e}"))?;
            return Ok(format!("{shown}/ (directory and its contents)"));
        }
        return match fs::remove_dir(&lexical) {
            Ok(()) => Ok(format!("{shown}/ (empty directory)")),
            Err(_) if fs::read_dir(&lexical).map(|mut d| d.next().is_some()).unwrap_or(false) => {
                Err(format!(
                    "`{shown}` is a directory that is not empty: pass recursive: true to delete it with its contents"
                ))
            }
            Err(e) => Err(format!("`{shown}`: {e}")),
        };
    }
    fs::remove_file(&lexical).map_err(|e| format!("`{shown}`: {e}"))?;
    Ok(shown)
}

fn delete_files(root: &Path, paths: &[String], recursive: bool) -> ToolResult {
    let mut deleted = Vec::new();
    let mut failed = Vec::new();
    for raw in paths {
        match delete_one(root, raw, recursive) {
            Ok(what) => deleted.push(format!("deleted: {what}")),
            Err(why) => failed.push(format!("not deleted: {why}")),
        }
    }
    let mut out = format!("{} of {} deleted", deleted.len(), paths.len());
    for line in deleted.iter().chain(failed.iter()) {
        out.push('\n');
        out.push_str(line);
    }
    if failed.is_empty() {
        ToolResult::ok(out)
    } else {
        ToolResult::error(out)
    }
}

// ---------------------------------------------------------------------------
// The shell.

/// Reads a pipe to its end, keeping the first `max` bytes and counting all.
async fn read_capped<R>(reader: Option<R>, max: usize) -> (Vec<u8>, u64)
where
    R: tokio::io::AsyncRead + Unpin,
{
    let mut kept = Vec::new();
    let mut total = 0u64;
    let Some(mut reader) = reader else {
        return (kept, total);
    };
    let mut chunk = vec![0u8; 8192];
    loop {
        match reader.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                total += n as u64;
                let room = max.saturating_sub(kept.len());
                kept.extend_from_slice(&chunk[..room.min(n)]);
            }
        }
    }
    (kept, total)
}

/// Kills every process in the group led by `pid` (the shell's).
#[cfg(unix)]
fn kill_group(pid: Option<u32>) {
    if let Some(pgid) = pid.and_then(|p| libc::pid_t::try_from(p).ok()) {
        if pgid > 1 {
            // SAFETY: kill(2) takes plain integers and touches no memory;
            // a negative pid names the process group the shell leads.
            unsafe {
                libc::kill(-pgid, libc::SIGKILL);
            }
        }
    }
}

#[cfg(not(unix))]
fn kill_group(_pid: Option<u32>) {}

/// The output of one stream for the result.
fn stream_section(name: &str, captured: Option<(Vec<u8>, u64)>) -> String {
    match captured {
        None => format!("--- {name} ---\n(unavailable: the stream stayed open)"),
        Some((_, 0)) => format!("--- {name} ---\n(empty)"),
        Some((kept, total)) => {
            let was_cut = total > kept.len() as u64;
            let mut s = format!("--- {name} ---\n{}", lossy_text(&kept, was_cut));
            if was_cut {
                s.push('\n');
                s.push_str(&cut_note(name, kept.len(), total, true));
            }
            s
        }
    }
}

async fn shell(args: &Value, env: &ToolEnv) -> ToolResult {
    if !env.shell_enabled {
        return ToolResult::error(SHELL_DISABLED);
    }
    let Some(command) = str_arg(args, "command") else {
        return ToolResult::error("missing `command`");
    };
    let limit = match args.get("timeout_seconds").and_then(Value::as_u64) {
        Some(secs) => Duration::from_secs(secs.clamp(1, MAX_SHELL_TIMEOUT_SECS)),
        None => effective_timeout(env.timeout),
    };
    let workspace = env.workspace.clone();
    let root = match tokio::task::spawn_blocking(move || workspace_root(&workspace)).await {
        Ok(Ok(root)) => root,
        Ok(Err(e)) => return ToolResult::error(e),
        Err(e) => return ToolResult::error(format!("could not prepare the workspace: {e}")),
    };

    let mut cmd = tokio::process::Command::new("sh");
    cmd.arg("-c")
        .arg(command)
        .current_dir(&root)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .env_clear();
    for name in SHELL_ENV {
        if let Some(value) = std::env::var_os(name) {
            cmd.env(name, value);
        }
    }
    #[cfg(unix)]
    cmd.process_group(0);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return ToolResult::error(format!("could not start `sh`: {e}")),
    };
    let pid = child.id();
    let max = env.max_bytes;
    let out_task = tokio::spawn(read_capped(child.stdout.take(), max));
    let err_task = tokio::spawn(read_capped(child.stderr.take(), max));

    let status = match tokio::time::timeout(limit, child.wait()).await {
        Ok(Ok(status)) => Some(status),
        Ok(Err(e)) => {
            kill_group(pid);
            let _ = child.kill().await;
            out_task.abort();
            err_task.abort();
            return ToolResult::error(format!("waiting for the command failed: {e}"));
        }
        Err(_) => None,
    };
    // On a timeout this stops the command; after a normal end it stops
    // background processes it left holding the output pipes.
    kill_group(pid);
    if status.is_none() {
        let _ = child.kill().await;
    }
    let stdout = tokio::time::timeout(PIPE_GRACE, out_task)
        .await
        .ok()
        .and_then(Result::ok);
    let stderr = tokio::time::timeout(PIPE_GRACE, err_task)
        .await
        .ok()
        .and_then(Result::ok);

    let (head, failed) = match status {
        None => (
            format!(
                "timed out after {}: the command was killed",
                human_duration(limit)
            ),
            true,
        ),
        Some(s) => match s.code() {
            Some(code) => (format!("exit code: {code}"), code != 0),
            None => {
                #[cfg(unix)]
                let how = {
                    use std::os::unix::process::ExitStatusExt;
                    s.signal()
                        .map(|sig| format!("terminated by signal {sig}"))
                        .unwrap_or_else(|| "terminated without an exit code".into())
                };
                #[cfg(not(unix))]
                let how = "terminated without an exit code".to_string();
                (how, true)
            }
        },
    };
    let out = format!(
        "{head}\n{}\n{}",
        stream_section("stdout", stdout),
        stream_section("stderr", stderr)
    );
    if failed {
        ToolResult::error(out)
    } else {
        ToolResult::ok(out)
    }
}

/// The egress policy of the HTTP tools' unit tests: their servers listen
/// on 127.0.0.1, which the default policy refuses.
#[cfg(test)]
pub(crate) fn loopback_allowed() -> std::sync::Arc<super::egress::Egress> {
    let rule = super::egress::Rule::parse("127.0.0.1").expect("a rule");
    std::sync::Arc::new(super::egress::Egress::new(vec![rule], &[], Vec::new()))
}

/// A local HTTP server for the HTTP tools' tests (127.0.0.1 only).
#[cfg(test)]
pub(crate) mod test_server {
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::{schema, Tool};
    use std::time::Instant;

    struct Fixture {
        _tmp: tempfile::TempDir,
        base: PathBuf,
        env: ToolEnv,
    }

    impl Fixture {
        fn ws(&self) -> PathBuf {
            self.env.workspace.clone()
        }
    }

    /// A workspace (`<tmp>/ws`, not created yet) and an `<tmp>/outside`
    /// directory holding `secret.txt`.
    fn fixture() -> Fixture {
        let tmp = tempfile::tempdir().expect("tempdir");
        let base = fs::canonicalize(tmp.path()).expect("canonical tmp");
        fs::create_dir_all(base.join("outside")).expect("outside");
        fs::write(base.join("outside/secret.txt"), "top secret").expect("secret");
        let env = ToolEnv {
            workspace: base.join("ws"),
            http: crate::tools::egress::client(&loopback_allowed()).expect("client"),
            egress: loopback_allowed(),
            max_bytes: 1000,
            timeout: Duration::from_secs(5),
            shell_enabled: false,
        };
        Fixture {
            _tmp: tmp,
            base,
            env,
        }
    }

    async fn call(b: Builtin, args: Value, env: &ToolEnv) -> ToolResult {
        // Through `Tool::run`, so that the schema is checked as in real use.
        Tool::Builtin(b).run(&args, env, Grant::Human).await
    }

    fn outside_untouched(f: &Fixture) {
        let mut names: Vec<String> = fs::read_dir(f.base.join("outside"))
            .expect("outside")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, vec!["secret.txt".to_string()]);
        assert_eq!(
            fs::read_to_string(f.base.join("outside/secret.txt")).expect("secret"),
            "top secret"
        );
    }

    // -- names, specs, metadata ------------------------------------------

    #[test]
    fn names_round_trip() {
        for b in Builtin::ALL {
            assert_eq!(Builtin::from_name(b.name()), Some(b));
            assert_eq!(
                serde_json::to_value(b).expect("json"),
                Value::String(b.name().into())
            );
        }
        assert_eq!(Builtin::from_name("rm"), None);
        assert_eq!(Builtin::from_name("Shell"), None);
    }

    #[test]
    fn specs_are_strict_object_schemas() {
        for b in Builtin::ALL {
            let spec = b.spec();
            assert_eq!(spec.name, b.name());
            assert!(spec.description.len() > 40, "{}", spec.name);
            let p = &spec.parameters;
            assert_eq!(p["type"], "object", "{}", spec.name);
            assert_eq!(p["additionalProperties"], false, "{}", spec.name);
            let props = p["properties"].as_object().expect("properties");
            for r in p
                .get("required")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
            {
                assert!(
                    props.contains_key(r.as_str().expect("name")),
                    "{}",
                    spec.name
                );
            }
            // Every schema compiles.
            let _ = schema::validate(p, &json!({}));
        }
    }

    #[test]
    fn schemas_reject_bad_arguments() {
        let v = |b: Builtin, args: Value| schema::validate(&b.spec().parameters, &args);
        assert!(v(
            Builtin::HttpRequest,
            json!({"method": "GET", "url": "http://x"})
        )
        .is_ok());
        let e = v(Builtin::HttpRequest, json!({"url": "http://x"})).expect_err("missing");
        assert!(e.contains("method"), "{e}");
        let e = v(
            Builtin::HttpRequest,
            json!({"method": "TRACE", "url": "http://x"}),
        )
        .expect_err("enum");
        assert!(e.contains("/method"), "{e}");
        let e = v(
            Builtin::HttpRequest,
            json!({"method": "GET", "url": "http://x", "headers": {"a": 1}}),
        )
        .expect_err("header type");
        assert!(e.contains("/headers/a"), "{e}");
        let e = v(Builtin::FileWrite, json!({"path": "a", "content": 5})).expect_err("type");
        assert!(e.contains("/content"), "{e}");
        let e = v(Builtin::FileRead, json!({"path": "a", "mode": "r"})).expect_err("unknown");
        assert!(e.contains("mode"), "{e}");
        let e = v(Builtin::DeleteFiles, json!({"paths": []})).expect_err("minItems");
        assert!(e.contains("/paths"), "{e}");
        let e = v(
            Builtin::Shell,
            json!({"command": "ls", "timeout_seconds": 1.5}),
        )
        .expect_err("integer");
        assert!(e.contains("/timeout_seconds"), "{e}");
        assert!(v(Builtin::ListFiles, json!({})).is_ok());
    }

    #[test]
    fn state_changes_and_meta() {
        let get = json!({"method": "GET", "url": "http://x"});
        let head = json!({"method": "head", "url": "http://x"});
        let post = json!({"method": "POST", "url": "http://x"});
        assert!(!Builtin::HttpRequest.changes_state(&get));
        assert!(!Builtin::HttpRequest.changes_state(&head));
        assert!(Builtin::HttpRequest.changes_state(&post));
        assert!(
            Builtin::HttpRequest.changes_state(&json!({})),
            "unknown counts as changing"
        );
        let meta = |b: Builtin, a: &Value| {
            let m = b.meta(a);
            (m.reversible, m.risk)
        };
        assert_eq!(meta(Builtin::HttpRequest, &get), (true, Risk::Low));
        assert_eq!(meta(Builtin::HttpRequest, &post), (false, Risk::Medium));
        let none = json!({});
        assert_eq!(meta(Builtin::FileRead, &none), (true, Risk::Low));
        assert_eq!(meta(Builtin::ListFiles, &none), (true, Risk::Low));
        assert_eq!(meta(Builtin::FileWrite, &none), (false, Risk::Medium));
        assert_eq!(meta(Builtin::DeleteFiles, &none), (false, Risk::High));
        assert_eq!(meta(Builtin::Shell, &none), (false, Risk::Critical));
        assert!(!Builtin::FileRead.changes_state(&none));
        assert!(!Builtin::ListFiles.changes_state(&none));
        assert!(Builtin::FileWrite.changes_state(&none));
        assert!(Builtin::DeleteFiles.changes_state(&none));
        assert!(Builtin::Shell.changes_state(&json!({"command": "true"})));
    }

    #[test]
    fn describe_each_tool() {
        assert_eq!(
            Builtin::DeleteFiles.describe(&json!({"paths": ["a.log", "b.log", "c.log"]})),
            "DELETE 3 paths in the workspace: a.log, b.log, c.log"
        );
        assert_eq!(
            Builtin::DeleteFiles.describe(&json!({"paths": ["build"], "recursive": true})),
            "DELETE 1 path in the workspace (recursive): build"
        );
        let many: Vec<String> = (0..8).map(|i| format!("f{i}")).collect();
        assert_eq!(
            Builtin::DeleteFiles.describe(&json!({ "paths": many })),
            "DELETE 8 paths in the workspace: f0, f1, f2, f3, f4 and 3 more"
        );
        assert_eq!(
            Builtin::HttpRequest.describe(&json!({
                "method": "POST", "url": "https://api.example.com/pay", "body": "x".repeat(124)
            })),
            "POST https://api.example.com/pay (124-byte body)"
        );
        assert_eq!(
            Builtin::HttpRequest.describe(&json!({
                "method": "GET", "url": "https://e.com/", "headers": {"Accept": "text/html"}
            })),
            "GET https://e.com/ (headers: Accept)"
        );
        assert_eq!(
            Builtin::FileWrite
                .describe(&json!({"path": "reports/q3.md", "content": "x".repeat(2150)})),
            "write 2.1 KB to reports/q3.md (overwrite)"
        );
        assert_eq!(
            Builtin::FileWrite
                .describe(&json!({"path": "log.txt", "content": "hi\n", "append": true})),
            "append 3 bytes to log.txt"
        );
        assert_eq!(
            Builtin::FileRead.describe(&json!({"path": "notes/todo.md"})),
            "read notes/todo.md"
        );
        assert_eq!(
            Builtin::ListFiles.describe(&json!({})),
            "list files in the workspace"
        );
        assert_eq!(
            Builtin::ListFiles.describe(&json!({"path": "src", "recursive": true})),
            "list files in src (recursive)"
        );
        assert_eq!(
            Builtin::Shell.describe(&json!({"command": "rm -rf build"})),
            "run shell command: rm -rf build"
        );
        assert_eq!(
            Builtin::Shell.describe(&json!({"command": "make\nmake test", "timeout_seconds": 60})),
            "run shell command: make↵make test (time limit 60s)"
        );
        let long = Builtin::Shell.describe(&json!({ "command": "x".repeat(5000) }));
        assert!(long.ends_with('…') && long.chars().count() < 260, "{long}");
        assert_eq!(Builtin::FileRead.describe(&json!({})), "read ?");
    }

    #[test]
    fn helpers() {
        assert_eq!(human_size(0), "0 bytes");
        assert_eq!(human_size(1), "1 byte");
        assert_eq!(human_size(1023), "1023 bytes");
        assert_eq!(human_size(2150), "2.1 KB");
        assert_eq!(human_size(3 << 20), "3.0 MB");
        // A multi-byte character split by a cut is dropped, not mangled.
        let bytes = "aé".as_bytes();
        assert_eq!(lossy_text(&bytes[..2], true), "a");
        assert_eq!(lossy_text(&bytes[..2], false), "a\u{fffd}");
        assert_eq!(lossy_text("€".as_bytes(), true), "€");
        assert_eq!(lossy_text(&[0xff, b'a'], true), "\u{fffd}a");
        assert_eq!(human_duration(Duration::from_millis(300)), "300ms");
        assert_eq!(human_duration(Duration::from_secs(5)), "5s");
    }

    // -- files -----------------------------------------------------------

    #[tokio::test]
    async fn write_read_append_and_list() {
        let f = fixture();
        assert!(!f.ws().exists());
        let r = call(
            Builtin::FileWrite,
            json!({"path": "reports/q3/summary.md", "content": "hello"}),
            &f.env,
        )
        .await;
        assert!(!r.is_error, "{}", r.content);
        assert_eq!(
            r.content,
            "wrote 5 bytes to reports/q3/summary.md (created missing directories)"
        );
        assert!(f.ws().is_dir(), "the workspace is created");
        let r = call(
            Builtin::FileWrite,
            json!({"path": "./reports/q3/summary.md", "content": " world", "append": true}),
            &f.env,
        )
        .await;
        assert_eq!(r.content, "appended 6 bytes to reports/q3/summary.md");
        let r = call(
            Builtin::FileRead,
            json!({"path": "reports/q3/summary.md"}),
            &f.env,
        )
        .await;
        assert_eq!(r, ToolResult::ok("hello world"));
        let r = call(
            Builtin::FileWrite,
            json!({"path": "reports/q3/summary.md", "content": "new"}),
            &f.env,
        )
        .await;
        assert!(!r.is_error);
        assert_eq!(
            fs::read_to_string(f.ws().join("reports/q3/summary.md")).expect("read"),
            "new"
        );
        call(
            Builtin::FileWrite,
            json!({"path": "a.txt", "content": ""}),
            &f.env,
        )
        .await;

        let r = call(Builtin::ListFiles, json!({}), &f.env).await;
        assert!(!r.is_error, "{}", r.content);
        assert!(
            r.content.starts_with("2 entries in the workspace"),
            "{}",
            r.content
        );
        assert!(r.content.ends_with("\na.txt\nreports/"), "{}", r.content);
        let r = call(
            Builtin::ListFiles,
            json!({"path": ".", "recursive": true}),
            &f.env,
        )
        .await;
        assert!(
            r.content
                .ends_with("\na.txt\nreports/\nreports/q3/\nreports/q3/summary.md"),
            "{}",
            r.content
        );
        let r = call(Builtin::ListFiles, json!({"path": "reports"}), &f.env).await;
        assert!(r.content.ends_with("\nreports/q3/"), "{}", r.content);
        let r = call(Builtin::ListFiles, json!({"path": "a.txt"}), &f.env).await;
        assert_eq!(r.content, "`a.txt` is a file (0 bytes)");
        let r = call(Builtin::ListFiles, json!({"path": "nope"}), &f.env).await;
        assert!(
            r.is_error && r.content.contains("does not exist"),
            "{}",
            r.content
        );
        let r = call(Builtin::FileRead, json!({"path": "reports"}), &f.env).await;
        assert!(
            r.is_error && r.content.contains("directory"),
            "{}",
            r.content
        );
        let r = call(Builtin::FileRead, json!({"path": "missing.txt"}), &f.env).await;
        assert!(
            r.is_error && r.content.contains("does not exist"),
            "{}",
            r.content
        );
        let r = call(
            Builtin::FileWrite,
            json!({"path": "reports", "content": "x"}),
            &f.env,
        )
        .await;
        assert!(
            r.is_error && r.content.contains("directory"),
            "{}",
            r.content
        );
    }

    #[tokio::test]
    async fn file_read_is_cut_to_max_bytes() {
        let f = fixture();
        fs::create_dir_all(f.ws()).expect("ws");
        fs::write(f.ws().join("big.txt"), "b".repeat(5000)).expect("write");
        let r = call(Builtin::FileRead, json!({"path": "big.txt"}), &f.env).await;
        assert!(!r.is_error);
        assert!(r.content.starts_with(&"b".repeat(1000)), "{}", r.content);
        assert!(!r.content.contains(&"b".repeat(1001)));
        assert!(
            r.content
                .ends_with("[file cut: showing the first 1000 of 5000 bytes; 4000 bytes cut]"),
            "{}",
            r.content
        );
        // Invalid UTF-8 is replaced, not refused.
        fs::write(f.ws().join("bin.dat"), [b'o', b'k', 0xff]).expect("write");
        let r = call(Builtin::FileRead, json!({"path": "bin.dat"}), &f.env).await;
        assert_eq!(r, ToolResult::ok("ok\u{fffd}"));
    }

    #[tokio::test]
    async fn listing_stops_at_1000_entries() {
        let f = fixture();
        fs::create_dir_all(f.ws().join("many")).expect("dir");
        for i in 0..1005 {
            fs::write(f.ws().join(format!("many/f{i:04}")), "").expect("file");
        }
        let r = call(Builtin::ListFiles, json!({"recursive": true}), &f.env).await;
        assert!(!r.is_error);
        assert!(
            r.content.starts_with("1000 entries"),
            "{}",
            &r.content[..80]
        );
        assert!(r.content.contains("\nmany/\nmany/f0000\n"));
        assert!(r.content.contains("many/f0998\n"));
        assert!(!r.content.contains("many/f0999"));
        assert!(r
            .content
            .ends_with("[listing stopped at 1000 entries: list a subdirectory to see more]"));
    }

    #[tokio::test]
    async fn delete_files_reports_each_path() {
        let f = fixture();
        fs::create_dir_all(f.ws().join("build/sub")).expect("dirs");
        fs::create_dir_all(f.ws().join("empty")).expect("dirs");
        fs::write(f.ws().join("a.log"), "a").expect("a");
        fs::write(f.ws().join("b.log"), "b").expect("b");
        fs::write(f.ws().join("build/sub/x.o"), "x").expect("x");

        let r = call(
            Builtin::DeleteFiles,
            json!({"paths": ["a.log", "b.log", "empty"]}),
            &f.env,
        )
        .await;
        assert_eq!(
            r,
            ToolResult::ok(
                "3 of 3 deleted\ndeleted: a.log\ndeleted: b.log\ndeleted: empty/ (empty directory)"
            )
        );
        let r = call(
            Builtin::DeleteFiles,
            json!({"paths": ["build", "a.log"]}),
            &f.env,
        )
        .await;
        assert!(r.is_error);
        assert!(r.content.starts_with("0 of 2 deleted"), "{}", r.content);
        assert!(r.content.contains("pass recursive: true"), "{}", r.content);
        assert!(
            r.content.contains("`a.log` does not exist"),
            "{}",
            r.content
        );
        assert!(f.ws().join("build/sub/x.o").exists());

        let r = call(
            Builtin::DeleteFiles,
            json!({"paths": ["build"], "recursive": true}),
            &f.env,
        )
        .await;
        assert_eq!(
            r,
            ToolResult::ok("1 of 1 deleted\ndeleted: build/ (directory and its contents)")
        );
        assert!(!f.ws().join("build").exists());

        for root in [".", "", "./", "sub/.."] {
            let r = call(
                Builtin::DeleteFiles,
                json!({"paths": [root], "recursive": true}),
                &f.env,
            )
            .await;
            assert!(r.is_error, "{root}: {}", r.content);
            assert!(r.content.contains("refused"), "{root}: {}", r.content);
        }
        assert!(f.ws().is_dir(), "the workspace survives");
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn symlinks_inside_are_fine_and_are_deleted_as_links() {
        let f = fixture();
        fs::create_dir_all(f.ws().join("real")).expect("dir");
        fs::write(f.ws().join("real/data.txt"), "data").expect("file");
        std::os::unix::fs::symlink(f.ws().join("real"), f.ws().join("alias")).expect("link");
        let r = call(Builtin::FileRead, json!({"path": "alias/data.txt"}), &f.env).await;
        assert_eq!(r, ToolResult::ok("data"));
        let r = call(Builtin::ListFiles, json!({"recursive": true}), &f.env).await;
        assert!(
            r.content.contains("\nalias@\nreal/\nreal/data.txt"),
            "{}",
            r.content
        );
        let r = call(
            Builtin::DeleteFiles,
            json!({"paths": ["alias"], "recursive": true}),
            &f.env,
        )
        .await;
        assert_eq!(
            r,
            ToolResult::ok("1 of 1 deleted\ndeleted: alias (symbolic link)")
        );
        assert!(f.ws().join("real/data.txt").exists(), "the target survives");
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn escapes_are_refused_and_touch_nothing() {
        let f = fixture();
        let ws = f.ws();
        fs::create_dir_all(&ws).expect("ws");
        fs::write(ws.join("inside.txt"), "inside").expect("inside");
        let outside = f.base.join("outside");
        std::os::unix::fs::symlink(&outside, ws.join("link_out")).expect("dir link");
        std::os::unix::fs::symlink(outside.join("secret.txt"), ws.join("link_file"))
            .expect("file link");
        std::os::unix::fs::symlink(outside.join("new.txt"), ws.join("dangling"))
            .expect("dangling link");
        let abs_secret = outside.join("secret.txt").display().to_string();
        let abs_new = outside.join("x.txt").display().to_string();

        let escapes = [
            "../outside/secret.txt",
            "sub/../../outside/secret.txt",
            abs_secret.as_str(),
            "link_out/secret.txt",
            "link_file",
            "link_out",
        ];
        for path in escapes {
            let r = call(Builtin::FileRead, json!({ "path": path }), &f.env).await;
            assert!(r.is_error, "read {path}: {}", r.content);
            assert!(r.content.contains("refused"), "read {path}: {}", r.content);
            assert!(!r.content.contains("top secret"), "read {path}");

            let r = call(Builtin::ListFiles, json!({ "path": path }), &f.env).await;
            assert!(
                r.is_error && r.content.contains("refused"),
                "list {path}: {}",
                r.content
            );
        }
        for path in [
            "../outside/x.txt",
            abs_new.as_str(),
            abs_secret.as_str(),
            "link_out/x.txt",
            "link_out/deeper/x.txt",
            "link_file",
            "dangling",
        ] {
            for append in [false, true] {
                let r = call(
                    Builtin::FileWrite,
                    json!({ "path": path, "content": "pwned", "append": append }),
                    &f.env,
                )
                .await;
                assert!(r.is_error, "write {path}: {}", r.content);
                assert!(r.content.contains("refused"), "write {path}: {}", r.content);
            }
        }
        let r = call(
            Builtin::DeleteFiles,
            json!({"paths": escapes, "recursive": true}),
            &f.env,
        )
        .await;
        assert!(r.is_error);
        assert!(r.content.starts_with("0 of 6 deleted"), "{}", r.content);
        assert_eq!(r.content.matches("refused").count(), 6, "{}", r.content);
        let r = call(Builtin::DeleteFiles, json!({"paths": ["dangling"]}), &f.env).await;
        assert!(r.is_error && r.content.contains("refused"), "{}", r.content);

        outside_untouched(&f);
        // The links themselves are still there, and nothing else moved.
        for link in ["link_out", "link_file", "dangling"] {
            assert!(fs::symlink_metadata(ws.join(link))
                .expect(link)
                .is_symlink());
        }
        assert_eq!(
            fs::read_to_string(ws.join("inside.txt")).expect("inside"),
            "inside"
        );
        assert!(!ws.join("sub").exists());
        // Listing the workspace shows the links without following them.
        let r = call(Builtin::ListFiles, json!({"recursive": true}), &f.env).await;
        assert!(!r.content.contains("secret"), "{}", r.content);
    }

    // -- shell -----------------------------------------------------------

    #[tokio::test]
    async fn shell_is_disabled_by_default() {
        let f = fixture();
        let r = call(Builtin::Shell, json!({"command": "touch ran"}), &f.env).await;
        assert_eq!(r, ToolResult::error(SHELL_DISABLED));
        assert!(!f.ws().join("ran").exists());
    }

    #[tokio::test]
    async fn shell_runs_in_the_workspace() {
        let mut f = fixture();
        f.env.shell_enabled = true;
        let r = call(Builtin::Shell, json!({"command": "echo hi"}), &f.env).await;
        assert_eq!(
            r,
            ToolResult::ok("exit code: 0\n--- stdout ---\nhi\n\n--- stderr ---\n(empty)")
        );
        let r = call(
            Builtin::Shell,
            json!({"command": "pwd; touch made-here; echo oops >&2; exit 3"}),
            &f.env,
        )
        .await;
        assert!(r.is_error);
        assert!(r.content.starts_with("exit code: 3\n"), "{}", r.content);
        assert!(
            r.content.contains(&f.ws().display().to_string()),
            "{}",
            r.content
        );
        assert!(
            r.content.ends_with("--- stderr ---\noops\n"),
            "{}",
            r.content
        );
        assert!(f.ws().join("made-here").exists());
        // strands' own environment is not passed on.
        if std::env::var_os("CARGO_MANIFEST_DIR").is_some() {
            let r = call(
                Builtin::Shell,
                json!({"command": "echo \"${CARGO_MANIFEST_DIR:-unset}\""}),
                &f.env,
            )
            .await;
            assert!(r.content.contains("\nunset\n"), "{}", r.content);
        }
    }

    #[tokio::test]
    async fn shell_output_is_cut_and_time_limited() {
        let mut f = fixture();
        f.env.shell_enabled = true;
        let r = call(
            Builtin::Shell,
            json!({"command": "i=0; while [ $i -lt 500 ]; do printf 0123456789; i=$((i+1)); done"}),
            &f.env,
        )
        .await;
        assert!(!r.is_error, "{}", r.content);
        assert!(
            r.content
                .contains("\n[stdout cut: showing the first 1000 of 5000 bytes; 4000 bytes cut]"),
            "{}",
            r.content
        );

        let started = Instant::now();
        let r = call(
            Builtin::Shell,
            json!({"command": "echo started; sleep 30; echo never", "timeout_seconds": 1}),
            &f.env,
        )
        .await;
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        assert!(r.is_error);
        assert!(
            r.content.starts_with(
                "timed out after 1s: the command was killed\n--- stdout ---\nstarted\n"
            ),
            "{}",
            r.content
        );
        assert!(!r.content.contains("never"));

        // The tool's default limit applies without timeout_seconds.
        f.env.timeout = Duration::from_millis(300);
        let started = Instant::now();
        let r = call(Builtin::Shell, json!({"command": "sleep 30"}), &f.env).await;
        assert!(started.elapsed() < Duration::from_secs(4));
        assert!(
            r.content.starts_with("timed out after 300ms"),
            "{}",
            r.content
        );

        // A background process holding the pipes does not hold the call.
        f.env.timeout = Duration::from_secs(5);
        let started = Instant::now();
        let r = call(
            Builtin::Shell,
            json!({"command": "sleep 30 & echo bg"}),
            &f.env,
        )
        .await;
        assert!(
            started.elapsed() < Duration::from_secs(4),
            "{:?}",
            started.elapsed()
        );
        assert!(r.content.contains("stdout ---\nbg\n"), "{}", r.content);
    }

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
