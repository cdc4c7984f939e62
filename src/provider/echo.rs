//! The offline rehearsal provider, `echo`.
//!
//! Lets a spec be run end to end (templates, gates, sessions, budgets)
//! without a network, a key or a bill: every call answers at once,
//! deterministically, with `[{agent}] {last user message}`, and reports
//! approximate token usage (about four characters per token) so that budget
//! logic has something real to count.

use super::{ChatRequest, ChatResponse, Role, Usage};

/// Answers every request by echoing it; never touches the network.
#[derive(Debug, Clone, Default)]
pub struct EchoProvider;

/// Approximate tokens for `chars` characters: a quarter, rounded up.
fn approx_tokens(chars: usize) -> u64 {
    u64::try_from(chars.div_ceil(4)).unwrap_or(u64::MAX)
}

impl EchoProvider {
    /// `"[{agent}] {content of the last user message}"`, or the system
    /// prompt in place of the message when there is no user message.
    pub fn complete(&self, req: &ChatRequest) -> ChatResponse {
        let echoed = req
            .messages
            .iter()
            .rev()
            .find(|m| m.role == Role::User)
            .map_or(req.system.as_str(), |m| m.content.as_str());
        let text = format!("[{}] {}", req.agent, echoed);
        let input_chars = req.system.chars().count()
            + req
                .messages
                .iter()
                .map(|m| m.content.chars().count())
                .sum::<usize>();
        ChatResponse {
            usage: Usage {
                input_tokens: approx_tokens(input_chars),
                output_tokens: approx_tokens(text.chars().count()),
                calls: 1,
            },
            text,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::{Message, Provider, ProviderConfig, ProviderKind};
    use std::time::Duration;

    fn req(system: &str, messages: &[(Role, &str)]) -> ChatRequest {
        ChatRequest {
            agent: "planner".into(),
            model: "any".into(),
            system: system.into(),
            messages: messages
                .iter()
                .map(|(role, content)| Message {
                    role: *role,
                    content: (*content).to_string(),
                })
                .collect(),
            temperature: None,
            top_p: None,
            max_tokens: None,
        }
    }

    #[test]
    fn echoes_the_last_user_message() {
        let r = EchoProvider.complete(&req(
            "sys",
            &[
                (Role::User, "first"),
                (Role::Assistant, "reply"),
                (Role::User, "second question"),
                (Role::Assistant, "trailing"),
            ],
        ));
        assert_eq!(r.text, "[planner] second question");
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
        let r = EchoProvider.complete(&req("Plan the trip", &[(Role::Assistant, "ok")]));
        assert_eq!(r.text, "[planner] Plan the trip");
        // 13 + 2 = 15 chars -> 4; "[planner] Plan the trip" is 23 chars -> 6.
        assert_eq!(r.usage.input_tokens, 4);
        assert_eq!(r.usage.output_tokens, 6);
    }

    #[test]
    fn counts_characters_not_bytes_and_is_deterministic() {
        let a = req("", &[(Role::User, "ééééé")]);
        let r1 = EchoProvider.complete(&a);
        let r2 = EchoProvider.complete(&a);
        assert_eq!(r1, r2);
        assert_eq!(r1.usage.input_tokens, 2);
        let empty = EchoProvider.complete(&req("", &[]));
        assert_eq!(empty.text, "[planner] ");
        assert_eq!(empty.usage.input_tokens, 0);
    }

    #[tokio::test]
    async fn provider_enum_dispatches_to_echo() {
        let provider = Provider::new(&ProviderConfig {
            kind: ProviderKind::Echo,
            host: None,
            timeout: Duration::from_secs(1),
            retry: Default::default(),
        })
        .expect("echo needs no config");
        let r = provider
            .complete(&req("s", &[(Role::User, "hi")]))
            .await
            .expect("echo never fails");
        assert_eq!(r.text, "[planner] hi");
    }
}
