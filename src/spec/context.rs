//! `context_policy`, resolved: strands-cli's notes file, just-in-time
//! retrieval tools and conversation compaction, as the engine runs them.
//!
//! Validation (`validate/context.rs`) has checked every value; the engine's
//! `notes` and `compaction` modules act on them. Nothing here reads files.

use std::path::PathBuf;

/// What `context_policy` asks for; empty when the spec has none.
#[derive(Debug, Clone, Default)]
pub struct ContextPolicy {
    /// `notes`: a note appended after every agent step; the latest ones
    /// go into the next agent's system prompt.
    pub notes: Option<Notes>,
    /// `compaction` when `enabled` (its default): older turns of a long
    /// conversation are summarised by a model call.
    pub compaction: Option<Compaction>,
    /// `retrieval.jit_tools`: built-in tools every agent gets (`grep`,
    /// `head`, `tail`, `search`).
    pub jit_tools: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Notes {
    /// Relative to the directory the run starts in, without `..`.
    pub file: PathBuf,
    /// How many of the latest notes are injected (default 12).
    pub include_last: usize,
    pub format: NotesFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotesFormat {
    /// `## [time] — Agent: id (Step n)` entries.
    Markdown,
    /// One JSON object a line.
    Json,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Compaction {
    /// Compact when the conversation is estimated above this many tokens
    /// (default 60000, as strands-cli).
    pub when_tokens_over: u64,
    /// The share of older messages summarised (default 0.35).
    pub summary_ratio: f64,
    /// Messages at the end kept as they are (default 12; fewer when the
    /// conversation is short, as strands-cli does).
    pub preserve_recent_messages: usize,
    /// The model that summarises (default: the agent's own).
    pub summarization_model: Option<String>,
}
