//! The card validator itself (`tests/teams-cards/validate.js`, Microsoft's
//! `adaptivecards` parser): it refuses broken cards with a message naming
//! what is wrong, so a pass in the Teams tests means something.

use serde_json::{json, Value};

use crate::common::card_schema::{validate, Verdict};

fn good() -> Value {
    json!({
        "type": "AdaptiveCard",
        "version": "1.5",
        "body": [{"type": "TextBlock", "text": "Ship it?", "wrap": true}],
        "actions": [
            {"type": "Action.Execute", "title": "Approve", "verb": "approve", "data": {"session": "s"}},
            {"type": "Action.OpenUrl", "title": "Open in browser", "url": "http://127.0.0.1/sessions/s"},
        ],
    })
}

/// The validator's verdict on `card`; `None` when it is not installed here
/// (and not required).
fn verdict(card: Value) -> Option<Result<String, String>> {
    match validate(&[("the card".to_string(), card)]) {
        Verdict::Valid(t) => Some(Ok(t)),
        Verdict::Invalid(t) => Some(Err(t)),
        Verdict::Skipped(why) => {
            eprintln!("SKIPPED: Adaptive Card validation ({why})");
            None
        }
    }
}

#[test]
fn teams_card_validator_passes_a_good_card_and_refuses_broken_ones() {
    let Some(ok) = verdict(good()) else {
        return;
    };
    assert!(ok.is_ok(), "{ok:?}");

    let mut broken: Vec<(Value, &str)> = Vec::new();
    // Action.Execute is 1.4: unknown in a 1.3 card.
    let mut old = good();
    old["version"] = json!("1.3");
    broken.push((old, "Unknown action type \"Action.Execute\""));
    // Later than Teams renders for bots.
    let mut new = good();
    new["version"] = json!("1.6");
    broken.push((new, "later than 1.5"));
    let mut none = good();
    none.as_object_mut().expect("object").remove("version");
    broken.push((none, "version"));
    let mut unknown = good();
    unknown["body"]
        .as_array_mut()
        .expect("body")
        .push(json!({"type": "Frobnicator", "text": "x"}));
    broken.push((unknown, "Unknown element type \"Frobnicator\""));
    let mut typo = good();
    typo["body"][0]["colour"] = json!("Good");
    broken.push((typo, "`colour`"));
    let mut no_verb = good();
    no_verb["actions"][0]
        .as_object_mut()
        .expect("action")
        .remove("verb");
    broken.push((no_verb, "Action.Execute needs `verb`"));
    let mut no_id = good();
    no_id["body"]
        .as_array_mut()
        .expect("body")
        .push(json!({"type": "Input.Text", "label": "Reason"}));
    broken.push((no_id, "Input.Text needs `id`"));
    let mut huge = good();
    huge["body"][0]["text"] = json!("x".repeat(30 * 1024));
    broken.push((huge, "28 KB"));

    for (card, words) in broken {
        match verdict(card.clone()) {
            Some(Err(problems)) => assert!(
                problems.contains(words),
                "{words:?} in the refusal of {card}:\n{problems}"
            ),
            other => panic!("{card} must be refused ({words}): {other:?}"),
        }
    }
}
