//! A gate's form on its approval card: an input per field — `Input.Text`
//! (with its e-mail or URL style), `Input.Date`, `Input.Number`,
//! `Input.Toggle`, `Input.ChoiceSet` — each with id `value.NAME`, inside
//! the "Approve…" card whose button sends them with the `approve` verb
//! (inputs of the card itself would be checked by Reject's and Modify's
//! buttons too); and reading them back from an action's data. What comes
//! back is text as typed (a toggle's `true`/`false`): only the intake
//! types and checks it (`crate::gate::form`).

use serde_json::{json, Map, Value};

use crate::hub::fields::FieldView;
use crate::model::form::Form;

/// What an input's id starts with; the rest is the field's name.
pub const PREFIX: &str = "value.";

/// The inputs of `fields`, each followed by its help when it has some.
pub fn inputs(fields: &[FieldView]) -> Vec<Value> {
    let mut body = Vec::new();
    for f in fields {
        let id = format!("{PREFIX}{}", f.name);
        let label = if f.required && f.kind != "boolean" {
            format!("{} (required)", f.label)
        } else {
            f.label.clone()
        };
        let mut input = match f.kind.as_str() {
            "number" | "integer" => {
                let mut i = json!({ "type": "Input.Number", "id": id, "label": label });
                let num = |s: &Option<String>| {
                    s.as_deref()
                        .and_then(|t| serde_json::from_str::<serde_json::Number>(t).ok())
                };
                if let Some(n) = num(&f.min) {
                    i["min"] = Value::Number(n);
                }
                if let Some(n) = num(&f.max) {
                    i["max"] = Value::Number(n);
                }
                if let Some(n) = num(&f.default) {
                    i["value"] = Value::Number(n);
                }
                i
            }
            // Sends "true" or "false" (its default valueOn / valueOff).
            "boolean" => json!({
                "type": "Input.Toggle",
                "id": id,
                "title": label,
                "value": if f.default.as_deref() == Some("true") { "true" } else { "false" },
            }),
            "choice" => {
                let mut i = json!({
                    "type": "Input.ChoiceSet",
                    "id": id,
                    "label": label,
                    "choices": f.options.iter().map(|o| json!({"title": o.label, "value": o.value})).collect::<Vec<_>>(),
                });
                if let Some(d) = &f.default {
                    i["value"] = json!(d);
                }
                i
            }
            _ if f.format.as_deref() == Some("date") => {
                let mut i = json!({ "type": "Input.Date", "id": id, "label": label });
                if let Some(d) = &f.default {
                    i["value"] = json!(d);
                }
                i
            }
            _ => {
                let mut i = json!({
                    "type": "Input.Text",
                    "id": id,
                    "label": label,
                    "maxLength": f.max_length.unwrap_or(crate::model::MAX_ANSWER_TEXT as u64),
                });
                match f.format.as_deref() {
                    Some("email") => i["style"] = json!("Email"),
                    Some("uri") => i["style"] = json!("Url"),
                    _ => {}
                }
                if let Some(d) = &f.default {
                    i["value"] = json!(d);
                }
                if !f.hint.is_empty() {
                    i["placeholder"] = json!(f.hint);
                }
                i
            }
        };
        if f.required && f.kind != "boolean" {
            input["isRequired"] = json!(true);
            input["errorMessage"] = json!(format!("{} is required", f.label));
        }
        body.push(input);
        let help: Vec<&str> = [f.description.as_deref().unwrap_or(""), f.hint.as_str()]
            .into_iter()
            .filter(|t| !t.is_empty())
            .collect();
        if !help.is_empty() {
            body.push(json!({
                "type": "TextBlock",
                "text": help.join(" · "),
                "isSubtle": true,
                "wrap": true,
                "size": "Small",
                "spacing": "None",
            }));
        }
    }
    body
}

/// The values an action's `data` carries for `form`'s fields, as sent
/// (text, or what Teams typed); empty inputs send nothing.
pub fn values(form: &Form, data: &Value) -> Map<String, Value> {
    form.fields()
        .iter()
        .filter_map(|f| {
            let v = data.get(format!("{PREFIX}{}", f.name))?;
            match v {
                Value::String(s) if s.trim().is_empty() => None,
                Value::Null => None,
                other => Some((f.name.clone(), other.clone())),
            }
        })
        .collect()
}
