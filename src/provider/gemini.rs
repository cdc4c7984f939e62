//! The Google Gemini client (the Generative Language REST API), for the
//! `gemini` provider.
//!
//! Gemini speaks neither Chat Completions nor Messages: a conversation is a
//! list of `contents` with `user` / `model` roles, each made of `parts`
//! (`text`, `functionCall`, `functionResponse`); the system prompt is a
//! separate `systemInstruction`; tools are `functionDeclarations`; sampling
//! settings sit in `generationConfig`; token counts come back in
//! `usageMetadata`. This module maps [`ChatRequest`] onto
//! `POST {base}/v1beta/models/{model}:generateContent` and back.
//!
//! Settings: the base URL is `runtime.host`, else `GEMINI_BASE_URL`, else
//! the public API (a base that already ends in an API version such as
//! `/v1beta` is used as it is); the key is `GOOGLE_API_KEY`, else
//! `GEMINI_API_KEY` (strands-cli's order), sent in `x-goog-api-key` and
//! never in the URL.
//!
//! Not done: streaming, thinking settings, and keeping Gemini 3's thought
//! signatures across turns. Replayed function calls carry Google's
//! documented `skip_thought_signature_validator` instead, as the Strands
//! Agents SDK that strands-cli runs on does.

use reqwest::header::HeaderValue;
use serde::Serialize;
use serde_json::Value;

use super::openai::key_header;
use super::retry;
use super::{ChatRequest, ChatResponse, Message, ProviderConfig, Usage};
use crate::error::{Error, Result};
use crate::retry::RetryPolicy;

const DEFAULT_BASE: &str = "https://generativelanguage.googleapis.com";
/// Appended to a base URL that does not name an API version itself.
const API_VERSION: &str = "v1beta";
/// The signature Google documents for function calls replayed without the
/// one the model gave (Gemini 3 refuses unsigned calls otherwise).
pub const SKIP_SIGNATURE: &str = "skip_thought_signature_validator";

/// A Generative Language API client. `Debug` never prints the key.
#[derive(Clone)]
pub struct GeminiClient {
    http: reqwest::Client,
    /// Ends with the API version, no trailing slash.
    base_url: String,
    api_key: HeaderValue,
    retry: RetryPolicy,
}

impl std::fmt::Debug for GeminiClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GeminiClient")
            .field("base_url", &self.base_url)
            .field("api_key", &"<redacted>")
            .field("retry", &self.retry)
            .finish()
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct WireRequest<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    system_instruction: Option<WireContent<'a>>,
    contents: Vec<WireContent<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTools<'a>>,
    #[serde(skip_serializing_if = "GenerationConfig::is_empty")]
    generation_config: GenerationConfig,
}

#[derive(Serialize)]
struct WireContent<'a> {
    /// `user` or `model`; absent for the system instruction.
    #[serde(skip_serializing_if = "Option::is_none")]
    role: Option<&'static str>,
    parts: Vec<WirePart<'a>>,
}

/// One part: exactly one of `text`, `functionCall`, `functionResponse`.
#[derive(Serialize, Default)]
#[serde(rename_all = "camelCase")]
struct WirePart<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    function_call: Option<FunctionCall<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    function_response: Option<FunctionResponse<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thought_signature: Option<&'static str>,
}

impl<'a> WirePart<'a> {
    fn text(text: &'a str) -> Self {
        WirePart {
            text: Some(text),
            ..WirePart::default()
        }
    }
}

#[derive(Serialize)]
struct FunctionCall<'a> {
    id: &'a str,
    name: &'a str,
    args: &'a Value,
}

#[derive(Serialize)]
struct FunctionResponse<'a> {
    id: &'a str,
    name: &'a str,
    /// `{"output": …}`, or `{"error": …}` for a failed call: the keys
    /// Google documents for a function's result.
    response: Value,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct WireTools<'a> {
    function_declarations: Vec<FunctionDeclaration<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct FunctionDeclaration<'a> {
    name: &'a str,
    description: &'a str,
    /// Full JSON Schema (the `parameters` field takes only an OpenAPI
    /// subset, which MCP tools' schemas often exceed).
    parameters_json_schema: &'a Value,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct GenerationConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_p: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_output_tokens: Option<u32>,
}

impl GenerationConfig {
    fn is_empty(&self) -> bool {
        self.temperature.is_none() && self.top_p.is_none() && self.max_output_tokens.is_none()
    }
}

impl GeminiClient {
    /// Builds the client from the spec's settings and its credentials
    /// (`GEMINI_BASE_URL`, `GOOGLE_API_KEY`, `GEMINI_API_KEY`; empty values
    /// count as unset). A missing key is `Error::Usage`.
    pub fn new(config: &ProviderConfig) -> Result<Self> {
        Self::with_env(config, |name| config.credentials.get(name))
    }

    /// [`GeminiClient::new`] with the environment given as a lookup function.
    fn with_env(config: &ProviderConfig, env: impl Fn(&str) -> Option<String>) -> Result<Self> {
        let env = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        let host = config.host.as_deref().filter(|h| !h.trim().is_empty());
        let (origin, base) = match (host, env("GEMINI_BASE_URL")) {
            (Some(h), _) => ("runtime.host", h.to_string()),
            (None, Some(b)) => ("GEMINI_BASE_URL", b),
            (None, None) => ("the default", DEFAULT_BASE.to_string()),
        };
        let base = retry::normalize_base_url("gemini", origin, &base)?;
        let last = base.rsplit('/').next().unwrap_or_default();
        let versioned = last.len() > 1
            && last.starts_with('v')
            && last[1..].starts_with(|c: char| c.is_ascii_digit());
        let base_url = if versioned {
            base
        } else {
            format!("{base}/{API_VERSION}")
        };
        let (variable, key) = match (env("GOOGLE_API_KEY"), env("GEMINI_API_KEY")) {
            (Some(k), _) => ("GOOGLE_API_KEY", k),
            (None, Some(k)) => ("GEMINI_API_KEY", k),
            (None, None) => {
                return Err(Error::Usage(
                    "GOOGLE_API_KEY (or GEMINI_API_KEY) is not set: export it to use provider \
                     `gemini`, or use provider `echo` for an offline rehearsal"
                        .to_string(),
                ))
            }
        };
        Ok(GeminiClient {
            http: retry::http_client("gemini", config.timeout)?,
            base_url,
            api_key: key_header(variable, key.trim())?,
            retry: config.retry,
        })
    }

    /// The URL a request for `model` is posted to (`models/` in front of
    /// the model id is allowed, as Google's own names carry it).
    fn url(&self, model: &str) -> Result<reqwest::Url> {
        let model = model.trim().trim_start_matches("models/");
        let mut url = reqwest::Url::parse(&self.base_url).map_err(|e| {
            Error::Internal(format!(
                "gemini: base URL {} stopped parsing: {e}",
                self.base_url
            ))
        })?;
        url.path_segments_mut()
            .map_err(|()| Error::Internal(format!("gemini: {} has no path", self.base_url)))?
            .extend(["models", &format!("{model}:generateContent")]);
        Ok(url)
    }

    /// One generateContent call, retried per the policy.
    pub async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse> {
        let url = self.url(&request.model)?;
        let shown_url = retry::redact_url(&url);
        let body = wire_request(request);
        tracing::debug!(
            provider = "gemini",
            agent = %request.agent,
            model = %request.model,
            url = %shown_url,
            "calling model"
        );
        let response = retry::send_with_retry(&self.retry, "gemini", || {
            self.http
                .post(url.clone())
                .header("x-goog-api-key", self.api_key.clone())
                .json(&body)
        })
        .await?;
        let (json, raw) = retry::read_json("gemini", &shown_url, response).await?;
        parse_response(&shown_url, &json, &raw, turn_number(&request.messages))
    }
}

/// How many model turns the conversation already has: part of the ids
/// given to function calls that come without one, so that ids stay unique
/// within an agent step.
fn turn_number(messages: &[Message]) -> usize {
    messages
        .iter()
        .filter(|m| matches!(m, Message::Assistant { .. }))
        .count()
}

fn wire_request(request: &ChatRequest) -> WireRequest<'_> {
    let system_instruction = Some(request.system.as_str())
        .filter(|s| !s.trim().is_empty())
        .map(|s| WireContent {
            role: None,
            parts: vec![WirePart::text(s)],
        });
    let tools = if request.tools.is_empty() {
        Vec::new()
    } else {
        vec![WireTools {
            function_declarations: request
                .tools
                .iter()
                .map(|t| FunctionDeclaration {
                    name: &t.name,
                    description: &t.description,
                    parameters_json_schema: &t.parameters,
                })
                .collect(),
        }]
    };
    WireRequest {
        system_instruction,
        contents: wire_contents(&request.messages),
        tools,
        generation_config: GenerationConfig {
            temperature: request.temperature,
            top_p: request.top_p,
            max_output_tokens: request.max_tokens,
        },
    }
}

/// Maps the conversation onto `contents`. An assistant turn is a `model`
/// turn of its text (when non-empty) and one `functionCall` part per call;
/// a run of consecutive tool results becomes ONE `user` turn of
/// `functionResponse` parts, answering the calls of the turn before it.
fn wire_contents(messages: &[Message]) -> Vec<WireContent<'_>> {
    let mut out: Vec<WireContent<'_>> = Vec::with_capacity(messages.len());
    // Whether the last turn pushed is made of function responses.
    let mut in_results = false;
    for m in messages {
        match m {
            Message::User { content } => {
                in_results = false;
                out.push(WireContent {
                    role: Some("user"),
                    parts: vec![WirePart::text(content)],
                });
            }
            Message::Assistant {
                content,
                tool_calls,
            } => {
                in_results = false;
                let mut parts = Vec::with_capacity(tool_calls.len() + 1);
                if !content.is_empty() || tool_calls.is_empty() {
                    parts.push(WirePart::text(content));
                }
                parts.extend(tool_calls.iter().map(|call| WirePart {
                    function_call: Some(FunctionCall {
                        id: &call.id,
                        name: &call.name,
                        args: &call.arguments,
                    }),
                    thought_signature: Some(SKIP_SIGNATURE),
                    ..WirePart::default()
                }));
                out.push(WireContent {
                    role: Some("model"),
                    parts,
                });
            }
            Message::Tool {
                call_id,
                name,
                content,
                is_error,
            } => {
                let key = if *is_error { "error" } else { "output" };
                let mut response = serde_json::Map::new();
                response.insert(key.to_string(), Value::String(content.clone()));
                let part = WirePart {
                    function_response: Some(FunctionResponse {
                        id: call_id,
                        name,
                        response: Value::Object(response),
                    }),
                    ..WirePart::default()
                };
                match out.last_mut() {
                    Some(turn) if in_results => turn.parts.push(part),
                    _ => {
                        in_results = true;
                        out.push(WireContent {
                            role: Some("user"),
                            parts: vec![part],
                        });
                    }
                }
            }
        }
    }
    out
}

/// The text parts of the first candidate, joined (thought summaries left
/// out), its `functionCall` parts as tool calls, and the token counts
/// (thinking tokens are output tokens). `turn` numbers the ids of calls
/// that come without one: `call_{turn}_{index}`. A response without a
/// candidate (a blocked prompt) or whose candidate has no content is an
/// `Error::Runtime` naming the reason Google gave.
fn parse_response(url: &str, json: &Value, raw: &str, turn: usize) -> Result<ChatResponse> {
    let Some(candidate) = json
        .get("candidates")
        .and_then(Value::as_array)
        .and_then(|c| c.first())
    else {
        let reason = json
            .pointer("/promptFeedback/blockReason")
            .and_then(Value::as_str);
        return Err(Error::Runtime(match reason {
            Some(reason) => format!("gemini: {url} blocked the prompt ({reason})"),
            None => format!(
                "gemini: the response from {url} has no candidates: {}",
                retry::excerpt(raw)
            ),
        }));
    };
    let finish = candidate
        .get("finishReason")
        .and_then(Value::as_str)
        .unwrap_or("STOP");
    let Some(parts) = candidate
        .pointer("/content/parts")
        .and_then(Value::as_array)
    else {
        return Err(Error::Runtime(format!(
            "gemini: the answer from {url} has no content (finishReason {finish}): {}",
            retry::excerpt(raw)
        )));
    };
    if finish != "STOP" {
        tracing::warn!(
            provider = "gemini",
            finish_reason = finish,
            "the model stopped early"
        );
    }
    let text: String = parts
        .iter()
        .filter(|p| p.get("thought").and_then(Value::as_bool) != Some(true))
        .filter_map(|p| p.get("text").and_then(Value::as_str))
        .collect();
    let tool_calls = parts
        .iter()
        .filter_map(|p| p.get("functionCall"))
        .enumerate()
        .map(|(index, call)| super::read_tool_call(call, "args", || format!("call_{turn}_{index}")))
        .collect();
    let count = |field: &str| {
        json.get("usageMetadata")
            .and_then(|u| u.get(field))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    Ok(ChatResponse {
        text,
        tool_calls,
        usage: Usage {
            input_tokens: count("promptTokenCount") + count("toolUsePromptTokenCount"),
            output_tokens: count("candidatesTokenCount") + count("thoughtsTokenCount"),
            calls: 1,
        },
    })
}

#[cfg(test)]
mod tests;
