//! The Block Kit limits Slack itself enforces, so that the fake refuses what
//! Slack would: a message or modal the bot builds over a limit fails here as
//! it would in production (`invalid_blocks`, `invalid_arguments`), not
//! silently. The limits are the ones in SLACK.md: block counts, text
//! lengths, ids, actions and context elements, modal titles and metadata.
//! They are the fake's own, independent of the bot's checks in
//! `src/slack/blocks/limits.rs`.

use serde_json::Value;
use std::collections::HashSet;

fn text_len(v: &Value) -> usize {
    v["text"].as_str().map(|s| s.chars().count()).unwrap_or(0)
}

fn check_button(b: &Value, at: &str) -> Result<(), String> {
    if text_len(&b["text"]) > 75 {
        return Err(format!("{at}: button text over 75 characters"));
    }
    if b["value"].as_str().map(|s| s.chars().count()).unwrap_or(0) > 2000 {
        return Err(format!("{at}: button value over 2000 characters"));
    }
    if b["action_id"]
        .as_str()
        .map(|s| s.chars().count())
        .unwrap_or(0)
        > 255
    {
        return Err(format!("{at}: action_id over 255 characters"));
    }
    Ok(())
}

/// Checks the limits in SLACK.md; `max` is 50 for messages, 100 for modals.
pub fn check_blocks(blocks: &Value, max: usize) -> Result<(), String> {
    let Some(blocks) = blocks.as_array() else {
        return if blocks.is_null() {
            Ok(())
        } else {
            Err("blocks is not an array".into())
        };
    };
    if blocks.len() > max {
        return Err(format!("{} blocks, at most {max}", blocks.len()));
    }
    let mut ids = HashSet::new();
    for (i, b) in blocks.iter().enumerate() {
        let at = format!("blocks[{i}]");
        if let Some(id) = b["block_id"].as_str() {
            if id.chars().count() > 255 {
                return Err(format!("{at}: block_id over 255 characters"));
            }
            if !ids.insert(id.to_string()) {
                return Err(format!("{at}: duplicate block_id {id:?}"));
            }
        }
        match b["type"].as_str().unwrap_or_default() {
            "section" => {
                if text_len(&b["text"]) > 3000 {
                    return Err(format!("{at}: section text over 3000 characters"));
                }
                if let Some(fields) = b["fields"].as_array() {
                    if fields.len() > 10 {
                        return Err(format!("{at}: more than 10 fields"));
                    }
                    if fields.iter().any(|f| text_len(f) > 2000) {
                        return Err(format!("{at}: a field over 2000 characters"));
                    }
                }
                if b["text"].is_null() && b["fields"].is_null() {
                    return Err(format!("{at}: a section needs text or fields"));
                }
                if b["accessory"]["type"] == "button" {
                    check_button(&b["accessory"], &at)?;
                }
            }
            "header" if text_len(&b["text"]) > 150 => {
                return Err(format!("{at}: header text over 150 characters"));
            }
            "actions" => {
                let elements = b["elements"].as_array().cloned().unwrap_or_default();
                if elements.is_empty() || elements.len() > 25 {
                    return Err(format!("{at}: an actions block has 1 to 25 elements"));
                }
                let mut action_ids = HashSet::new();
                for e in &elements {
                    if e["type"] == "button" {
                        check_button(e, &at)?;
                    }
                    if let Some(id) = e["action_id"].as_str() {
                        if !action_ids.insert(id.to_string()) {
                            return Err(format!("{at}: duplicate action_id {id:?}"));
                        }
                    }
                }
            }
            "context" => {
                let n = b["elements"].as_array().map(Vec::len).unwrap_or(0);
                if n == 0 || n > 10 {
                    return Err(format!("{at}: a context block has 1 to 10 elements"));
                }
            }
            "" => return Err(format!("{at}: a block without a type")),
            _ => {}
        }
    }
    Ok(())
}

pub(super) fn check_view(view: &Value) -> Result<(), String> {
    if view["type"] != "modal" {
        return Err("view.type must be `modal`".into());
    }
    for key in ["title", "submit", "close"] {
        if text_len(&view[key]) > 24 {
            return Err(format!("view.{key} over 24 characters"));
        }
    }
    if view["title"].is_null() {
        return Err("a modal needs a title".into());
    }
    let has_input = view["blocks"]
        .as_array()
        .is_some_and(|b| b.iter().any(|b| b["type"] == "input"));
    if has_input && view["submit"].is_null() {
        return Err("a modal with input blocks needs `submit`".into());
    }
    if view["private_metadata"]
        .as_str()
        .map(|s| s.chars().count())
        .unwrap_or(0)
        > 3000
    {
        return Err("private_metadata over 3000 characters".into());
    }
    if view["callback_id"]
        .as_str()
        .map(|s| s.chars().count())
        .unwrap_or(0)
        > 255
    {
        return Err("callback_id over 255 characters".into());
    }
    check_blocks(&view["blocks"], 100)
}
