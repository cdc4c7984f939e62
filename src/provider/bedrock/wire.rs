//! [`ChatRequest`] to the Converse API's input types and the output back to
//! [`ChatResponse`], kept apart from the client so that the translation is
//! tested without a network.
//!
//! Converse follows Anthropic's shape: the system prompt is its own list,
//! a turn is a list of content blocks, a model's tool calls are `toolUse`
//! blocks, and the results of one turn's calls travel together as
//! `toolResult` blocks of the single user turn after it. Tool arguments
//! and schemas are Smithy `Document`s, converted from and to JSON here.

use std::collections::HashMap;

use aws_sdk_bedrockruntime::operation::converse::ConverseOutput;
use aws_sdk_bedrockruntime::types::{
    ContentBlock, ConversationRole, ConverseOutput as Output, InferenceConfiguration,
    Message as WireMessage, StopReason, SystemContentBlock, Tool, ToolConfiguration,
    ToolInputSchema, ToolResultBlock, ToolResultContentBlock, ToolResultStatus, ToolSpecification,
    ToolUseBlock,
};
use aws_smithy_types::{Document, Number};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::provider::{ChatRequest, ChatResponse, Message, ToolCall, Usage};

/// Everything of a Converse call but the model id, built once per call and
/// cloned into each attempt.
#[derive(Debug, Clone, PartialEq)]
pub struct Input {
    pub system: Option<Vec<SystemContentBlock>>,
    pub messages: Vec<WireMessage>,
    pub tool_config: Option<ToolConfiguration>,
    pub inference: Option<InferenceConfiguration>,
}

/// Whether `model` takes a `status` on tool results: Converse documents
/// it for Anthropic Claude and Amazon Nova models only, and others may
/// refuse it. Elsewhere a failed call's text is marked `Error: ` instead.
pub fn takes_tool_status(model: &str) -> bool {
    let model = model.to_ascii_lowercase();
    model.contains("anthropic") || model.contains("nova")
}

fn build_error(what: &str, e: impl std::fmt::Display) -> Error {
    Error::Runtime(format!("bedrock: could not build the {what}: {e}"))
}

/// The Converse input for `request`.
pub fn input(request: &ChatRequest) -> Result<Input> {
    let system = Some(request.system.trim())
        .filter(|s| !s.is_empty())
        .map(|_| vec![SystemContentBlock::Text(request.system.clone())]);
    let tool_config = if request.tools.is_empty() {
        None
    } else {
        let tools = request
            .tools
            .iter()
            .map(|t| {
                ToolSpecification::builder()
                    .name(&t.name)
                    .description(&t.description)
                    .input_schema(ToolInputSchema::Json(to_document(&t.parameters)))
                    .build()
                    .map(Tool::ToolSpec)
                    .map_err(|e| build_error("tool list", e))
            })
            .collect::<Result<Vec<_>>>()?;
        Some(
            ToolConfiguration::builder()
                .set_tools(Some(tools))
                .build()
                .map_err(|e| build_error("tool list", e))?,
        )
    };
    let inference =
        (request.max_tokens.is_some() || request.temperature.is_some() || request.top_p.is_some())
            .then(|| {
                InferenceConfiguration::builder()
                    .set_max_tokens(
                        request
                            .max_tokens
                            .map(|n| i32::try_from(n).unwrap_or(i32::MAX)),
                    )
                    // The API takes 32-bit floats.
                    .set_temperature(request.temperature.map(|t| t as f32))
                    .set_top_p(request.top_p.map(|p| p as f32))
                    .build()
            });
    Ok(Input {
        system,
        messages: messages(&request.messages, takes_tool_status(&request.model))?,
        tool_config,
        inference,
    })
}

/// Maps the conversation onto Converse turns. An assistant turn is its
/// text (when non-empty: Converse refuses empty text blocks) and one
/// `toolUse` block per call; a run of consecutive tool results becomes ONE
/// user turn of `toolResult` blocks.
fn messages(conversation: &[Message], with_status: bool) -> Result<Vec<WireMessage>> {
    // Turns as (role, blocks, made of tool results), built before the
    // SDK's messages since a turn of results grows as results come.
    let mut turns: Vec<(ConversationRole, Vec<ContentBlock>, bool)> = Vec::new();
    for m in conversation {
        match m {
            Message::User { content } => turns.push((
                ConversationRole::User,
                vec![ContentBlock::Text(content.clone())],
                false,
            )),
            Message::Assistant {
                content,
                tool_calls,
            } => {
                let mut blocks = Vec::with_capacity(tool_calls.len() + 1);
                if !content.is_empty() || tool_calls.is_empty() {
                    blocks.push(ContentBlock::Text(content.clone()));
                }
                for call in tool_calls {
                    blocks.push(ContentBlock::ToolUse(
                        ToolUseBlock::builder()
                            .tool_use_id(&call.id)
                            .name(&call.name)
                            .input(to_document(&call.arguments))
                            .build()
                            .map_err(|e| build_error("conversation", e))?,
                    ));
                }
                turns.push((ConversationRole::Assistant, blocks, false));
            }
            Message::Tool {
                call_id,
                content,
                is_error,
                ..
            } => {
                let text = if *is_error && !with_status {
                    format!("Error: {content}")
                } else {
                    content.clone()
                };
                let status = with_status.then_some(if *is_error {
                    ToolResultStatus::Error
                } else {
                    ToolResultStatus::Success
                });
                let block = ContentBlock::ToolResult(
                    ToolResultBlock::builder()
                        .tool_use_id(call_id)
                        .content(ToolResultContentBlock::Text(text))
                        .set_status(status)
                        .build()
                        .map_err(|e| build_error("conversation", e))?,
                );
                match turns.last_mut() {
                    Some((_, blocks, true)) => blocks.push(block),
                    _ => turns.push((ConversationRole::User, vec![block], true)),
                }
            }
        }
    }
    turns
        .into_iter()
        .map(|(role, blocks, _)| {
            WireMessage::builder()
                .role(role)
                .set_content(Some(blocks))
                .build()
                .map_err(|e| build_error("conversation", e))
        })
        .collect()
}

/// The text blocks of the answer, joined, its `toolUse` blocks as tool
/// calls, and the token counts (prompt-cache reads and writes are input
/// tokens too). A stop by a guardrail or content filter with nothing said
/// is an `Error::Runtime` naming the reason; other early stops are logged.
pub fn response(url: &str, output: &ConverseOutput) -> Result<ChatResponse> {
    let stop = output.stop_reason();
    let blocks: &[ContentBlock] = match output.output() {
        Some(Output::Message(m)) => &m.content,
        _ => &[],
    };
    let text: String = blocks
        .iter()
        .filter_map(|b| b.as_text().ok())
        .map(String::as_str)
        .collect();
    let tool_calls: Vec<ToolCall> = blocks
        .iter()
        .filter_map(|b| b.as_tool_use().ok())
        .enumerate()
        .map(|(index, t)| ToolCall {
            id: Some(t.tool_use_id.as_str())
                .filter(|id| !id.trim().is_empty())
                .map_or_else(|| format!("call_{index}"), str::to_string),
            name: t.name.clone(),
            arguments: match to_json(&t.input) {
                Value::Null => Value::Object(Default::default()),
                other => other,
            },
        })
        .collect();
    match stop {
        StopReason::EndTurn | StopReason::ToolUse | StopReason::StopSequence => {}
        StopReason::GuardrailIntervened | StopReason::ContentFiltered
            if text.is_empty() && tool_calls.is_empty() =>
        {
            return Err(Error::Runtime(format!(
                "bedrock: {url} stopped the answer ({})",
                stop.as_str()
            )));
        }
        other => tracing::warn!(
            provider = "bedrock",
            stop_reason = other.as_str(),
            "the model stopped early"
        ),
    }
    let usage = output.usage();
    let count = |n: Option<i32>| n.and_then(|n| u64::try_from(n).ok()).unwrap_or(0);
    Ok(ChatResponse {
        text,
        tool_calls,
        usage: Usage {
            input_tokens: count(usage.map(|u| u.input_tokens))
                + count(usage.and_then(|u| u.cache_read_input_tokens))
                + count(usage.and_then(|u| u.cache_write_input_tokens)),
            output_tokens: count(usage.map(|u| u.output_tokens)),
            calls: 1,
        },
    })
}

/// JSON as a Smithy document.
pub fn to_document(value: &Value) -> Document {
    match value {
        Value::Null => Document::Null,
        Value::Bool(b) => Document::Bool(*b),
        Value::Number(n) => Document::Number(match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => Number::PosInt(u),
            (None, Some(i)) => Number::NegInt(i),
            (None, None) => Number::Float(n.as_f64().unwrap_or_default()),
        }),
        Value::String(s) => Document::String(s.clone()),
        Value::Array(items) => Document::Array(items.iter().map(to_document).collect()),
        Value::Object(map) => Document::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), to_document(v)))
                .collect::<HashMap<_, _>>(),
        ),
    }
}

/// A Smithy document as JSON (a float JSON cannot hold, NaN or infinite,
/// becomes null).
pub fn to_json(document: &Document) -> Value {
    match document {
        Document::Null => Value::Null,
        Document::Bool(b) => Value::Bool(*b),
        Document::Number(Number::PosInt(u)) => Value::from(*u),
        Document::Number(Number::NegInt(i)) => Value::from(*i),
        Document::Number(Number::Float(f)) => serde_json::Number::from_f64(*f)
            .map(Value::Number)
            .unwrap_or(Value::Null),
        Document::String(s) => Value::String(s.clone()),
        Document::Array(items) => Value::Array(items.iter().map(to_json).collect()),
        Document::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), to_json(v))).collect())
        }
    }
}
