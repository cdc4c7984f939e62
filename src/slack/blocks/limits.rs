//! What Slack accepts, checked on rendered JSON before it is sent: the Block
//! Kit limits of SLACK.md ([`check_message`], [`check_modal`]: which block,
//! which limit, what was found) and the slack-morphism shape check (every
//! block must be a type slack-morphism can read). Also the limit constants
//! Rust code cuts to, and [`cut_for_section`], the one place long text is
//! cut in Rust.
//!
//! Nothing here renders or knows about templates: a [`LimitError`] says
//! where in the JSON a rule broke, and [`Templates`](super::Templates)
//! names the template file. The checks cover the block and element types the
//! templates use; other types get the block_id rules and are left to
//! slack-morphism.

use std::collections::HashSet;

use serde::Deserialize;
use serde_json::{Map, Value};
use slack_morphism::prelude::{SlackBlock, SlackView};

use super::escape::escaped_len;
use crate::error::Result;

/// Slack's limit on a plain_text_input's `initial_value` (the edit modal).
pub const INITIAL_VALUE_MAX: usize = 3000;
/// Slack's limit on a button's `value`.
pub(super) const BUTTON_VALUE_MAX: usize = 2000;

/// Section text limit.
pub const SECTION_TEXT_MAX: usize = 3000;
/// What a code-block section leaves for its content: the section limit less
/// the fences (```` ```\n ```` and ```` \n``` ````) and some slack. Pass it to
/// [`cut_for_section`] for previews and outputs; the built-in templates cut
/// the same text with `mrkdwn(2990)`, so a pre-cut text is never cut twice.
pub const CODE_BLOCK_MAX: usize = 2990;

/// Cuts text for a section so the rendered section stays within 3000 chars,
/// returning (text, cut_chars). `max` is what the text may take *once
/// escaped* for mrkdwn (`&` counts 5, `<` and `>` 4, others 1 per char),
/// e.g. [`CODE_BLOCK_MAX`]; the cut is on a char boundary and adds nothing;
/// `cut_chars` counts the chars of `text` left out.
pub fn cut_for_section(text: &str, max: usize) -> (String, usize) {
    let mut used = 0;
    let mut kept = 0;
    for (i, c) in text.char_indices() {
        let len = escaped_len(c);
        if used + len > max {
            let rest = text[i..].chars().count();
            return (text[..i].to_string(), rest);
        }
        used += len;
        kept += 1;
    }
    debug_assert_eq!(kept, text.chars().count());
    (text.to_string(), 0)
}

// ---------------------------------------------------------------------------
// slack-morphism: the shape check.

/// Each block must deserialize as a block type slack-morphism models; its
/// `Unknown` catch-all (which also swallows known types with a bad body) is
/// refused.
pub(super) fn slack_blocks_shape(
    blocks: &[Value],
    prefix: &str,
) -> std::result::Result<(), String> {
    for (i, raw) in blocks.iter().enumerate() {
        let ty = raw.get("type").and_then(Value::as_str).unwrap_or("?");
        let block = SlackBlock::deserialize(raw).map_err(|e| {
            format!("{prefix}block {i} ({ty}) is not a Slack block (slack-morphism: {e})")
        })?;
        if matches!(
            block,
            SlackBlock::Unknown(_) | SlackBlock::ShareShortcut(_) | SlackBlock::Event(_)
        ) {
            return Err(format!(
                "{prefix}block {i} ({ty}) is not a Block Kit block slack-morphism can read \
                 (unknown type, or a field of the wrong shape)"
            ));
        }
    }
    Ok(())
}

pub(super) fn slack_view_shape(view: &Value) -> std::result::Result<(), String> {
    let parsed = SlackView::deserialize(view)
        .map_err(|e| format!("view is not a Slack modal (slack-morphism: {e})"))?;
    match parsed {
        SlackView::Modal(_) => {}
        SlackView::Home(_) => return Err("view is a home tab, not a modal".to_string()),
    }
    let blocks = view
        .get("blocks")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    slack_blocks_shape(blocks, "view ")
}

// ---------------------------------------------------------------------------
// Block Kit limits.

/// One Block Kit rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    MessageBlocks,
    ModalBlocks,
    BlockId,
    UniqueBlockId,
    SectionText,
    SectionFields,
    SectionFieldText,
    HeaderText,
    ActionsElements,
    ButtonText,
    ButtonValue,
    ButtonUrl,
    ActionId,
    UniqueActionId,
    ConfirmTitle,
    ConfirmText,
    ConfirmButton,
    ContextElements,
    /// Any other text object.
    Text,
    /// Slack rejects empty text.
    NonEmptyText,
    ModalTitle,
    ModalButton,
    PrivateMetadata,
    CallbackId,
    InputLabel,
    InputHint,
    Placeholder,
    InitialValue,
    ImageAltText,
    ImageUrl,
    /// Not a limit but a structural rule (a field missing or of the wrong type).
    Shape,
}

impl Limit {
    /// The maximum length or count, when the rule is one.
    pub fn max(self) -> Option<usize> {
        use Limit::*;
        Some(match self {
            MessageBlocks => 50,
            ModalBlocks => 100,
            BlockId | ActionId | CallbackId => 255,
            SectionText | Text | PrivateMetadata | InitialValue | ButtonUrl | ImageUrl => 3000,
            SectionFields | ContextElements => 10,
            SectionFieldText | ButtonValue | InputLabel | InputHint | ImageAltText => 2000,
            HeaderText => 150,
            ActionsElements => 25,
            ButtonText => 75,
            ConfirmTitle => 100,
            ConfirmText => 300,
            ConfirmButton => 30,
            ModalTitle | ModalButton => 24,
            Placeholder => 150,
            UniqueBlockId | UniqueActionId | NonEmptyText | Shape => return None,
        })
    }

    /// The rule in words: `header text ≤ 150 chars`.
    pub fn describe(self) -> String {
        use Limit::*;
        let what = match self {
            MessageBlocks => "blocks per message",
            ModalBlocks => "blocks per modal",
            BlockId => "block_id",
            UniqueBlockId => return "block_id unique in the message".into(),
            SectionText => "section text",
            SectionFields => "section fields",
            SectionFieldText => "section field text",
            HeaderText => "header text",
            ActionsElements => "actions elements",
            ButtonText => "button text",
            ButtonValue => "button value",
            ButtonUrl => "button url",
            ActionId => "action_id",
            UniqueActionId => return "action_id unique in its block".into(),
            ConfirmTitle => "confirm title",
            ConfirmText => "confirm text",
            ConfirmButton => "confirm/deny text",
            ContextElements => "context elements",
            Text => "text",
            NonEmptyText => return "text must not be empty".into(),
            ModalTitle => "modal title",
            ModalButton => "modal submit/close text",
            PrivateMetadata => "private_metadata",
            CallbackId => "callback_id",
            InputLabel => "input label",
            InputHint => "input hint",
            Placeholder => "placeholder",
            InitialValue => "initial_value",
            ImageAltText => "image alt_text",
            ImageUrl => "image url",
            Shape => return "Block Kit structure".into(),
        };
        let unit = match self {
            MessageBlocks | ModalBlocks | SectionFields | ActionsElements | ContextElements => "",
            _ => " chars",
        };
        format!("{what} ≤ {}{unit}", self.max().unwrap_or_default())
    }
}

impl std::fmt::Display for Limit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

/// A broken Block Kit rule: where (`block 3 (actions) elements[1].text`),
/// which rule, and what was found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{at}: {detail} (limit: {limit})")]
pub struct LimitError {
    pub at: String,
    pub limit: Limit,
    pub detail: String,
}

fn fail<T>(
    at: &str,
    limit: Limit,
    detail: impl Into<String>,
) -> std::result::Result<T, LimitError> {
    Err(LimitError {
        at: at.to_string(),
        limit,
        detail: detail.into(),
    })
}

type Check = std::result::Result<(), LimitError>;

/// Checks Block Kit limits; the error says which block and which limit.
pub fn check_message(blocks: &[Value]) -> Result<(), LimitError> {
    if blocks.is_empty() {
        return fail("message", Limit::Shape, "no blocks");
    }
    check_blocks(blocks, Limit::MessageBlocks, "message", "")
}

/// Checks a modal view object against Block Kit limits.
pub fn check_modal(view: &Value) -> Result<(), LimitError> {
    let Some(obj) = view.as_object() else {
        return fail("view", Limit::Shape, "not a JSON object");
    };
    match obj.get("type").and_then(Value::as_str) {
        Some("modal") => {}
        other => {
            return fail(
                "view.type",
                Limit::Shape,
                format!("is {}, not \"modal\"", other.unwrap_or("missing")),
            )
        }
    }
    text_object("view.title", obj.get("title"), true, Limit::ModalTitle)?;
    let has_submit = obj.contains_key("submit");
    if has_submit {
        text_object("view.submit", obj.get("submit"), true, Limit::ModalButton)?;
    }
    if obj.contains_key("close") {
        text_object("view.close", obj.get("close"), true, Limit::ModalButton)?;
    }
    optional_str(
        obj,
        "private_metadata",
        "view.private_metadata",
        Limit::PrivateMetadata,
    )?;
    optional_str(obj, "callback_id", "view.callback_id", Limit::CallbackId)?;
    let Some(blocks) = obj.get("blocks").and_then(Value::as_array) else {
        return fail("view.blocks", Limit::Shape, "missing or not an array");
    };
    check_blocks(blocks, Limit::ModalBlocks, "modal", "view ")?;
    let has_input = blocks
        .iter()
        .any(|b| b.get("type").and_then(Value::as_str) == Some("input"));
    if has_input && !has_submit {
        return fail(
            "view.submit",
            Limit::Shape,
            "a modal with input blocks needs a submit button",
        );
    }
    Ok(())
}

/// Checks a home tab (`views.publish`) against Block Kit limits: up to
/// 100 blocks, each within its own limits.
pub fn check_home(view: &Value) -> Result<(), LimitError> {
    let Some(obj) = view.as_object() else {
        return fail("view", Limit::Shape, "not a JSON object");
    };
    if obj.get("type").and_then(Value::as_str) != Some("home") {
        return fail("view.type", Limit::Shape, "is not \"home\"");
    }
    let Some(blocks) = obj.get("blocks").and_then(Value::as_array) else {
        return fail("view.blocks", Limit::Shape, "missing or not an array");
    };
    check_blocks(blocks, Limit::ModalBlocks, "home tab", "view ")
}

pub(super) fn chars(s: &str) -> usize {
    s.chars().count()
}

/// A JSON value's kind, as an error names it.
pub(super) fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn check_len(at: &str, s: &str, limit: Limit) -> Check {
    if let Some(max) = limit.max() {
        let n = chars(s);
        if n > max {
            return fail(at, limit, format!("{n} chars"));
        }
    }
    Ok(())
}

fn check_count(at: &str, n: usize, limit: Limit) -> Check {
    if let Some(max) = limit.max() {
        if n > max {
            return fail(at, limit, format!("{n} of them"));
        }
    }
    Ok(())
}

/// A string field that may be absent.
fn optional_str(obj: &Map<String, Value>, key: &str, at: &str, limit: Limit) -> Check {
    match obj.get(key) {
        None => Ok(()),
        Some(Value::String(s)) => check_len(at, s, limit),
        Some(other) => fail(
            at,
            Limit::Shape,
            format!("is a {}, not a string", json_kind(other)),
        ),
    }
}

/// A required text object: `{"type": "plain_text"|"mrkdwn", "text": "…"}`.
fn text_object(at: &str, v: Option<&Value>, plain_only: bool, limit: Limit) -> Check {
    let Some(obj) = v.and_then(Value::as_object) else {
        return fail(at, Limit::Shape, "missing text object");
    };
    match obj.get("type").and_then(Value::as_str) {
        Some("plain_text") => {}
        Some("mrkdwn") if !plain_only => {}
        other => {
            let allowed = if plain_only {
                "plain_text"
            } else {
                "plain_text or mrkdwn"
            };
            return fail(
                &format!("{at}.type"),
                Limit::Shape,
                format!("is {}, not {allowed}", other.unwrap_or("missing")),
            );
        }
    }
    let Some(text) = obj.get("text").and_then(Value::as_str) else {
        return fail(
            &format!("{at}.text"),
            Limit::Shape,
            "missing or not a string",
        );
    };
    if text.trim().is_empty() {
        return fail(at, Limit::NonEmptyText, "empty text");
    }
    check_len(at, text, limit)
}

fn check_blocks(blocks: &[Value], count_limit: Limit, what: &str, prefix: &str) -> Check {
    check_count(what, blocks.len(), count_limit)?;
    let mut ids = HashSet::new();
    for (i, block) in blocks.iter().enumerate() {
        let Some(obj) = block.as_object() else {
            return fail(
                &format!("{prefix}block {i}"),
                Limit::Shape,
                "not a JSON object",
            );
        };
        let Some(ty) = obj.get("type").and_then(Value::as_str) else {
            return fail(&format!("{prefix}block {i}"), Limit::Shape, "no \"type\"");
        };
        let at = format!("{prefix}block {i} ({ty})");
        match obj.get("block_id") {
            None => {}
            Some(Value::String(id)) => {
                check_len(&format!("{at}.block_id"), id, Limit::BlockId)?;
                if id.is_empty() {
                    return fail(&format!("{at}.block_id"), Limit::Shape, "empty block_id");
                }
                if !ids.insert(id.as_str()) {
                    return fail(
                        &format!("{at}.block_id"),
                        Limit::UniqueBlockId,
                        format!("\"{id}\" is used twice"),
                    );
                }
            }
            Some(_) => {
                return fail(&format!("{at}.block_id"), Limit::Shape, "not a string");
            }
        }
        check_block(&at, ty, obj)?;
    }
    Ok(())
}

fn elements<'a>(
    at: &str,
    obj: &'a Map<String, Value>,
) -> std::result::Result<&'a [Value], LimitError> {
    match obj.get("elements").and_then(Value::as_array) {
        Some(els) if !els.is_empty() => Ok(els),
        Some(_) => fail(&format!("{at}.elements"), Limit::Shape, "empty"),
        None => fail(
            &format!("{at}.elements"),
            Limit::Shape,
            "missing or not an array",
        ),
    }
}

fn check_block(at: &str, ty: &str, obj: &Map<String, Value>) -> Check {
    match ty {
        "header" => text_object(
            &format!("{at}.text"),
            obj.get("text"),
            true,
            Limit::HeaderText,
        ),
        "section" => {
            let has_text = obj.contains_key("text");
            if has_text {
                text_object(
                    &format!("{at}.text"),
                    obj.get("text"),
                    false,
                    Limit::SectionText,
                )?;
            }
            match obj.get("fields") {
                None if !has_text => {
                    return fail(at, Limit::Shape, "a section needs text or fields");
                }
                None => {}
                Some(Value::Array(fields)) => {
                    check_count(&format!("{at}.fields"), fields.len(), Limit::SectionFields)?;
                    for (j, f) in fields.iter().enumerate() {
                        text_object(
                            &format!("{at}.fields[{j}]"),
                            Some(f),
                            false,
                            Limit::SectionFieldText,
                        )?;
                    }
                }
                Some(_) => return fail(&format!("{at}.fields"), Limit::Shape, "not an array"),
            }
            if let Some(acc) = obj.get("accessory") {
                check_element(&format!("{at}.accessory"), acc)?;
            }
            Ok(())
        }
        "actions" => {
            let els = elements(at, obj)?;
            check_count(&format!("{at}.elements"), els.len(), Limit::ActionsElements)?;
            let mut action_ids = HashSet::new();
            for (j, el) in els.iter().enumerate() {
                let el_at = format!("{at}.elements[{j}]");
                check_element(&el_at, el)?;
                if let Some(id) = el.get("action_id").and_then(Value::as_str) {
                    if !action_ids.insert(id) {
                        return fail(
                            &format!("{el_at}.action_id"),
                            Limit::UniqueActionId,
                            format!("\"{id}\" is used twice"),
                        );
                    }
                }
            }
            Ok(())
        }
        "context" => {
            let els = elements(at, obj)?;
            check_count(&format!("{at}.elements"), els.len(), Limit::ContextElements)?;
            for (j, el) in els.iter().enumerate() {
                let el_at = format!("{at}.elements[{j}]");
                if el.get("type").and_then(Value::as_str) == Some("image") {
                    check_image(&el_at, el)?;
                } else {
                    text_object(&el_at, Some(el), false, Limit::Text)?;
                }
            }
            Ok(())
        }
        "input" => {
            text_object(
                &format!("{at}.label"),
                obj.get("label"),
                true,
                Limit::InputLabel,
            )?;
            if obj.contains_key("hint") {
                text_object(
                    &format!("{at}.hint"),
                    obj.get("hint"),
                    true,
                    Limit::InputHint,
                )?;
            }
            match obj.get("element") {
                Some(el) => check_element(&format!("{at}.element"), el),
                None => fail(&format!("{at}.element"), Limit::Shape, "missing"),
            }
        }
        "image" => check_image(at, &Value::Object(obj.clone())),
        // Other types (divider, rich_text, …): the block_id rules above, and
        // slack-morphism decides whether they are Slack-shaped.
        _ => Ok(()),
    }
}

fn check_image(at: &str, el: &Value) -> Check {
    let Some(obj) = el.as_object() else {
        return fail(at, Limit::Shape, "not a JSON object");
    };
    match obj.get("alt_text").and_then(Value::as_str) {
        Some(alt) if !alt.trim().is_empty() => {
            check_len(&format!("{at}.alt_text"), alt, Limit::ImageAltText)?
        }
        _ => return fail(&format!("{at}.alt_text"), Limit::Shape, "missing or empty"),
    }
    optional_str(
        obj,
        "image_url",
        &format!("{at}.image_url"),
        Limit::ImageUrl,
    )
}

/// An interactive element: buttons in full, the common fields of others.
fn check_element(at: &str, el: &Value) -> Check {
    let Some(obj) = el.as_object() else {
        return fail(at, Limit::Shape, "not a JSON object");
    };
    let Some(ty) = obj.get("type").and_then(Value::as_str) else {
        return fail(at, Limit::Shape, "no \"type\"");
    };
    let at = format!("{at} ({ty})");
    optional_str(
        obj,
        "action_id",
        &format!("{at}.action_id"),
        Limit::ActionId,
    )?;
    if let Some(Value::String(id)) = obj.get("action_id") {
        if id.is_empty() {
            return fail(&format!("{at}.action_id"), Limit::Shape, "empty action_id");
        }
    }
    if obj.contains_key("placeholder") {
        text_object(
            &format!("{at}.placeholder"),
            obj.get("placeholder"),
            true,
            Limit::Placeholder,
        )?;
    }
    if let Some(confirm) = obj.get("confirm") {
        check_confirm(&format!("{at}.confirm"), confirm)?;
    }
    match ty {
        "button" => {
            text_object(
                &format!("{at}.text"),
                obj.get("text"),
                true,
                Limit::ButtonText,
            )?;
            optional_str(obj, "value", &format!("{at}.value"), Limit::ButtonValue)?;
            optional_str(obj, "url", &format!("{at}.url"), Limit::ButtonUrl)?;
            match obj.get("style") {
                None => Ok(()),
                Some(Value::String(s)) if s == "primary" || s == "danger" => Ok(()),
                Some(other) => fail(
                    &format!("{at}.style"),
                    Limit::Shape,
                    format!("is {other}, not \"primary\" or \"danger\""),
                ),
            }
        }
        "plain_text_input" => optional_str(
            obj,
            "initial_value",
            &format!("{at}.initial_value"),
            Limit::InitialValue,
        ),
        _ => Ok(()),
    }
}

fn check_confirm(at: &str, v: &Value) -> Check {
    let Some(obj) = v.as_object() else {
        return fail(at, Limit::Shape, "not a JSON object");
    };
    text_object(
        &format!("{at}.title"),
        obj.get("title"),
        true,
        Limit::ConfirmTitle,
    )?;
    text_object(
        &format!("{at}.text"),
        obj.get("text"),
        false,
        Limit::ConfirmText,
    )?;
    text_object(
        &format!("{at}.confirm"),
        obj.get("confirm"),
        true,
        Limit::ConfirmButton,
    )?;
    text_object(
        &format!("{at}.deny"),
        obj.get("deny"),
        true,
        Limit::ConfirmButton,
    )
}

#[cfg(test)]
mod tests {
    use super::super::escape_mrkdwn;
    use super::super::samples::fixtures::nasty;
    use super::*;
    use serde_json::json;

    #[test]
    fn cut_for_section_counts_escapes_and_cuts_on_char_boundaries() {
        assert_eq!(cut_for_section("abc", 10), ("abc".to_string(), 0));
        assert_eq!(cut_for_section("héllo", 2), ("hé".to_string(), 3));
        // `&` becomes `&amp;`: five of the budget.
        assert_eq!(cut_for_section("a&b", 5), ("a".to_string(), 2));
        assert_eq!(cut_for_section("a&b", 6), ("a&".to_string(), 1));
        assert_eq!(cut_for_section("🦀🦀🦀", 2), ("🦀🦀".to_string(), 1));
        let (kept, cut) = cut_for_section(&nasty(10_000), CODE_BLOCK_MAX);
        assert!(chars(&escape_mrkdwn(&kept)) <= CODE_BLOCK_MAX);
        assert_eq!(chars(&kept) + cut, 10_000);
    }

    // ---- check_message / check_modal, one limit at a time

    fn header(text: &str) -> Value {
        json!({"type": "header", "text": {"type": "plain_text", "text": text}})
    }

    fn section(text: &str) -> Value {
        json!({"type": "section", "text": {"type": "mrkdwn", "text": text}})
    }

    fn button(text: &str, action_id: &str, value: &str) -> Value {
        json!({"type": "button", "action_id": action_id, "value": value,
               "text": {"type": "plain_text", "text": text}})
    }

    fn actions(elements: Vec<Value>) -> Value {
        json!({"type": "actions", "elements": elements})
    }

    fn limit_of(blocks: Vec<Value>) -> LimitError {
        check_message(&blocks).unwrap_err()
    }

    #[test]
    fn limit_blocks_per_message() {
        check_message(&vec![section("x"); 50]).unwrap();
        let e = limit_of(vec![section("x"); 51]);
        assert_eq!(e.limit, Limit::MessageBlocks);
        assert!(e.to_string().contains("blocks per message ≤ 50"), "{e}");
    }

    #[test]
    fn limit_section_text() {
        check_message(&[section(&"é".repeat(3000))]).unwrap();
        let e = limit_of(vec![header("h"), section(&"é".repeat(3001))]);
        assert_eq!(e.limit, Limit::SectionText);
        assert_eq!(e.at, "block 1 (section).text");
    }

    #[test]
    fn limit_section_fields() {
        let field = json!({"type": "mrkdwn", "text": "f"});
        let ok = json!({"type": "section", "fields": vec![field.clone(); 10]});
        check_message(&[ok]).unwrap();
        let e = limit_of(vec![json!({"type": "section", "fields": vec![field; 11]})]);
        assert_eq!(e.limit, Limit::SectionFields);
        let long = json!({"type": "plain_text", "text": "x".repeat(2001)});
        let e = limit_of(vec![json!({"type": "section", "fields": [long]})]);
        assert_eq!(e.limit, Limit::SectionFieldText);
        assert_eq!(e.at, "block 0 (section).fields[0]");
    }

    #[test]
    fn limit_header_text() {
        check_message(&[header(&"x".repeat(150))]).unwrap();
        assert_eq!(
            limit_of(vec![header(&"x".repeat(151))]).limit,
            Limit::HeaderText
        );
        let mrkdwn = json!({"type": "header", "text": {"type": "mrkdwn", "text": "x"}});
        assert_eq!(limit_of(vec![mrkdwn]).limit, Limit::Shape);
    }

    #[test]
    fn limit_actions_elements() {
        let buttons = |n: usize| (0..n).map(|i| button("b", &format!("a{i}"), "v")).collect();
        check_message(&[actions(buttons(25))]).unwrap();
        assert_eq!(
            limit_of(vec![actions(buttons(26))]).limit,
            Limit::ActionsElements
        );
    }

    #[test]
    fn limit_button_text_value_and_action_id() {
        check_message(&[actions(vec![button(
            &"x".repeat(75),
            &"a".repeat(255),
            &"v".repeat(2000),
        )])])
        .unwrap();
        let e = limit_of(vec![actions(vec![button(&"x".repeat(76), "a", "v")])]);
        assert_eq!(e.limit, Limit::ButtonText);
        assert_eq!(e.at, "block 0 (actions).elements[0] (button).text");
        let e = limit_of(vec![actions(vec![button("x", "a", &"v".repeat(2001))])]);
        assert_eq!(e.limit, Limit::ButtonValue);
        let e = limit_of(vec![actions(vec![button("x", &"a".repeat(256), "v")])]);
        assert_eq!(e.limit, Limit::ActionId);
        let e = limit_of(vec![actions(vec![
            button("x", "a", "v"),
            button("y", "a", "v"),
        ])]);
        assert_eq!(e.limit, Limit::UniqueActionId);
    }

    #[test]
    fn limit_confirm_dialog() {
        let mut b = button("Reject", "r", "v");
        b["confirm"] = json!({"title": {"type": "plain_text", "text": "t"},
            "text": {"type": "plain_text", "text": "x".repeat(301)},
            "confirm": {"type": "plain_text", "text": "ok"},
            "deny": {"type": "plain_text", "text": "no"}});
        assert_eq!(limit_of(vec![actions(vec![b])]).limit, Limit::ConfirmText);
    }

    #[test]
    fn limit_block_id_length_and_uniqueness() {
        let mut a = section("x");
        a["block_id"] = json!("b".repeat(255));
        check_message(&[a.clone()]).unwrap();
        let mut long = section("x");
        long["block_id"] = json!("b".repeat(256));
        assert_eq!(limit_of(vec![long]).limit, Limit::BlockId);
        let e = limit_of(vec![a.clone(), a]);
        assert_eq!(e.limit, Limit::UniqueBlockId);
        assert_eq!(e.at, "block 1 (section).block_id");
    }

    #[test]
    fn limit_context_elements() {
        let el = json!({"type": "mrkdwn", "text": "c"});
        check_message(&[json!({"type": "context", "elements": vec![el.clone(); 10]})]).unwrap();
        let e = limit_of(vec![json!({"type": "context", "elements": vec![el; 11]})]);
        assert_eq!(e.limit, Limit::ContextElements);
    }

    #[test]
    fn limit_empty_text() {
        assert_eq!(limit_of(vec![section("")]).limit, Limit::NonEmptyText);
        assert_eq!(limit_of(vec![header(" \n")]).limit, Limit::NonEmptyText);
        let ctx = json!({"type": "context", "elements": [{"type": "mrkdwn", "text": ""}]});
        assert_eq!(limit_of(vec![ctx]).limit, Limit::NonEmptyText);
        assert_eq!(check_message(&[]).unwrap_err().limit, Limit::Shape);
    }

    fn modal(blocks: Vec<Value>) -> Value {
        json!({"type": "modal", "title": {"type": "plain_text", "text": "Modify"},
               "submit": {"type": "plain_text", "text": "Send"},
               "close": {"type": "plain_text", "text": "Cancel"},
               "private_metadata": "m", "callback_id": "strands_modify", "blocks": blocks})
    }

    fn input(label: &str, placeholder: &str) -> Value {
        json!({"type": "input", "block_id": "feedback", "label": {"type": "plain_text", "text": label},
               "element": {"type": "plain_text_input", "action_id": "text", "multiline": true,
                           "placeholder": {"type": "plain_text", "text": placeholder}}})
    }

    #[test]
    fn limit_modal_title_buttons_and_metadata() {
        check_modal(&modal(vec![input("l", "p")])).unwrap();
        let mut v = modal(vec![]);
        v["title"]["text"] = json!("x".repeat(25));
        assert_eq!(check_modal(&v).unwrap_err().limit, Limit::ModalTitle);
        let mut v = modal(vec![]);
        v["submit"]["text"] = json!("x".repeat(25));
        assert_eq!(check_modal(&v).unwrap_err().limit, Limit::ModalButton);
        let mut v = modal(vec![]);
        v["close"]["text"] = json!("x".repeat(25));
        assert_eq!(check_modal(&v).unwrap_err().limit, Limit::ModalButton);
        let mut v = modal(vec![]);
        v["private_metadata"] = json!("x".repeat(3001));
        assert_eq!(check_modal(&v).unwrap_err().limit, Limit::PrivateMetadata);
        let mut v = modal(vec![input("l", "p")]);
        v.as_object_mut().unwrap().remove("submit");
        assert_eq!(check_modal(&v).unwrap_err().limit, Limit::Shape);
    }

    #[test]
    fn limit_modal_blocks_label_and_placeholder() {
        check_modal(&modal(vec![section("x"); 100])).unwrap();
        let e = check_modal(&modal(vec![section("x"); 101])).unwrap_err();
        assert_eq!(e.limit, Limit::ModalBlocks);
        let e = check_modal(&modal(vec![input(&"l".repeat(2001), "p")])).unwrap_err();
        assert_eq!(e.limit, Limit::InputLabel);
        assert_eq!(e.at, "view block 0 (input).label");
        let e = check_modal(&modal(vec![input("l", &"p".repeat(151))])).unwrap_err();
        assert_eq!(e.limit, Limit::Placeholder);
    }

    #[test]
    fn slacks_own_example_blocks_pass() {
        // The blocks of docs/slack-payloads/block_actions.json.
        let blocks = json!([
          {"type": "section", "block_id": "prompt-1", "text": {"type": "mrkdwn", "text": "*Approve the production deploy?*", "verbatim": false}},
          {"type": "actions", "block_id": "gate-1", "elements": [
            {"type": "button", "action_id": "approve", "text": {"type": "plain_text", "text": "Approve", "emoji": true}, "value": "gate-1", "style": "primary"},
            {"type": "button", "action_id": "reject", "text": {"type": "plain_text", "text": "Reject", "emoji": true}, "value": "gate-1", "style": "danger"}
          ]}
        ]);
        let blocks = blocks.as_array().unwrap();
        check_message(blocks).unwrap();
        slack_blocks_shape(blocks, "").unwrap();
    }
}
