//! Large texts of a session kept apart from its record, so a checkpoint
//! does not rewrite them.
//!
//! A session is written after every step, and it carries every step's
//! output (agent replies, gate answers, tool results, the final output)
//! until it ends. Stored inline, a 20 KB draft would be rewritten by every
//! later checkpoint of the run, and read with the session by everything
//! that only needs its status and gates. Instead, on the way to disk every
//! JSON string of the session longer than [`THRESHOLD`] bytes is replaced
//! by a reference (`\0out:` ++ its SHA-256 in hex), and the text is stored
//! once per session under that hash ([`Stored::outputs`]; the backends key
//! it by session id + hash, so deleting a session drops its texts). A
//! checkpoint writes a text only when that key is not stored yet:
//! content-addressed, the same key always holds the same bytes, so a text
//! written before a session write that then failed is harmless. Reading
//! puts the texts back ([`parse`], [`Parsed::fill`]); a session written
//! before this (texts inline) reads as it is and loses the copies at its
//! next write. A text no longer referred to (the tool results of a step
//! that has finished) stays until its session is deleted: the texts one run
//! produced, never more.
//!
//! The walk is over the session's JSON, not its fields, so every pattern's
//! state (chain steps, workflow tasks, parallel branches and reduce,
//! routing, evaluator, orchestrator, graph), the conversation of an agent
//! step in the middle of its tool calls, and the final output are covered
//! without listing them — and a field added later is too.
//!
//! Why 1 KiB: a reference costs ~75 bytes in the record and the text ~150
//! bytes of key and row overhead apart, written once; a text above 1 KiB is
//! ≥ 7× its reference and is otherwise rewritten by every later checkpoint
//! of the run (3–10 in a run, more with reminders), so moving it pays back
//! at its first checkpoint. Below it (a routing choice, a score, a short
//! answer) the text stays inline and a session with no large text is read
//! in one lookup. It also keeps PostgreSQL's session rows under the ~2 KB
//! at which it starts compressing and moving a row's body out of line
//! (TOAST), which every update of the row would otherwise redo.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::Value;

use crate::error::{Error, Result};
use crate::model::Session;

/// Strings longer than this many bytes (UTF-8) are stored apart.
pub const THRESHOLD: usize = 1024;

/// What a stored session holds instead of a text stored apart. No text
/// the engine writes starts with a NUL; one that does is stored apart
/// whatever its length, so a stored string starting with this is always a
/// reference.
const REF: &str = "\0out:";

/// [`REF`] as serde_json writes it, after a string's opening quote.
const MARK: &[u8] = b"\\u0000out:";

/// A session as stored: its record, and the texts it refers to.
#[derive(Debug, Default)]
pub struct Stored {
    pub body: Vec<u8>,
    /// (SHA-256 hex, text), each hash once.
    pub outputs: Vec<(String, String)>,
}

/// Encodes `session` for storage, its large texts apart.
pub fn split(session: &Session) -> Result<Stored> {
    let bytes =
        serde_json::to_vec(session).map_err(|e| Error::Internal(format!("encode session: {e}")))?;
    if !needs_split(&bytes) {
        return Ok(Stored {
            body: bytes,
            outputs: Vec::new(),
        });
    }
    let mut v: Value = serde_json::from_slice(&bytes)
        .map_err(|e| Error::Internal(format!("encode session: {e}")))?;
    let mut outputs = BTreeMap::new();
    take(&mut v, &mut outputs);
    let body =
        serde_json::to_vec(&v).map_err(|e| Error::Internal(format!("encode session: {e}")))?;
    Ok(Stored {
        body,
        outputs: outputs.into_iter().collect(),
    })
}

/// Whether some JSON string in `bytes` may have to be stored apart: one
/// longer than [`THRESHOLD`] as written (escapes only ever lengthen a
/// string, so a shorter one is short) or one starting with [`REF`]. A
/// linear scan, so the common small session skips the JSON tree.
fn needs_split(bytes: &[u8]) -> bool {
    if bytes.len() <= THRESHOLD && !contains(bytes, MARK) {
        return false;
    }
    let mut in_string = false;
    let mut escaped = false;
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        if !in_string {
            if b == b'"' {
                in_string = true;
                start = i + 1;
                if bytes[start..].starts_with(MARK) {
                    return true;
                }
            }
            continue;
        }
        if escaped {
            escaped = false;
        } else if b == b'\\' {
            escaped = true;
        } else if b == b'"' {
            in_string = false;
            if i - start > THRESHOLD {
                return true;
            }
        }
    }
    false
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

fn take(v: &mut Value, out: &mut BTreeMap<String, String>) {
    match v {
        Value::String(s) if s.len() > THRESHOLD || s.starts_with(REF) => {
            let text = std::mem::take(s);
            let hash = crate::audit::sha256_hex(&text);
            *s = format!("{REF}{hash}");
            out.entry(hash).or_insert(text);
        }
        Value::Array(items) => items.iter_mut().for_each(|x| take(x, out)),
        Value::Object(map) => map.values_mut().for_each(|x| take(x, out)),
        _ => {}
    }
}

/// The hash a stored string refers to, if it is a reference.
fn reference(s: &str) -> Option<&str> {
    s.strip_prefix(REF)
        .filter(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()))
}

fn collect(v: &Value, out: &mut BTreeSet<String>) {
    match v {
        Value::String(s) => {
            if let Some(h) = reference(s) {
                out.insert(h.to_string());
            }
        }
        Value::Array(items) => items.iter().for_each(|x| collect(x, out)),
        Value::Object(map) => map.values().for_each(|x| collect(x, out)),
        _ => {}
    }
}

fn fill(v: &mut Value, texts: &HashMap<String, String>, missing: &mut Option<String>) {
    match v {
        Value::String(s) => {
            if let Some(h) = reference(s) {
                match texts.get(h) {
                    Some(text) => *s = text.clone(),
                    None => *missing = Some(h.to_string()),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|x| fill(x, texts, missing)),
        Value::Object(map) => map.values_mut().for_each(|x| fill(x, texts, missing)),
        _ => {}
    }
}

/// A stored session, read: whole, or waiting for the texts it refers to.
#[derive(Debug)]
pub enum Parsed {
    Whole(Box<Session>),
    Refs {
        value: Value,
        /// The hashes to fetch ([`Parsed::fill`] wants each).
        hashes: BTreeSet<String>,
    },
}

/// Reads a stored session of any format (`model::wire`); when it refers
/// to texts stored apart, says which.
pub fn parse(bytes: &[u8]) -> std::result::Result<Parsed, String> {
    if !contains(bytes, MARK) {
        return crate::model::wire::decode(bytes).map(|s| Parsed::Whole(Box::new(s)));
    }
    let value: Value = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    let mut hashes = BTreeSet::new();
    collect(&value, &mut hashes);
    if hashes.is_empty() {
        return crate::model::wire::decode_value(value).map(|s| Parsed::Whole(Box::new(s)));
    }
    Ok(Parsed::Refs { value, hashes })
}

impl Parsed {
    /// The hashes to fetch (none when whole).
    pub fn hashes(&self) -> impl Iterator<Item = &str> {
        let set = match self {
            Parsed::Whole(_) => None,
            Parsed::Refs { hashes, .. } => Some(hashes),
        };
        set.into_iter().flatten().map(String::as_str)
    }

    /// The session with its texts put back; `Err(hash)` names a text
    /// `texts` lacks, `Err` otherwise an unreadable session.
    pub fn fill(self, texts: &HashMap<String, String>) -> std::result::Result<Session, Missing> {
        match self {
            Parsed::Whole(s) => Ok(*s),
            Parsed::Refs { mut value, .. } => {
                let mut missing = None;
                fill(&mut value, texts, &mut missing);
                if let Some(hash) = missing {
                    return Err(Missing::Output(hash));
                }
                crate::model::wire::decode_value(value).map_err(Missing::Unreadable)
            }
        }
    }
}

/// Why [`Parsed::fill`] failed.
#[derive(Debug)]
pub enum Missing {
    /// No text under this hash.
    Output(String),
    /// The session does not decode.
    Unreadable(String),
}

impl Missing {
    /// The error for session `id` in store `location`.
    pub fn error(self, id: &str, location: &str) -> Error {
        match self {
            Missing::Output(h) => Error::Store(format!(
                "session {id}: its output (sha256 {h}) is missing from {location}"
            )),
            Missing::Unreadable(e) => {
                Error::Store(format!("session {id} in {location} is unreadable: {e}"))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{RecordKind, StepRecord};
    use crate::store::sled::tests::paused_session;

    fn with_step(text: &str) -> Session {
        let mut s = paused_session("o1");
        s.state = crate::model::PatternState::Chain {
            next: 1,
            steps: vec![Some(StepRecord {
                agent: Some("a".into()),
                response: text.into(),
                kind: RecordKind::Agent,
                finished_at: crate::clock::test_epoch(),
            })],
        };
        s
    }

    fn read(stored: &Stored) -> Session {
        let parsed = parse(&stored.body).expect("parse");
        let texts: HashMap<String, String> = stored.outputs.iter().cloned().collect();
        parsed.fill(&texts).expect("fill")
    }

    #[test]
    fn large_texts_go_apart_once_and_come_back_whole() {
        let big = "Durable gates let a workflow stop. \"quoted\"\n".repeat(100);
        let mut s = with_step(&big);
        s.output = Some(big.clone());
        let stored = split(&s).expect("split");
        assert_eq!(stored.outputs.len(), 1, "the same text is stored once");
        assert!(stored.body.len() < 1500, "{} bytes", stored.body.len());
        assert_eq!(read(&stored), s);
        // A missing text is named, never read as the reference.
        let err = parse(&stored.body)
            .expect("parse")
            .fill(&HashMap::new())
            .expect_err("missing");
        assert!(matches!(err, Missing::Output(h) if h == stored.outputs[0].0));
    }

    #[test]
    fn small_sessions_and_the_threshold() {
        let s = with_step(&"x".repeat(THRESHOLD));
        let stored = split(&s).expect("split");
        assert!(stored.outputs.is_empty(), "at the threshold: inline");
        assert_eq!(stored.body, serde_json::to_vec(&s).expect("json"));
        assert_eq!(read(&stored), s);
        let s = with_step(&"é".repeat(THRESHOLD / 2 + 1));
        assert_eq!(split(&s).expect("split").outputs.len(), 1, "bytes count");
    }

    #[test]
    fn a_text_that_looks_like_a_reference_is_stored_apart() {
        let odd = format!("{REF}{}", "a".repeat(64));
        let s = with_step(&odd);
        let stored = split(&s).expect("split");
        assert_eq!(stored.outputs.len(), 1);
        assert_eq!(read(&stored), s);
        // Inline sessions written before read as they are.
        let inline = serde_json::to_vec(&with_step(&"y".repeat(5000))).expect("json");
        assert!(matches!(parse(&inline), Ok(Parsed::Whole(_))));
    }
}
