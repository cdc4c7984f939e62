//! Model providers: the one place that talks to an LLM.
//!
//! The engine builds a [`ChatRequest`] and gets a [`ChatResponse`] back; it
//! never knows which wire protocol was spoken. Shipped: OpenAI-compatible Chat
//! Completions (`openai`, `ollama`, and `azure_openai` through the same wire
//! code), Anthropic Messages (`anthropic`), Google's Generative Language API
//! (`gemini`), Amazon Bedrock's Converse API through the AWS SDK (`bedrock`)
//! and the offline rehearsal provider `echo`. Anything else is refused with
//! exit 18.
//!
//! Every reqwest-based provider sends through [`retry::send_with_retry`],
//! which sorts failures (429 honouring `Retry-After`, 5xx, timeouts and
//! connection errors) for the policy in [`crate::retry`] that the Slack
//! client shares; `bedrock` turns the SDK's errors into the same sorting and
//! runs the same policy, with the SDK's own retries off.

mod anthropic;
mod azure;
mod bedrock;
mod echo;
mod gemini;
mod openai;
pub mod retry;
pub mod scripted;

use serde::{Deserialize, Serialize};
use std::time::Duration;

use crate::error::{Error, Result};
pub use crate::model::conversation::{Message, ToolCall, ToolSpec, Usage};

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
#[serde(rename_all = "snake_case")]
pub enum ProviderKind {
    #[serde(rename = "openai")]
    OpenAi,
    Ollama,
    Anthropic,
    Echo,
    Gemini,
    #[serde(rename = "azure_openai")]
    AzureOpenAi,
    Bedrock,
}

/// Every name [`ProviderKind::parse`] accepts, for messages.
const SUPPORTED: &str = "openai, ollama, anthropic, gemini, azure_openai, bedrock, echo";

impl ProviderKind {
    /// Parses a `runtime.provider` / `agents.<id>.provider` value. Unknown
    /// names are `Error::Unsupported` (exit 18).
    pub fn parse(name: &str) -> Result<Self> {
        match name.trim().to_ascii_lowercase().as_str() {
            "openai" => Ok(ProviderKind::OpenAi),
            "ollama" => Ok(ProviderKind::Ollama),
            "anthropic" => Ok(ProviderKind::Anthropic),
            "echo" => Ok(ProviderKind::Echo),
            "gemini" => Ok(ProviderKind::Gemini),
            "azure_openai" => Ok(ProviderKind::AzureOpenAi),
            "bedrock" => Ok(ProviderKind::Bedrock),
            other => Err(Error::Unsupported(format!(
                "provider `{other}` is not supported by this build (supported: {SUPPORTED})"
            ))),
        }
    }

    /// The model used when neither the agent nor the runtime names one
    /// (`azure_openai`: the deployment name).
    pub fn default_model(self) -> &'static str {
        match self {
            ProviderKind::OpenAi | ProviderKind::AzureOpenAi => "gpt-4o-mini",
            ProviderKind::Ollama => "llama3.2",
            ProviderKind::Anthropic => "claude-sonnet-4-5",
            ProviderKind::Echo => "echo",
            ProviderKind::Gemini => "gemini-2.5-flash",
            ProviderKind::Bedrock => "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
        }
    }
}

/// Connection settings resolved from the spec and the settings.
#[derive(Debug, Clone)]
pub struct ProviderConfig {
    pub kind: ProviderKind,
    /// `runtime.host`, if the spec gives one.
    pub host: Option<String>,
    /// `runtime.region` (the AWS region, for `bedrock`), if the spec gives one.
    pub region: Option<String>,
    pub timeout: Duration,
    pub retry: crate::retry::RetryPolicy,
    /// The providers' keys and endpoints, from the settings.
    pub credentials: Credentials,
}

/// The providers' variables (strands-cli's names: `OPENAI_API_KEY`,
/// `ANTHROPIC_BASE_URL`…) as the settings read them at start-up, handed to
/// each provider as it is built; providers never read the environment.
/// Every value is kept secret: it never reaches a log line or a `{:?}`.
#[derive(Clone, Default)]
pub struct Credentials(std::collections::BTreeMap<String, secrecy::SecretString>);

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.0.keys()).finish()
    }
}

impl Credentials {
    /// The variables `names` that `get` has a value for.
    pub fn from_lookup<'a>(
        names: impl IntoIterator<Item = &'a str>,
        get: &impl Fn(&str) -> Option<String>,
    ) -> Credentials {
        Credentials(
            names
                .into_iter()
                .filter_map(|n| get(n).map(|v| (n.to_string(), secrecy::SecretString::from(v))))
                .collect(),
        )
    }

    /// `name`'s value, if set.
    pub fn get(&self, name: &str) -> Option<String> {
        use secrecy::ExposeSecret;
        self.0.get(name).map(|v| v.expose_secret().to_string())
    }
}

/// A ready-to-use provider. Enum dispatch: no trait objects needed.
#[derive(Debug, Clone)]
pub enum Provider {
    OpenAi(openai::OpenAiClient),
    Anthropic(anthropic::AnthropicClient),
    Gemini(gemini::GeminiClient),
    Bedrock(bedrock::BedrockClient),
    Echo(echo::EchoProvider),
    /// In-process answers for tests and benches ([`scripted::Scripted`]).
    Scripted(scripted::Scripted),
}

impl Provider {
    /// Builds the provider from `config` and its credentials (each
    /// provider's module says which variables it takes). A missing key or
    /// endpoint is `Error::Usage` naming the variable to set.
    pub fn new(config: &ProviderConfig) -> Result<Self> {
        match config.kind {
            ProviderKind::OpenAi | ProviderKind::Ollama => {
                Ok(Provider::OpenAi(openai::OpenAiClient::new(config)?))
            }
            ProviderKind::AzureOpenAi => Ok(Provider::OpenAi(azure::client(config)?)),
            ProviderKind::Anthropic => Ok(Provider::Anthropic(anthropic::AnthropicClient::new(
                config,
            )?)),
            ProviderKind::Gemini => Ok(Provider::Gemini(gemini::GeminiClient::new(config)?)),
            ProviderKind::Bedrock => Ok(Provider::Bedrock(bedrock::BedrockClient::new(config)?)),
            ProviderKind::Echo => Ok(Provider::Echo(echo::EchoProvider)),
        }
    }

    /// One completion, with retries. Errors are `Error::Runtime` naming the
    /// provider, the URL (never the key) and what went wrong.
    /// Each call is a `model.call` span (`crate::traces`): the
    /// provider, model and agent, and the tokens it used.
    pub async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse> {
        use tracing::Instrument as _;
        let span = tracing::info_span!(
            "model.call",
            provider = self.name(),
            model = %request.model,
            agent = %request.agent,
            input_tokens = tracing::field::Empty,
            output_tokens = tracing::field::Empty,
            otel.status_code = tracing::field::Empty,
        );
        let res = match self {
            Provider::OpenAi(p) => p.complete(request).instrument(span.clone()).await,
            Provider::Anthropic(p) => p.complete(request).instrument(span.clone()).await,
            Provider::Gemini(p) => p.complete(request).instrument(span.clone()).await,
            Provider::Bedrock(p) => p.complete(request).instrument(span.clone()).await,
            Provider::Echo(p) => span.in_scope(|| Ok(p.complete(request))),
            Provider::Scripted(p) => span.in_scope(|| p.complete(request)),
        };
        match &res {
            Ok(r) => {
                span.record("input_tokens", r.usage.input_tokens);
                span.record("output_tokens", r.usage.output_tokens);
            }
            Err(_) => {
                span.record("otel.status_code", "ERROR");
            }
        }
        res
    }

    /// The provider family, as traces name it (`ollama` and `azure_openai`
    /// speak `openai`'s protocol and are named so).
    pub fn name(&self) -> &'static str {
        match self {
            Provider::OpenAi(_) => "openai",
            Provider::Anthropic(_) => "anthropic",
            Provider::Gemini(_) => "gemini",
            Provider::Bedrock(_) => "bedrock",
            Provider::Echo(_) => "echo",
            Provider::Scripted(_) => "scripted",
        }
    }
}

/// A tool call read off a provider's JSON: its `id` (else `fallback()`,
/// for providers that may omit it), `name`, and the arguments under
/// `args_key` (absent or null: `{}`).
pub(crate) fn read_tool_call(
    v: &serde_json::Value,
    args_key: &str,
    fallback: impl FnOnce() -> String,
) -> ToolCall {
    use serde_json::Value;
    let text = |key: &str| v.get(key).and_then(Value::as_str);
    ToolCall {
        id: text("id")
            .filter(|id| !id.trim().is_empty())
            .map_or_else(fallback, str::to_string),
        name: text("name").unwrap_or_default().to_string(),
        arguments: match v.get(args_key) {
            None | Some(Value::Null) => Value::Object(Default::default()),
            Some(args) => args.clone(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_shipped_provider_and_refuses_others() {
        for (name, kind) in [
            ("openai", ProviderKind::OpenAi),
            ("Ollama", ProviderKind::Ollama),
            ("anthropic", ProviderKind::Anthropic),
            (" gemini ", ProviderKind::Gemini),
            ("azure_openai", ProviderKind::AzureOpenAi),
            ("BEDROCK", ProviderKind::Bedrock),
            ("echo", ProviderKind::Echo),
        ] {
            assert_eq!(ProviderKind::parse(name).expect(name), kind);
            // The serialized name is the one specs use.
            let shown = serde_json::to_value(kind).expect("json");
            assert_eq!(shown, name.trim().to_ascii_lowercase());
        }
        let err = ProviderKind::parse("danskegpt").expect_err("unknown");
        assert!(matches!(err, Error::Unsupported(_)), "{err:?}");
        let msg = err.to_string();
        assert!(msg.contains("danskegpt"), "{msg}");
        assert!(msg.contains("azure_openai"), "{msg}");
        assert_eq!(err.exit_code(), crate::error::exit::UNSUPPORTED);
    }
}
