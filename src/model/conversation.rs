//! Conversation data: the messages a model reads, the tool calls it asks
//! for, their results, token usage, and the digest an approval is bound to.
//! Providers map these to their wire formats; sessions store them.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The names of the built-in tools (their behaviour is `crate::tools::builtin`).
pub const BUILTIN_TOOLS: [&str; 16] = [
    "http_request",
    "file_read",
    "file_write",
    "list_files",
    "delete_files",
    "shell",
    "current_time",
    "calculator",
    "web_fetch",
    "grep",
    "head",
    "tail",
    "search",
    "duckduckgo_search",
    "tavily_search",
    "spec_verify",
];

/// The built-ins no http executor or MCP server may be named after. The
/// later ones (strands-cli's native tools from `current_time` on) may be:
/// a spec's own tool of that name replaces the built-in, so that specs
/// written before those tools existed keep their meaning.
pub const RESERVED_TOOLS: [&str; 6] = [
    "http_request",
    "file_read",
    "file_write",
    "list_files",
    "delete_files",
    "shell",
];

/// One message of the conversation sent to the model (after the system
/// prompt). Tool calls and their results are first-class so every provider
/// can map them to its native tool-calling format.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub enum Message {
    User {
        content: String,
    },
    Assistant {
        content: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
    },
    /// The result of one tool call, answering `call_id`.
    Tool {
        call_id: String,
        name: String,
        content: String,
        #[serde(default)]
        is_error: bool,
    },
}

impl Message {
    pub fn user(content: impl Into<String>) -> Self {
        Message::User {
            content: content.into(),
        }
    }
}

/// A tool call the model asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's id for the call (OpenAI `tool_calls[].id`, Anthropic `tool_use.id`).
    pub id: String,
    pub name: String,
    /// The arguments as a JSON value (OpenAI sends a JSON string: parsed; an
    /// unparseable string is kept as a JSON string so the tool can refuse it).
    pub arguments: serde_json::Value,
}

/// A tool offered to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: serde_json::Value,
}

/// Token counts for one call or summed over many.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub calls: u64,
}

impl Usage {
    pub fn total(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }
    pub fn add(&mut self, other: Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.calls += other.calls;
    }
}

/// What a call returned, as the model will read it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolResult {
    pub content: String,
    pub is_error: bool,
    /// Set when the egress policy refused a destination (the content says
    /// the same to the model); the engine audits it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked: Option<String>,
}

impl ToolResult {
    pub fn ok(content: impl Into<String>) -> Self {
        ToolResult {
            content: content.into(),
            is_error: false,
            blocked: None,
        }
    }
    pub fn error(content: impl Into<String>) -> Self {
        ToolResult {
            content: content.into(),
            is_error: true,
            blocked: None,
        }
    }
}

/// How dangerous a call is (seed 001 §2.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Risk {
    Low,
    Medium,
    High,
    Critical,
}

impl Risk {
    pub fn parse(s: &str) -> Option<Risk> {
        Some(match s.trim().to_ascii_lowercase().as_str() {
            "low" => Risk::Low,
            "medium" => Risk::Medium,
            "high" => Risk::High,
            "critical" => Risk::Critical,
            _ => return None,
        })
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Risk::Low => "low",
            Risk::Medium => "medium",
            Risk::High => "high",
            Risk::Critical => "critical",
        }
    }
}

/// The digest an approval is bound to: SHA-256 over the tool name and the
/// canonical JSON of the arguments (object keys sorted), so an approval can
/// never be reused for another tool or other arguments.
pub fn digest(name: &str, args: &Value) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(name.as_bytes());
    h.update([0u8]);
    h.update(canonical(args).as_bytes());
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// JSON with object keys in sorted order (serde_json's map is sorted unless
/// `preserve_order` is on; sort explicitly so the digest never depends on it).
fn canonical(v: &Value) -> String {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let parts: Vec<String> = keys
                .iter()
                .map(|k| format!("{}:{}", Value::String((*k).clone()), canonical(&m[*k])))
                .collect();
            format!("{{{}}}", parts.join(","))
        }
        Value::Array(a) => format!(
            "[{}]",
            a.iter().map(canonical).collect::<Vec<_>>().join(",")
        ),
        other => other.to_string(),
    }
}

/// Arguments from `--edit-args`: a plain object, or `{name, arguments}`
/// whose name must be the call's own tool — an edit never changes which
/// tool runs.
pub fn edited_arguments(call: &ToolCall, edit: &Value) -> Result<Value, String> {
    if let Value::Object(o) = edit {
        let named = o.get("name").or_else(|| o.get("tool"));
        if let (Some(name), Some(args)) = (named, o.get("arguments")) {
            if name.as_str() != Some(call.name.as_str()) {
                return Err(format!(
                    "an edit cannot change which tool runs: call {} is `{}`, the edit names {name}",
                    call.id, call.name
                ));
            }
            return Ok(args.clone());
        }
        if let Some(name) = named {
            if name.as_str() != Some(call.name.as_str()) && !o.contains_key("arguments") {
                // `name` may be a genuine argument of the tool; only refuse
                // when it names another tool's call shape.
                if BUILTIN_TOOLS.contains(&name.as_str().unwrap_or_default()) {
                    return Err(format!(
                        "an edit cannot change which tool runs: call {} is `{}`, the edit names {name}",
                        call.id, call.name
                    ));
                }
            }
        }
        return Ok(edit.clone());
    }
    Err("--edit-args takes a JSON object of arguments".into())
}
