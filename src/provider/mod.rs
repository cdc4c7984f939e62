//! Model providers: the one place that talks to an LLM.
//!
//! The engine builds a [`ChatRequest`] and gets a [`ChatResponse`] back; it
//! never knows which wire protocol was spoken. Shipped: OpenAI-compatible Chat
//! Completions (`openai`, `ollama`), Anthropic Messages (`anthropic`) and the
//! offline rehearsal provider `echo`. Anything else is refused with exit 18.
//!
//! Every HTTP provider sends through [`retry::send_with_retry`], which sorts
//! failures (429 honouring `Retry-After`, 5xx, timeouts and connection
//! errors) for the policy in [`crate::retry`] that the Slack client shares.

mod anthropic;
mod echo;
mod openai;
pub mod retry;

use serde::{Deserialize, Serialize};
use std::time::Duration;

use crate::error::{Error, Result};

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

/// One model call: a system prompt, a conversation, and the tools on offer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    /// The agent id, for logs and the echo provider.
    pub agent: String,
    pub model: String,
    pub system: String,
    pub messages: Vec<Message>,
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub max_tokens: Option<u32>,
    /// Tools the model may call; empty for a plain completion.
    #[serde(default)]
    pub tools: Vec<ToolSpec>,
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

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatResponse {
    pub text: String,
    /// Tool calls the model asked for, in order; empty when it answered.
    #[serde(default)]
    pub tool_calls: Vec<ToolCall>,
    /// `calls` is 1 for a single response.
    pub usage: Usage,
}

/// Which provider family a spec names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    OpenAi,
    Ollama,
    Anthropic,
    Echo,
}

impl ProviderKind {
    /// Parses a `runtime.provider` / `agents.<id>.provider` value.
    /// Providers strands-cli knows but this build does not ship (bedrock,
    /// gemini) and unknown names are `Error::Unsupported` (exit 18).
    pub fn parse(name: &str) -> Result<Self> {
        match name.trim().to_ascii_lowercase().as_str() {
            "openai" => Ok(ProviderKind::OpenAi),
            "ollama" => Ok(ProviderKind::Ollama),
            "anthropic" => Ok(ProviderKind::Anthropic),
            "echo" => Ok(ProviderKind::Echo),
            other => Err(Error::Unsupported(format!(
                "provider `{other}` is not supported by this build (supported: openai, ollama, anthropic, echo)"
            ))),
        }
    }
}

/// Connection settings resolved from the spec and the environment.
#[derive(Debug, Clone)]
pub struct ProviderConfig {
    pub kind: ProviderKind,
    /// `runtime.host`, if the spec gives one.
    pub host: Option<String>,
    pub timeout: Duration,
    pub retry: crate::retry::RetryPolicy,
}

/// A ready-to-use provider. Enum dispatch: no trait objects needed.
#[derive(Debug, Clone)]
pub enum Provider {
    OpenAi(openai::OpenAiClient),
    Anthropic(anthropic::AnthropicClient),
    Echo(echo::EchoProvider),
}

impl Provider {
    /// Builds the provider; reads `OPENAI_BASE_URL`, `OPENAI_API_KEY`,
    /// `ANTHROPIC_BASE_URL`, `ANTHROPIC_API_KEY` from the environment.
    pub fn new(config: &ProviderConfig) -> Result<Self> {
        match config.kind {
            ProviderKind::OpenAi | ProviderKind::Ollama => {
                Ok(Provider::OpenAi(openai::OpenAiClient::new(config)?))
            }
            ProviderKind::Anthropic => Ok(Provider::Anthropic(anthropic::AnthropicClient::new(
                config,
            )?)),
            ProviderKind::Echo => Ok(Provider::Echo(echo::EchoProvider)),
        }
    }

    /// One completion, with retries. Errors are `Error::Runtime` naming the
    /// provider, the URL (never the key) and what went wrong.
    pub async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse> {
        match self {
            Provider::OpenAi(p) => p.complete(request).await,
            Provider::Anthropic(p) => p.complete(request).await,
            Provider::Echo(p) => Ok(p.complete(request)),
        }
    }
}

/// Installs rustls' ring crypto provider once per process (reqwest is built
/// without a default provider so that it shares ring with slack-morphism).
pub fn install_crypto() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}
