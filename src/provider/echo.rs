//! The offline rehearsal provider, `echo`.
//!
//! Lets a spec be run end to end (templates, gates, sessions, budgets)
//! without a network, a key or a bill: every call answers at once,
//! deterministically, with `[{agent}] {last user message}` (or a summary of
//! the trailing tool results), never calls a tool, and reports
//! approximate token usage (about four characters per token) so that budget
//! logic has something real to count.

use super::{ChatRequest, ChatResponse, Message, Usage};

/// Answers every request by echoing it; never touches the network.
#[derive(Debug, Clone, Default)]
pub struct EchoProvider;

/// Approximate tokens for `chars` characters: a quarter, rounded up.
fn approx_tokens(chars: usize) -> u64 {
    u64::try_from(chars.div_ceil(4)).unwrap_or(u64::MAX)
}

/// The text a message contributes to the input-token approximation.
fn content(m: &Message) -> &str {
    match m {
        Message::User { content }
        | Message::Assistant { content, .. }
        | Message::Tool { content, .. } => content,
    }
}

impl EchoProvider {
    /// `"[{agent}] {content of the last user message}"`, or the system
    /// prompt in place of the message when there is no user message. When
    /// the conversation ends with tool results, they are summarised instead:
    /// `"[{agent}] tool results: {name}: {content}; ..."`. Never calls tools.
    pub fn complete(&self, req: &ChatRequest) -> ChatResponse {
        let trailing_results: Vec<String> = {
            let mut results: Vec<String> = req
                .messages
                .iter()
                .rev()
                .map_while(|m| match m {
                    Message::Tool { name, content, .. } => Some(format!("{name}: {content}")),
                    _ => None,
                })
                .collect();
            results.reverse();
            results
        };
        let echoed = if trailing_results.is_empty() {
            req.messages
                .iter()
                .rev()
                .find_map(|m| match m {
                    Message::User { content } => Some(content.as_str()),
                    _ => None,
                })
                .unwrap_or(req.system.as_str())
                .to_string()
        } else {
            format!("tool results: {}", trailing_results.join("; "))
        };
        let text = format!("[{}] {}", req.agent, echoed);
        let input_chars = req.system.chars().count()
            + req
                .messages
                .iter()
                .map(|m| content(m).chars().count())
                .sum::<usize>();
        ChatResponse {
            usage: Usage {
                input_tokens: approx_tokens(input_chars),
                output_tokens: approx_tokens(text.chars().count()),
                calls: 1,
            },
            text,
            tool_calls: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::{Provider, ProviderConfig, ProviderKind, ToolCall};
    use std::time::Duration;

    fn req(system: &str, messages: Vec<Message>) -> ChatRequest {
        ChatRequest {
            agent: "planner".into(),
            model: "any".into(),
            system: system.into(),
            messages,
            temperature: None,
            top_p: None,
            max_tokens: None,
            tools: vec![],
        }
    }

    fn assistant(content: &str) -> Message {
        Message::Assistant {
            content: content.into(),
            tool_calls: vec![],
        }
    }

    fn tool(name: &str, content: &str) -> Message {
        Message::Tool {
            call_id: format!("id-{name}"),
            name: name.into(),
            content: content.into(),
            is_error: false,
        }
    }

    #[test]
    fn echoes_the_last_user_message() {
        let r = EchoProvider.complete(&req(
            "sys",
            vec![
                Message::user("first"),
                assistant("reply"),
                Message::user("second question"),
                assistant("trailing"),
            ],
        ));
        assert_eq!(r.text, "[planner] second question");
        assert!(r.tool_calls.is_empty());
        // input: 3 + 5 + 5 + 15 + 8 = 36 chars -> 9 tokens;
        // output: 25 chars -> 7 tokens.
        assert_eq!(
            r.usage,
            Usage {
                input_tokens: 9,
                output_tokens: 7,
                calls: 1
            }
        );
    }

    #[test]
    fn falls_back_to_the_system_prompt() {
        let r = EchoProvider.complete(&req("Plan the trip", vec![assistant("ok")]));
        assert_eq!(r.text, "[planner] Plan the trip");
        // 13 + 2 = 15 chars -> 4; "[planner] Plan the trip" is 23 chars -> 6.
        assert_eq!(r.usage.input_tokens, 4);
        assert_eq!(r.usage.output_tokens, 6);
    }

    #[test]
    fn summarises_trailing_tool_results() {
        let r = EchoProvider.complete(&req(
            "sys",
            vec![
                Message::user("look it up"),
                Message::Assistant {
                    content: String::new(),
                    tool_calls: vec![ToolCall {
                        id: "id-old".into(),
                        name: "old".into(),
                        arguments: serde_json::json!({}),
                    }],
                },
                tool("old", "stale"),
                assistant("and more"),
                tool("weather", "sunny"),
                Message::Tool {
                    call_id: "x".into(),
                    name: "search".into(),
                    content: "no hits".into(),
                    is_error: true,
                },
            ],
        ));
        // Only the trailing run of results, in order; never a tool call.
        assert_eq!(
            r.text,
            "[planner] tool results: weather: sunny; search: no hits"
        );
        assert!(r.tool_calls.is_empty());
        // input: 3 + 10 + 0 + 5 + 8 + 5 + 7 = 38 chars -> 10 tokens.
        assert_eq!(r.usage.input_tokens, 10);
        assert_eq!(r.usage.output_tokens, approx_tokens(r.text.chars().count()));
        // A user message after the results is echoed again.
        let r = EchoProvider.complete(&req(
            "sys",
            vec![tool("weather", "sunny"), Message::user("thanks")],
        ));
        assert_eq!(r.text, "[planner] thanks");
    }

    #[test]
    fn counts_characters_not_bytes_and_is_deterministic() {
        let a = req("", vec![Message::user("ééééé")]);
        let r1 = EchoProvider.complete(&a);
        let r2 = EchoProvider.complete(&a);
        assert_eq!(r1, r2);
        assert_eq!(r1.usage.input_tokens, 2);
        let empty = EchoProvider.complete(&req("", vec![]));
        assert_eq!(empty.text, "[planner] ");
        assert_eq!(empty.usage.input_tokens, 0);
    }

    #[tokio::test]
    async fn provider_enum_dispatches_to_echo() {
        let provider = Provider::new(&ProviderConfig {
            kind: ProviderKind::Echo,
            host: None,
            region: None,
            timeout: Duration::from_secs(1),
            retry: Default::default(),
            credentials: Default::default(),
        })
        .expect("echo needs no config");
        let r = provider
            .complete(&req("s", vec![Message::user("hi")]))
            .await
            .expect("echo never fails");
        assert_eq!(r.text, "[planner] hi");
    }
}
