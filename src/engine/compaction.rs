//! `context_policy.compaction`: when an agent's conversation grows past
//! `when_tokens_over`, its older messages are replaced by a summary that a
//! model call writes, as strands-cli's summarising conversation manager
//! does.
//!
//! The size is an estimate, not a tokenizer's count: characters / 4 over
//! the system prompt, every message, and tool calls' names and arguments.
//! When the estimate is over the budget before a model call, the first
//! `summary_ratio` of the messages (at least one) is summarised, keeping
//! the last `preserve_recent_messages` as they are — fewer when the
//! conversation is short (strands-cli keeps at least five summarisable
//! messages, and never fewer than three recent ones); the split never
//! separates a tool result from the call it answers. The summary comes
//! from `summarization_model` (default: the agent's model) on the same
//! provider, is counted in the agent's token usage, and becomes the first
//! message: `Summary of the earlier conversation: …`.
//!
//! Agents here start every step with a fresh conversation (strands-cli's
//! agents remember earlier steps), so what grows — and gets compacted — is
//! the conversation of one step with tools: the model's calls and the
//! tools' results.

use crate::engine::Engine;
use crate::error::Result;
use crate::model::Session;
use crate::provider::ChatRequest;
use crate::provider::Message;
use crate::provider::Provider;
use crate::spec::context::Compaction;
use crate::spec::Spec;

/// The summariser's instructions (the system prompt of its request).
pub const SUMMARY_SYSTEM: &str = "You are a helpful assistant that creates concise summaries of \
     conversation history. Preserve key facts, decisions, and context while reducing length. \
     Focus on information relevant to the ongoing task.";

/// What the summarised conversation starts with.
pub const SUMMARY_PREFIX: &str = "Summary of the earlier conversation:";

/// Estimated tokens of a conversation: characters / 4, rounded up.
pub fn estimate_tokens(system: &str, messages: &[Message]) -> u64 {
    let mut chars = system.chars().count();
    for m in messages {
        chars += match m {
            Message::User { content } => content.chars().count(),
            Message::Assistant {
                content,
                tool_calls,
            } => {
                content.chars().count()
                    + tool_calls
                        .iter()
                        .map(|c| c.name.chars().count() + c.arguments.to_string().chars().count())
                        .sum::<usize>()
            }
            Message::Tool { name, content, .. } => name.chars().count() + content.chars().count(),
        };
    }
    (chars as u64).div_ceil(4)
}

/// How many of the first messages to summarise, or `None` when nothing can
/// be (too few messages, or nothing would be left after them).
pub fn split_point(messages: &[Message], c: &Compaction) -> Option<usize> {
    let n = messages.len();
    let mut preserve = c.preserve_recent_messages;
    if n < preserve + 5 {
        preserve = n.saturating_sub(5).max(3);
    }
    let wanted = ((n as f64 * c.summary_ratio) as usize).max(1);
    let mut k = wanted.min(n.saturating_sub(preserve));
    // A tool result stays with the call it answers.
    while k < n && matches!(messages[k], Message::Tool { .. }) {
        k += 1;
    }
    (k > 0 && k < n).then_some(k)
}

/// The messages as a transcript the summariser reads.
fn transcript(messages: &[Message]) -> String {
    let mut out = String::new();
    for m in messages {
        match m {
            Message::User { content } => out.push_str(&format!("User: {content}\n\n")),
            Message::Assistant {
                content,
                tool_calls,
            } => {
                if !content.trim().is_empty() {
                    out.push_str(&format!("Assistant: {content}\n\n"));
                }
                for c in tool_calls {
                    out.push_str(&format!(
                        "Assistant called tool `{}` with {}\n\n",
                        c.name, c.arguments
                    ));
                }
            }
            Message::Tool {
                name,
                content,
                is_error,
                ..
            } => {
                let what = if *is_error { "error" } else { "result" };
                out.push_str(&format!("Tool `{name}` {what}: {content}\n\n"));
            }
        }
    }
    out
}

impl Engine<'_> {
    /// Compacts the conversation of the tool step in `session` when it is
    /// over the budget. `model` is the agent's model.
    pub(super) async fn compact(
        &mut self,
        spec: &Spec,
        session: &mut Session,
        provider: &Provider,
        model: &str,
        policy: &Compaction,
    ) -> Result<()> {
        let Some(turn) = session.agent_turn.as_ref() else {
            return Ok(());
        };
        let before = estimate_tokens(&turn.system, &turn.messages);
        if before <= policy.when_tokens_over {
            return Ok(());
        }
        let Some(k) = split_point(&turn.messages, policy) else {
            return Ok(());
        };
        Self::check_budget(spec, session)?;
        let agent = turn.agent.clone();
        let request = ChatRequest {
            agent: agent.clone(),
            model: policy
                .summarization_model
                .clone()
                .unwrap_or_else(|| model.to_string()),
            system: SUMMARY_SYSTEM.to_string(),
            messages: vec![Message::user(format!(
                "Summarize the following conversation between a user, an assistant and its \
                 tools. Keep every fact, number, decision and open question the assistant \
                 needs to finish its task; drop repetition. Answer with the summary only.\n\n{}",
                transcript(&turn.messages[..k])
            ))],
            temperature: Some(0.3),
            top_p: None,
            max_tokens: None,
            tools: Vec::new(),
        };
        let resp = provider.complete(&request).await?;
        session
            .usage
            .entry(agent.clone())
            .or_default()
            .add(resp.usage);
        let Some(turn) = session.agent_turn.as_mut() else {
            return Ok(());
        };
        let mut kept = vec![Message::user(format!(
            "{SUMMARY_PREFIX}\n{}",
            resp.text.trim()
        ))];
        kept.extend(turn.messages.drain(k..));
        turn.messages = kept;
        let after = estimate_tokens(&turn.system, &turn.messages);
        tracing::info!(
            agent = %agent,
            summarised = k,
            tokens_before = before,
            tokens_after = after,
            budget = policy.when_tokens_over,
            "conversation compacted"
        );
        self.save(session).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ToolCall;
    use serde_json::json;

    fn policy(ratio: f64, preserve: usize) -> Compaction {
        Compaction {
            when_tokens_over: 1000,
            summary_ratio: ratio,
            preserve_recent_messages: preserve,
            summarization_model: None,
        }
    }

    fn tool_round(i: usize) -> [Message; 2] {
        [
            Message::Assistant {
                content: String::new(),
                tool_calls: vec![ToolCall {
                    id: format!("c{i}"),
                    name: "file_read".into(),
                    arguments: json!({"path": "a"}),
                }],
            },
            Message::Tool {
                call_id: format!("c{i}"),
                name: "file_read".into(),
                content: "x".repeat(100),
                is_error: false,
            },
        ]
    }

    fn conversation(rounds: usize) -> Vec<Message> {
        let mut m = vec![Message::user("start")];
        for i in 0..rounds {
            m.extend(tool_round(i));
        }
        m
    }

    #[test]
    fn estimates_are_characters_over_four() {
        assert_eq!(estimate_tokens("abcd", &[Message::user("efgh")]), 2);
        assert_eq!(estimate_tokens("", &[Message::user("a")]), 1);
        let m = conversation(1);
        assert!(estimate_tokens("", &m) > 25, "tool results count");
    }

    #[test]
    fn splits_never_orphan_a_tool_result() {
        // 1 + 2×10 = 21 messages; half is 10, a tool result: move on to 11.
        let m = conversation(10);
        let k = split_point(&m, &policy(0.5, 4)).expect("a split");
        assert_eq!(k, 11);
        assert!(matches!(m[k], Message::Assistant { .. }));
        // The recent messages are kept even when the ratio asks for more.
        let k = split_point(&m, &policy(1.0, 6)).expect("a split");
        assert_eq!(k, 15);
        // Too short to summarise anything.
        assert_eq!(split_point(&conversation(1), &policy(0.5, 12)), None);
        // Short conversations keep fewer recent messages (at least 3).
        let m = conversation(2);
        assert_eq!(split_point(&m, &policy(0.5, 12)), Some(3));
    }

    #[test]
    fn transcripts_name_calls_and_results() {
        let t = transcript(&conversation(1));
        assert!(t.starts_with("User: start\n\n"), "{t}");
        assert!(
            t.contains("Assistant called tool `file_read` with {\"path\":\"a\"}"),
            "{t}"
        );
        assert!(t.contains("Tool `file_read` result: xxx"), "{t}");
    }
}
