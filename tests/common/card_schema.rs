//! Adaptive Cards checked by Microsoft's own parser: the `adaptivecards`
//! npm package, run by `tests/teams-cards/validate.js` (pinned in its
//! `package-lock.json`; `npm ci` there installs it, `.ci/run` does). The
//! Teams tests hand it every card the fake Bot Framework received and every
//! card an invoke was answered with.
//!
//! Without `tests/teams-cards/node_modules` (or without `node`) the check
//! says SKIPPED and passes, unless `STRANDS_REQUIRE_CARD_SCHEMA=1`, which
//! makes it fail instead.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::{json, Value};

/// `tests/teams-cards`.
pub fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/teams-cards")
}

/// What the validator said.
#[derive(Debug)]
pub enum Verdict {
    /// Every card is valid.
    Valid(String),
    /// At least one problem: the validator's lines.
    Invalid(String),
    /// The validator is not installed here (and not required).
    Skipped(String),
}

/// Runs the validator on `cards` (`(label, card)`); any JSON it takes
/// (cards, activities, invoke responses) will do as a card.
pub fn validate(cards: &[(String, Value)]) -> Verdict {
    let required = std::env::var("STRANDS_REQUIRE_CARD_SCHEMA").as_deref() == Ok("1");
    let missing = |why: String| {
        assert!(
            !required,
            "STRANDS_REQUIRE_CARD_SCHEMA=1 but {why}: run `npm ci` in tests/teams-cards"
        );
        Verdict::Skipped(why)
    };
    if !dir().join("node_modules/adaptivecards").is_dir() {
        return missing("tests/teams-cards/node_modules is missing".into());
    }
    let input: Vec<Value> = cards
        .iter()
        .map(|(label, card)| json!({"label": label, "card": card}))
        .collect();
    let child = Command::new("node")
        .arg(dir().join("validate.js"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => return missing(format!("`node` cannot be run ({e})")),
    };
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(Value::Array(input).to_string().as_bytes())
        .expect("the cards reach the validator");
    let out = child.wait_with_output().expect("the validator ends");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if out.status.success() {
        Verdict::Valid(text)
    } else {
        Verdict::Invalid(text)
    }
}

/// Panics naming every problem unless each of `cards` is valid (or the
/// validator is not installed here and not required: then it says so).
#[track_caller]
pub fn assert_valid(cards: &[(String, Value)]) {
    if cards.is_empty() {
        return;
    }
    match validate(cards) {
        Verdict::Valid(_) => {}
        Verdict::Skipped(why) => {
            eprintln!("SKIPPED: Adaptive Card validation ({why}; `npm ci` in tests/teams-cards)")
        }
        Verdict::Invalid(problems) => {
            panic!("Microsoft's Adaptive Cards parser refuses a card:\n{problems}")
        }
    }
}
