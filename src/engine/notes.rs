//! `context_policy.notes`: a notes file, relative to the directory the run
//! started in (strands-cli's working directory; `./artifacts/notes.md`
//! lands next to the artifacts of the default `--out`).
//! After every agent step a note is appended — when, which agent, the
//! step's number in the run, its input, the tools it called, its outcome —
//! and the latest `include_last` notes go into the system prompt of the
//! next agent, under `# Previous Workflow Steps`, as strands-cli does.
//!
//! Markdown notes are strands-cli's entries:
//!
//! ```text
//! ## [2025-11-07T14:32:00Z] — Agent: researcher (Step 1)
//! - **Input**: Research the topic: remote work
//! - **Tools used**: http_request
//! - **Outcome**: Found three studies …
//! ```
//!
//! (input and outcome on one line, cut at 200 characters); `format: json`
//! writes one JSON object a line instead. "Tools used" lists the tools the
//! step called (strands-cli lists the agent's tools).
//!
//! Notes help the model; they are not the run's record. Writing or reading
//! them never fails a step: a problem is logged and the run goes on. The
//! file is opened through a directory handle on that directory, so a
//! symbolic link cannot lead a note outside it. A note is written after
//! the step's result is saved: a process that dies in between loses that
//! one note, and never writes one twice.

use std::io::{Read, Seek, SeekFrom, Write};

use cap_std::ambient_authority;
use cap_std::fs::{Dir, OpenOptions};
use serde_json::json;

use super::*;
use crate::spec::context::{Notes, NotesFormat};

/// Characters of a step's input and outcome kept in a note.
const NOTE_CHARS: usize = 200;
/// The end of the notes file read to find the latest notes, at most.
const READ_TAIL: u64 = 1 << 20;

/// One agent step, for its note.
pub(super) struct StepNote<'a> {
    pub agent: &'a str,
    pub input: &'a str,
    pub tools: Vec<String>,
    pub outcome: &'a str,
}

/// The directory notes paths are relative to: where the run started.
fn base_dir(session: &Session) -> std::io::Result<Dir> {
    let dir = session.work_dir.as_deref().unwrap_or(".");
    Dir::open_ambient_dir(dir, ambient_authority())
}

/// `text` on one line, at most [`NOTE_CHARS`] characters, `...` marking a cut.
fn one_line(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > NOTE_CHARS {
        let cut: String = flat.chars().take(NOTE_CHARS).collect();
        format!("{cut}...")
    } else {
        flat
    }
}

/// One note as written to the file (a trailing blank line for markdown).
fn entry(notes: &Notes, at: &str, step: usize, n: &StepNote<'_>) -> String {
    match notes.format {
        NotesFormat::Json => {
            let v = json!({
                "timestamp": at,
                "agent": n.agent,
                "step": step,
                "input": one_line(n.input),
                "tools_used": n.tools,
                "outcome": one_line(n.outcome),
            });
            format!("{v}\n")
        }
        NotesFormat::Markdown => {
            let tools = if n.tools.is_empty() {
                "None".to_string()
            } else {
                n.tools.join(", ")
            };
            format!(
                "## [{at}] — Agent: {} (Step {step})\n- **Input**: {}\n- **Tools used**: {tools}\n- **Outcome**: {}\n\n",
                n.agent,
                one_line(n.input),
                one_line(n.outcome)
            )
        }
    }
}

/// The latest `n` notes of `text` (the end of a notes file), as injected.
fn latest(text: &str, n: usize, format: NotesFormat) -> String {
    let entries: Vec<String> = match format {
        NotesFormat::Json => text
            .lines()
            .filter(|l| l.trim_start().starts_with('{'))
            .map(str::to_string)
            .collect(),
        NotesFormat::Markdown => {
            let mut entries: Vec<String> = Vec::new();
            for line in text.lines() {
                if line.starts_with("## ") {
                    entries.push(String::new());
                }
                if let Some(e) = entries.last_mut() {
                    e.push_str(line);
                    e.push('\n');
                }
            }
            entries.into_iter().map(|e| e.trim().to_string()).collect()
        }
    };
    let from = entries.len().saturating_sub(n);
    entries[from..].join(if format == NotesFormat::Json {
        "\n"
    } else {
        "\n\n"
    })
}

fn read_latest(session: &Session, notes: &Notes) -> std::io::Result<String> {
    let dir = base_dir(session)?;
    let mut file = match dir.open(&notes.file) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(String::new()),
        Err(e) => return Err(e),
    };
    let len = file.metadata()?.len();
    file.seek(SeekFrom::Start(len.saturating_sub(READ_TAIL)))?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    Ok(latest(
        &String::from_utf8_lossy(&bytes),
        notes.include_last,
        notes.format,
    ))
}

fn append(session: &Session, notes: &Notes, text: &str) -> std::io::Result<()> {
    let dir = base_dir(session)?;
    if let Some(parent) = notes.file.parent().filter(|p| !p.as_os_str().is_empty()) {
        dir.create_dir_all(parent)?;
    }
    let mut options = OpenOptions::new();
    options.create(true).append(true);
    let mut file = dir.open_with(&notes.file, &options)?;
    file.write_all(text.as_bytes())?;
    file.flush()
}

/// `system` with the latest notes under `# Previous Workflow Steps`, when
/// the spec keeps notes and there are some.
pub(super) fn with_notes(spec: &Spec, session: &Session, system: String) -> String {
    let Some(notes) = &spec.context.notes else {
        return system;
    };
    match read_latest(session, notes) {
        Ok(latest) if !latest.is_empty() => {
            format!("{system}\n\n# Previous Workflow Steps\n{latest}")
        }
        Ok(_) => system,
        Err(e) => {
            tracing::warn!(file = %notes.file.display(), "cannot read the notes file: {e}");
            system
        }
    }
}

/// Appends the note of a step just recorded in `session`.
/// `at`: when it finished.
pub(super) fn note_step(
    spec: &Spec,
    session: &Session,
    at: chrono::DateTime<chrono::Utc>,
    note: StepNote<'_>,
) {
    let Some(notes) = &spec.context.notes else {
        return;
    };
    // The step's number in the run: agent steps finished so far, this one included.
    let step = pattern::agent_records(&session.state).len();
    let at = at.format("%Y-%m-%dT%H:%M:%SZ").to_string();
    if let Err(e) = append(session, notes, &entry(notes, &at, step, &note)) {
        tracing::warn!(file = %notes.file.display(), "cannot append to the notes file: {e}");
    }
}

/// The distinct tools called in a conversation, in order.
pub(super) fn tools_called(messages: &[Message]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for m in messages {
        if let Message::Assistant { tool_calls, .. } = m {
            for c in tool_calls {
                if !out.contains(&c.name) {
                    out.push(c.name.clone());
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn notes(format: NotesFormat) -> Notes {
        Notes {
            file: "artifacts/notes.md".into(),
            include_last: 2,
            format,
        }
    }

    #[test]
    fn markdown_entries_round_trip() {
        let n = notes(NotesFormat::Markdown);
        let mut file = String::new();
        for (i, agent) in ["a", "b", "c"].iter().enumerate() {
            file.push_str(&entry(
                &n,
                "2025-11-07T14:32:00Z",
                i + 1,
                &StepNote {
                    agent,
                    input: "line one\nline two",
                    tools: if i == 1 { vec!["grep".into()] } else { vec![] },
                    outcome: &"z".repeat(300),
                },
            ));
        }
        assert!(file.starts_with(
            "## [2025-11-07T14:32:00Z] — Agent: a (Step 1)\n- **Input**: line one line two\n- **Tools used**: None\n- **Outcome**: zzz"
        ), "{file}");
        assert!(
            file.contains(&format!("{}...\n\n## [", "z".repeat(200))),
            "{file}"
        );
        let last = latest(&file, 2, NotesFormat::Markdown);
        assert!(
            last.starts_with("## [2025-11-07T14:32:00Z] — Agent: b (Step 2)"),
            "{last}"
        );
        assert!(last.contains("- **Tools used**: grep"), "{last}");
        assert!(
            last.contains("\n\n## [2025-11-07T14:32:00Z] — Agent: c (Step 3)"),
            "{last}"
        );
        assert!(!last.contains("Agent: a"), "{last}");
    }

    #[test]
    fn json_entries_are_lines() {
        let n = notes(NotesFormat::Json);
        let line = entry(
            &n,
            "t",
            4,
            &StepNote {
                agent: "w",
                input: "in",
                tools: vec![],
                outcome: "out",
            },
        );
        let v: serde_json::Value = serde_json::from_str(line.trim()).expect("json");
        assert_eq!(v["step"], 4);
        assert_eq!(v["agent"], "w");
        assert_eq!(
            latest(&format!("{line}{line}{line}"), 2, NotesFormat::Json)
                .lines()
                .count(),
            2
        );
    }
}
