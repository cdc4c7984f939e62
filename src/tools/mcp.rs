//! MCP servers (`tools.mcp`) as tools, through the official Rust SDK `rmcp`.
//!
//! An agent that lists a server's id gets every tool the server lists,
//! named `{id}__{tool}` (model APIs allow `[A-Za-z0-9_-]`, at most 64
//! characters: other characters become `_`, a name too long is cut and
//! given a hash of the original; two tools that end up with one name are
//! refused, never merged).
//!
//! Lifetime: the engine connects to each server an agent uses when the
//! agent's tool step starts (and again on every resume of that step) — a
//! child process for `command` servers (its own process group, killed when
//! the step ends), a Streamable HTTP session for `url` servers — and lists
//! its tools within `tools.timeout_seconds`. A server that cannot be
//! started or listed fails the step with a runtime error naming it. Calls
//! go through `tools/call` with the same time limit; the text of the result
//! (text blocks, embedded text resources; other blocks summarized) becomes
//! the result the model reads, cut to `tools.max_output_bytes`, and the
//! server's `isError` becomes an error result. A server that asks a person
//! something during a call (elicitation) is answered by a gate, not here
//! (`elicit`): the call stops and is made again with the answer.
//!
//! Secrets: header values and environment values never appear in
//! messages, logs or `Debug`; a child process gets only a small set of the
//! parent's environment variables ([`INHERITED_ENV`]) plus the spec's `env`,
//! so strands' own credentials never reach a server.
//!
//! Approvals: the engine cannot know whether an MCP tool changes state, so
//! every call counts as changing state (it asks unless the policy says
//! otherwise). Schemas for checking edited arguments: every listing is kept
//! in a process-wide cache; when a human edits a call's arguments in a
//! process that has not listed that server (e.g. `strands resume` after the
//! run paused), the engine connects to the server again before the answer
//! is accepted ([`crate::engine::tools::prepare_answer_check`]). Where that
//! cannot happen (a synchronous check with nothing cached) the edit is
//! accepted and checked against the live schema before the call runs: an
//! edit that does not fit never runs, and the model is told why.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::process::Stdio;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use rmcp::service::{ClientServiceExt, RoleClient, RunningService};
use serde_json::{json, Map, Value};
use tokio::io::AsyncReadExt;

use super::builtin::{effective_timeout, human_duration, human_size, lossy_text, short_n};
use super::{Risk, ToolEnv, ToolMeta, ToolResult};
use crate::error::{Error, Result};
use crate::provider::ToolSpec;
use crate::spec::{McpServerSpec, McpTransport};

mod elicit;

pub use elicit::Called;

/// The longest tool name model APIs accept.
pub const MAX_TOOL_NAME: usize = 64;

/// Separates the server id from the tool's own name.
pub const SEPARATOR: &str = "__";

/// The parent's environment variables a child server gets (the spec's
/// `env` is added). Everything else — API keys, tokens — stays with strands.
pub const INHERITED_ENV: &[&str] = &[
    "HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR",
    "TZ",
];

/// How much of a child's stderr is kept, and how much an error message shows.
const STDERR_KEPT: usize = 4096;
const STDERR_SHOWN: usize = 400;

/// The longest tool description offered to the model, in characters.
const MAX_DESCRIPTION_CHARS: usize = 1024;

/// Cached schemas kept at most (the cache is cleared past this).
const MAX_CACHED_SCHEMAS: usize = 4096;

// ---------------------------------------------------------------------------
// Names

/// The name the model sees for `tool` of server `server`: `{server}__{tool}`
/// with characters outside `[A-Za-z0-9_-]` replaced by `_`; when longer than
/// [`MAX_TOOL_NAME`], the tool part is cut and followed by `_` and 8 hex
/// digits of the original name's SHA-256, so distinct long names stay
/// distinct. (Server ids are validated to at most 32 such characters.)
pub fn tool_name(server: &str, tool: &str) -> String {
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    let server = clean(server);
    let tool_part = clean(tool);
    let full = format!("{server}{SEPARATOR}{tool_part}");
    if full.len() <= MAX_TOOL_NAME {
        return full;
    }
    let hash = &sha256_hex(tool.as_bytes())[..8];
    let keep = MAX_TOOL_NAME.saturating_sub(server.len() + SEPARATOR.len() + 1 + hash.len());
    // `clean` output is ASCII: byte slicing is safe.
    let cut = &tool_part[..keep.min(tool_part.len())];
    format!("{server}{SEPARATOR}{cut}_{hash}")
}

/// The server id of a tool name `{id}__{tool}`, if it has that shape.
pub fn server_of(name: &str) -> Option<&str> {
    name.split_once(SEPARATOR)
        .filter(|(id, tool)| !id.is_empty() && !tool.is_empty())
        .map(|(id, _)| id)
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

// ---------------------------------------------------------------------------
// Schemas kept for checking edited arguments

static SCHEMAS: LazyLock<Mutex<HashMap<String, Value>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// Identifies a server's configuration (command, arguments, environment,
/// URL, headers) without showing any of it.
pub fn fingerprint(server: &McpServerSpec) -> String {
    let what = match &server.transport {
        McpTransport::Stdio { command, args, env } => json!(["stdio", command, args, env]),
        McpTransport::Http { url, headers } => json!(["http", url, headers]),
    };
    sha256_hex(format!("{}\0{what}", server.id).as_bytes())
}

fn cache_key(fingerprint: &str, name: &str) -> String {
    format!("{fingerprint}\0{name}")
}

fn remember_schema(fingerprint: &str, name: &str, schema: &Value) {
    if let Ok(mut cache) = SCHEMAS.lock() {
        if cache.len() >= MAX_CACHED_SCHEMAS {
            cache.clear();
        }
        cache.insert(cache_key(fingerprint, name), schema.clone());
    }
}

/// The schema of tool `name` as the server with this fingerprint last
/// listed it in this process, if it did.
pub fn cached_schema(fingerprint: &str, name: &str) -> Option<Value> {
    SCHEMAS
        .lock()
        .ok()
        .and_then(|c| c.get(&cache_key(fingerprint, name)).cloned())
}

/// An input schema as offered to models: an object schema, with
/// `properties` present.
fn normalize_schema(schema: &Map<String, Value>) -> Value {
    let mut s = schema.clone();
    s.entry("type").or_insert_with(|| json!("object"));
    if s.get("type") == Some(&json!("object")) {
        s.entry("properties").or_insert_with(|| json!({}));
    }
    Value::Object(s)
}

// ---------------------------------------------------------------------------
// Connections

/// A tool as a server listed it.
#[derive(Debug, Clone, PartialEq)]
pub struct Listed {
    /// The server's own name for it (what `tools/call` gets).
    pub remote: String,
    /// The name the model sees ([`tool_name`]).
    pub name: String,
    pub description: String,
    pub schema: Value,
    /// The server says the tool may destroy data (a hint: it can raise the
    /// risk shown to a human, never lower it).
    pub destructive_hint: bool,
}

/// A live connection to one MCP server. Dropping it ends the session; a
/// child process is killed with its process group.
pub struct Connection {
    server: String,
    client: RunningService<RoleClient, elicit::Handler>,
    stderr: Option<Arc<Mutex<String>>>,
    /// Where the server's `elicitation/create` requests land.
    questions: elicit::Questions,
}

impl fmt::Debug for Connection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Connection")
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

/// A stdio server's stderr: read in the background, the last
/// [`STDERR_KEPT`] bytes kept for error messages.
fn collect_stderr(
    mut pipe: tokio::process::ChildStderr,
    server: String,
) -> (Arc<Mutex<String>>, tokio::task::JoinHandle<()>) {
    let tail = Arc::new(Mutex::new(String::new()));
    let keep = tail.clone();
    let task = tokio::spawn(async move {
        let mut buf = [0u8; 2048];
        loop {
            match pipe.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let text = String::from_utf8_lossy(&buf[..n]);
                    tracing::debug!(server = %server, stderr = %text.trim_end(), "MCP server stderr");
                    if let Ok(mut t) = keep.lock() {
                        t.push_str(&text);
                        if t.len() > STDERR_KEPT {
                            let mut cut = t.len() - STDERR_KEPT;
                            while !t.is_char_boundary(cut) {
                                cut += 1;
                            }
                            t.drain(..cut);
                        }
                    }
                }
            }
        }
    });
    (tail, task)
}

/// `; stderr: …` with the end of what the server wrote, or nothing.
fn stderr_note(tail: Option<&Arc<Mutex<String>>>) -> String {
    let Some(text) = tail.and_then(|t| t.lock().ok().map(|t| t.trim().to_string())) else {
        return String::new();
    };
    if text.is_empty() {
        return String::new();
    }
    let chars: Vec<char> = text.chars().collect();
    let shown: String = if chars.len() > STDERR_SHOWN {
        let tail: String = chars[chars.len() - STDERR_SHOWN..].iter().collect();
        format!("…{tail}")
    } else {
        text
    };
    format!("; its stderr ends: {}", short_n(&shown, STDERR_SHOWN + 1))
}

impl Connection {
    /// Starts or connects to `server`, completes the MCP handshake and lists
    /// its tools, all within `timeout`. Every failure is a runtime error
    /// naming the server.
    pub async fn open(
        server: &McpServerSpec,
        timeout: Duration,
        egress: &Arc<crate::tools::egress::Egress>,
    ) -> Result<(Arc<Connection>, Vec<Listed>)> {
        let id = server.id.as_str();
        let limit = effective_timeout(timeout);
        let fail = |what: String| Error::Runtime(format!("MCP server `{id}` {what}"));
        tracing::debug!(server = %id, "connecting to MCP server");
        let (handler, questions) = elicit::Handler::new();
        let (client, stderr, stderr_task) = match &server.transport {
            McpTransport::Stdio { command, args, env } => {
                let mut cmd = tokio::process::Command::new(command);
                cmd.args(args).env_clear().kill_on_drop(true);
                for key in INHERITED_ENV {
                    if let Some(v) = std::env::var_os(key) {
                        cmd.env(key, v);
                    }
                }
                cmd.envs(env);
                let mut wrapped = process_wrap::tokio::CommandWrap::from(cmd);
                wrapped
                    .wrap(process_wrap::tokio::ProcessGroup::leader())
                    .wrap(process_wrap::tokio::KillOnDrop);
                let (transport, pipe) = rmcp::transport::TokioChildProcess::builder(wrapped)
                    .stderr(Stdio::piped())
                    .spawn()
                    .map_err(|e| fail(format!("could not be started: `{command}`: {e}")))?;
                let (tail, task) = match pipe {
                    Some(p) => {
                        let (tail, task) = collect_stderr(p, id.to_string());
                        (Some(tail), Some(task))
                    }
                    None => (None, None),
                };
                let client = tokio::time::timeout(
                    limit,
                    handler.serve_with_lifecycle(transport, elicit::lifecycle()),
                )
                .await;
                let client = match client {
                    Ok(Ok(c)) => Ok(c),
                    Ok(Err(e)) => Err(format!(
                        "did not complete the MCP handshake: {}",
                        crate::error::chain(&e)
                    )),
                    Err(_) => Err(format!(
                        "did not complete the MCP handshake within {}",
                        human_duration(limit)
                    )),
                };
                (client, tail, task)
            }
            McpTransport::Http { url, headers } => {
                let transport = http_transport(url, headers, egress).map_err(&fail)?;
                let client = tokio::time::timeout(
                    limit,
                    handler.serve_with_lifecycle(transport, elicit::lifecycle()),
                )
                .await;
                let client = match client {
                    Ok(Ok(c)) => Ok(c),
                    Ok(Err(e)) => Err(format!(
                        "at {} did not complete the MCP handshake: {}",
                        shown_url(url),
                        crate::error::chain(&e)
                    )),
                    Err(_) => Err(format!(
                        "at {} did not complete the MCP handshake within {}",
                        shown_url(url),
                        human_duration(limit)
                    )),
                };
                (client, None, None)
            }
        };
        let client = match client {
            Ok(c) => c,
            Err(why) => {
                // Let the reader catch what a dying server wrote last.
                if let Some(task) = stderr_task {
                    let _ = tokio::time::timeout(Duration::from_millis(500), task).await;
                }
                return Err(fail(format!("{why}{}", stderr_note(stderr.as_ref()))));
            }
        };
        let conn = Connection {
            server: id.to_string(),
            client,
            stderr,
            questions,
        };
        let tools = match tokio::time::timeout(limit, conn.client.list_all_tools()).await {
            Ok(Ok(t)) => t,
            Ok(Err(e)) => {
                return Err(fail(format!(
                    "could not list its tools: {}{}",
                    crate::error::chain(&e),
                    stderr_note(conn.stderr.as_ref())
                )))
            }
            Err(_) => {
                return Err(fail(format!(
                    "did not list its tools within {}",
                    human_duration(limit)
                )))
            }
        };
        let listed = listing(
            server,
            tools.iter().filter_map(|t| serde_json::to_value(t).ok()),
        )?;
        let fp = fingerprint(server);
        for t in &listed {
            remember_schema(&fp, &t.name, &t.schema);
        }
        tracing::debug!(server = %id, tools = listed.len(), "MCP server connected");
        Ok((Arc::new(conn), listed))
    }

    /// Calls `remote` with `args` (a JSON object) within `timeout`, for a
    /// caller that cannot ask anyone: a question from the server ends the
    /// call with an error result ([`Connection::call_asking`] asks).
    pub async fn call(
        &self,
        remote: &str,
        args: &Value,
        timeout: Duration,
        max_bytes: usize,
    ) -> ToolResult {
        match self
            .call_asking(remote, args, timeout, max_bytes, None)
            .await
        {
            Called::Done(r) => r,
            Called::Asks(_) => ToolResult::error(format!(
                "MCP server `{}` asked for input nobody can give here; the call was abandoned",
                self.server
            )),
        }
    }
}

/// A URL as shown in messages: scheme, host, port and path (no query or
/// credentials, which may be secrets).
fn shown_url(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(u) => {
            let port = u.port().map(|p| format!(":{p}")).unwrap_or_default();
            format!(
                "{}://{}{port}{}",
                u.scheme(),
                u.host_str().unwrap_or_default(),
                u.path()
            )
        }
        Err(_) => "(invalid URL)".into(),
    }
}

/// The Streamable HTTP transport for `url`: the tools' HTTP client (ring
/// rustls, the egress policy, no redirects — headers may carry
/// credentials), header values marked sensitive so no `Debug` shows them.
fn http_transport(
    url: &str,
    headers: &BTreeMap<String, String>,
    egress: &Arc<crate::tools::egress::Egress>,
) -> std::result::Result<rmcp::transport::StreamableHttpClientTransport<reqwest::Client>, String> {
    use reqwest::header::{HeaderName, HeaderValue};
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    if let Ok(u) = url::Url::parse(url) {
        egress.check_literal(&u).map_err(|b| b.to_string())?;
    }
    let client = crate::tools::egress::client(egress)?;
    let mut custom = HashMap::new();
    for (name, value) in headers {
        let n = HeaderName::from_bytes(name.trim().as_bytes())
            .map_err(|_| format!("has an invalid header name `{name}`"))?;
        let mut v = HeaderValue::from_str(value)
            .map_err(|_| format!("has an invalid value for header `{name}` (not shown)"))?;
        v.set_sensitive(true);
        custom.insert(n, v);
    }
    let config =
        StreamableHttpClientTransportConfig::with_uri(url.to_string()).custom_headers(custom);
    Ok(rmcp::transport::StreamableHttpClientTransport::with_client(
        client, config,
    ))
}

/// A server's `tools/list` answer (tools as JSON) as named tools; names
/// that collide after sanitizing are refused.
pub fn listing(
    server: &McpServerSpec,
    tools: impl IntoIterator<Item = Value>,
) -> Result<Vec<Listed>> {
    let id = &server.id;
    let mut out: Vec<Listed> = Vec::new();
    let mut names: BTreeMap<String, String> = BTreeMap::new();
    for t in tools {
        let remote = t["name"].as_str().unwrap_or_default().to_string();
        if remote.trim().is_empty() {
            tracing::warn!(server = %id, "MCP server lists a tool without a name; ignored");
            continue;
        }
        let name = tool_name(id, &remote);
        if let Some(other) = names.insert(name.clone(), remote.clone()) {
            return Err(Error::Runtime(format!(
                "MCP server `{id}` lists tools `{other}` and `{remote}`, which would both be called `{name}`; refusing the server's tools rather than guessing which one a call means"
            )));
        }
        let own = t["description"]
            .as_str()
            .map(str::trim)
            .filter(|d| !d.is_empty())
            .map(str::to_string)
            .unwrap_or_else(|| format!("Tool `{remote}` of MCP server `{id}`."));
        let description = match server.description.as_deref().map(str::trim) {
            Some(d) if !d.is_empty() => format!("{own}\n\n(MCP server `{id}`: {d})"),
            _ => own,
        };
        let description = cut_chars(&description, MAX_DESCRIPTION_CHARS);
        let schema = match t.get("inputSchema") {
            Some(Value::Object(m)) => normalize_schema(m),
            _ => json!({"type": "object", "properties": {}}),
        };
        out.push(Listed {
            remote,
            name,
            description,
            schema,
            destructive_hint: t["annotations"]["destructiveHint"].as_bool() == Some(true),
        });
    }
    Ok(out)
}

fn cut_chars(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

// ---------------------------------------------------------------------------
// Results

/// A `tools/call` result (as JSON) as the result the model reads: the text
/// of its content blocks, one per line (embedded text resources included;
/// images, audio, binary resources and links summarized), or the
/// structured content when there is no content; `isError` makes it an
/// error result. Cut to `max_bytes`.
pub fn result_text(result: &Value, max_bytes: usize) -> ToolResult {
    let is_error = result["isError"].as_bool() == Some(true);
    let blocks: Vec<String> = result["content"]
        .as_array()
        .map(|c| c.iter().map(block_text).collect())
        .unwrap_or_default();
    let mut text = blocks.join("\n");
    if blocks.is_empty() {
        if let Some(s) = result.get("structuredContent") {
            text = s.to_string();
        }
    }
    if text.is_empty() {
        text = if is_error {
            "the tool reported an error without saying why".into()
        } else {
            "(the tool returned no content)".into()
        };
    }
    let content = cut_bytes(text, max_bytes);
    ToolResult {
        content,
        is_error,
        blocked: None,
    }
}

fn block_text(block: &Value) -> String {
    let mime = |b: &Value| b["mimeType"].as_str().unwrap_or("unknown type").to_string();
    let b64_size = |data: &Value| human_size(data.as_str().map_or(0, |d| d.len() as u64 * 3 / 4));
    match block["type"].as_str() {
        Some("text") => block["text"].as_str().unwrap_or_default().to_string(),
        Some("image") => format!("[image: {}, {}]", mime(block), b64_size(&block["data"])),
        Some("audio") => format!("[audio: {}, {}]", mime(block), b64_size(&block["data"])),
        Some("resource") => {
            let r = &block["resource"];
            let uri = r["uri"].as_str().unwrap_or_default();
            match r["text"].as_str() {
                Some(t) => format!("[resource {uri}]\n{t}"),
                None => format!("[resource {uri}: {}, {}]", mime(r), b64_size(&r["blob"])),
            }
        }
        Some("resource_link") => {
            let uri = block["uri"].as_str().unwrap_or_default();
            match block["name"].as_str() {
                Some(n) if !n.is_empty() => format!("[resource link: {uri} ({n})]"),
                _ => format!("[resource link: {uri}]"),
            }
        }
        _ => short_n(&block.to_string(), 200),
    }
}

/// At most `max` bytes of `text` (never splitting a character), with a
/// note saying how much was cut.
fn cut_bytes(text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    let total = text.len();
    let mut out = lossy_text(&text.as_bytes()[..max], true);
    let kept = out.len();
    out.push_str(&format!(
        "\n[output cut: showing the first {kept} of {total} bytes; {} bytes cut]",
        total - kept
    ));
    out
}

// ---------------------------------------------------------------------------
// The tool

/// One tool of an MCP server, as an agent's tool.
#[derive(Clone)]
pub struct McpTool {
    /// The server's id.
    pub server: String,
    /// The name the model sees (`{server}__{tool}`).
    pub name: String,
    /// The server's own name for the tool.
    pub remote: String,
    pub description: String,
    pub schema: Value,
    pub destructive_hint: bool,
    conn: Option<Arc<Connection>>,
}

impl fmt::Debug for McpTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpTool")
            .field("server", &self.server)
            .field("name", &self.name)
            .field("remote", &self.remote)
            .field("connected", &self.conn.is_some())
            .finish()
    }
}

impl McpTool {
    pub fn new(server: &str, listed: Listed, conn: Option<Arc<Connection>>) -> McpTool {
        McpTool {
            server: server.to_string(),
            name: listed.name,
            remote: listed.remote,
            description: listed.description,
            schema: listed.schema,
            destructive_hint: listed.destructive_hint,
            conn,
        }
    }

    pub fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.name.clone(),
            description: self.description.clone(),
            parameters: self.schema.clone(),
        }
    }

    /// Unknown: every call counts as changing state (fail closed).
    pub fn changes_state(&self, _args: &Value) -> bool {
        true
    }

    /// Irreversible, medium risk (high when the server itself says the
    /// tool is destructive).
    pub fn meta(&self, _args: &Value) -> ToolMeta {
        ToolMeta {
            reversible: false,
            risk: if self.destructive_hint {
                Risk::High
            } else {
                Risk::Medium
            },
        }
    }

    /// E.g. `send_email on MCP server mail with {"to":"a@b.c"}`.
    pub fn describe(&self, args: &Value) -> String {
        let hint = if self.destructive_hint {
            " (the server marks it destructive)"
        } else {
            ""
        };
        format!(
            "`{}` on MCP server `{}`{hint} with {}",
            self.remote,
            self.server,
            short_n(&args.to_string(), 300)
        )
    }

    pub async fn run(&self, args: &Value, env: &ToolEnv) -> ToolResult {
        match &self.conn {
            Some(c) => c.call(&self.remote, args, env.timeout, env.max_bytes).await,
            None => self.not_connected(),
        }
    }

    /// [`McpTool::run`] where a person can be asked: a question of the
    /// server comes back as [`Called::Asks`]; `prior` holds the questions
    /// and replies of the call's earlier attempts.
    pub async fn run_asking(
        &self,
        args: &Value,
        env: &ToolEnv,
        prior: Option<crate::model::elicitation::Elicitation>,
    ) -> Called {
        match &self.conn {
            Some(c) => {
                c.call_asking(&self.remote, args, env.timeout, env.max_bytes, prior)
                    .await
            }
            None => Called::Done(self.not_connected()),
        }
    }

    fn not_connected(&self) -> ToolResult {
        ToolResult::error(format!(
            "MCP server `{}` is not connected; the call did not run",
            self.server
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::ToolPolicy;

    fn server(id: &str) -> McpServerSpec {
        McpServerSpec {
            id: id.into(),
            transport: McpTransport::Stdio {
                command: "true".into(),
                args: Vec::new(),
                env: BTreeMap::new(),
            },
            description: None,
            policy: ToolPolicy::default(),
        }
    }

    fn valid_name(n: &str) -> bool {
        n.len() <= MAX_TOOL_NAME
            && n.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    }

    #[test]
    fn names_are_prefixed_and_sanitized() {
        assert_eq!(tool_name("mail", "send_email"), "mail__send_email");
        assert_eq!(tool_name("mail", "send-email"), "mail__send-email");
        assert_eq!(tool_name("mail", "send.email"), "mail__send_email");
        assert_eq!(tool_name("mail", "send email/now"), "mail__send_email_now");
        assert_eq!(tool_name("fs", "lire_fichier_été"), "fs__lire_fichier__t_");
        assert_eq!(server_of("mail__send_email"), Some("mail"));
        assert_eq!(server_of("mail__a__b"), Some("mail"));
        assert_eq!(server_of("file_read"), None);
        assert_eq!(server_of("mail__"), None);
    }

    #[test]
    fn long_names_are_cut_and_stay_distinct() {
        let id = "a-server-id-of-thirty-two-chars!".replace('!', "x");
        assert_eq!(id.len(), 32);
        let long_a = format!("{}a", "t".repeat(80));
        let long_b = format!("{}b", "t".repeat(80));
        let a = tool_name(&id, &long_a);
        let b = tool_name(&id, &long_b);
        assert!(valid_name(&a) && valid_name(&b), "{a} {b}");
        assert_eq!(a.len(), MAX_TOOL_NAME);
        assert!(a.starts_with(&format!("{id}__ttt")), "{a}");
        assert_ne!(a, b, "a hash of the full name keeps them apart");
        assert_eq!(a, tool_name(&id, &long_a), "stable");
        let exact = "x".repeat(MAX_TOOL_NAME - 6);
        assert_eq!(tool_name("mail", &exact).len(), MAX_TOOL_NAME);
        assert!(!tool_name("mail", &exact).contains(&sha256_hex(exact.as_bytes())[..8]));
    }

    #[test]
    fn listings_refuse_collisions_and_normalize_schemas() {
        let s = server("mail");
        let ok = listing(
            &s,
            vec![
                json!({"name": "add", "description": "Adds.", "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}}}}),
                json!({"name": "ping", "inputSchema": {}}),
                json!({"name": "wipe", "inputSchema": {"type": "object"}, "annotations": {"destructiveHint": true}}),
                json!({"name": "", "inputSchema": {}}),
            ],
        )
        .expect("a valid listing");
        assert_eq!(ok.len(), 3, "the nameless tool is left out: {ok:?}");
        assert_eq!(ok[0].name, "mail__add");
        assert_eq!(ok[0].description, "Adds.");
        assert_eq!(ok[1].schema, json!({"type": "object", "properties": {}}));
        assert!(ok[1].description.contains("`ping`") && ok[1].description.contains("`mail`"));
        assert_eq!(ok[2].schema, json!({"type": "object", "properties": {}}));
        assert!(ok[2].destructive_hint);
        let t = McpTool::new("mail", ok[2].clone(), None);
        assert!(t.changes_state(&json!({})));
        assert_eq!(t.meta(&json!({})).risk, Risk::High);
        assert_eq!(
            McpTool::new("mail", ok[0].clone(), None).meta(&json!({})),
            ToolMeta {
                reversible: false,
                risk: Risk::Medium
            }
        );

        let clash = listing(
            &s,
            vec![
                json!({"name": "send.email", "inputSchema": {}}),
                json!({"name": "send email", "inputSchema": {}}),
            ],
        );
        match clash {
            Err(Error::Runtime(m)) => {
                assert!(
                    m.contains("`mail`")
                        && m.contains("send.email")
                        && m.contains("send email")
                        && m.contains("mail__send_email"),
                    "{m}"
                )
            }
            other => panic!("expected a runtime error, got {other:?}"),
        }
    }

    #[test]
    fn results_become_text_and_keep_is_error() {
        let r = result_text(
            &json!({"content": [{"type": "text", "text": "3"}, {"type": "text", "text": "done"}]}),
            1000,
        );
        assert_eq!(r, ToolResult::ok("3\ndone"));
        let r = result_text(
            &json!({"content": [{"type": "text", "text": "no such mailbox"}], "isError": true}),
            1000,
        );
        assert_eq!(r, ToolResult::error("no such mailbox"));
        let r = result_text(&json!({"isError": true}), 1000);
        assert!(r.is_error && !r.content.is_empty(), "{r:?}");
        let r = result_text(
            &json!({"content": [], "structuredContent": {"sum": 3}}),
            1000,
        );
        assert_eq!(r, ToolResult::ok(r#"{"sum":3}"#));
        let r = result_text(&json!({"content": []}), 1000);
        assert!(!r.is_error && r.content.contains("no content"), "{r:?}");
        let r = result_text(
            &json!({"content": [
                {"type": "image", "data": "AAAA", "mimeType": "image/png"},
                {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "hello"}},
                {"type": "resource", "resource": {"uri": "file:///b.bin", "blob": "AAAA", "mimeType": "application/octet-stream"}},
                {"type": "resource_link", "uri": "file:///c", "name": "c"},
                {"type": "audio", "data": "", "mimeType": "audio/wav"}
            ]}),
            1000,
        );
        assert_eq!(
            r.content,
            "[image: image/png, 3 bytes]\n[resource file:///a.txt]\nhello\n[resource file:///b.bin: application/octet-stream, 3 bytes]\n[resource link: file:///c (c)]\n[audio: audio/wav, 0 bytes]"
        );
    }

    #[test]
    fn long_results_are_cut_on_a_character_boundary() {
        let text = format!("{}é{}", "a".repeat(9), "b".repeat(100));
        let r = result_text(&json!({"content": [{"type": "text", "text": text}]}), 10);
        assert!(
            r.content.starts_with("aaaaaaaaa\n[output cut"),
            "{}",
            r.content
        );
        assert!(r.content.contains("of 111 bytes"), "{}", r.content);
        assert!(!r.is_error);
    }

    #[test]
    fn fingerprints_differ_by_secret_values_without_showing_them() {
        let mut a = server("mail");
        let mut b = server("mail");
        if let McpTransport::Stdio { env, .. } = &mut a.transport {
            env.insert("TOKEN".into(), "s3cret-one".into());
        }
        if let McpTransport::Stdio { env, .. } = &mut b.transport {
            env.insert("TOKEN".into(), "s3cret-two".into());
        }
        assert_ne!(fingerprint(&a), fingerprint(&b));
        let shown = format!("{a:?}");
        assert!(
            shown.contains("TOKEN") && !shown.contains("s3cret"),
            "{shown}"
        );
        let h = McpServerSpec {
            transport: McpTransport::Http {
                url: "https://mcp.example/mcp".into(),
                headers: BTreeMap::from([("Authorization".into(), "Bearer s3cret".into())]),
            },
            ..server("web")
        };
        let shown = format!("{h:?}");
        assert!(
            shown.contains("Authorization") && !shown.contains("s3cret"),
            "{shown}"
        );
        remember_schema(&fingerprint(&h), "web__x", &json!({"type": "object"}));
        assert_eq!(
            cached_schema(&fingerprint(&h), "web__x"),
            Some(json!({"type": "object"}))
        );
        assert_eq!(cached_schema(&fingerprint(&a), "web__x"), None);
    }

    #[test]
    fn shown_urls_leave_out_queries_and_credentials() {
        assert_eq!(
            shown_url("https://user:pw@mcp.example:8443/mcp?key=s3cret"),
            "https://mcp.example:8443/mcp"
        );
    }
}
