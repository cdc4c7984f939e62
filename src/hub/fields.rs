//! What the rooms show of a gate's form and of its trust: each field
//! flattened into the words and limits an input needs — label, help, kind,
//! bounds, options, the default as text, a one-line hint of its rules —
//! and the words of the Trust button. Built here once so the web inbox,
//! Slack and Teams word a form alike; each renders it its own way and
//! sends back text, which only `crate::gate::form` reads.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::model::form::{FieldKind, Form};
use crate::model::Session;

/// One field, as an input shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FieldView {
    /// The property name: the input's name (`value.NAME` on the web).
    pub name: String,
    /// Its title, else its name.
    pub label: String,
    pub description: Option<String>,
    pub required: bool,
    /// `text`, `number`, `integer`, `boolean` or `choice`.
    pub kind: String,
    /// A text field's format: `email`, `uri`, `date`, `date-time`.
    pub format: Option<String>,
    /// Bounds of a number, as written.
    pub min: Option<String>,
    pub max: Option<String>,
    pub min_length: Option<u64>,
    pub max_length: Option<u64>,
    pub options: Vec<OptionView>,
    /// The default as text (`true`/`false` for a boolean).
    pub default: Option<String>,
    /// Its rules in words ("a whole number from 1 to 10"); may be empty.
    pub hint: String,
}

/// One option of a choice.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OptionView {
    pub value: String,
    pub label: String,
}

/// The fields of `form`, in its order.
pub fn fields(form: &Form) -> Vec<FieldView> {
    form.fields()
        .iter()
        .map(|f| {
            let mut v = FieldView {
                name: f.name.clone(),
                label: f.label().to_string(),
                description: f.description.clone(),
                required: f.required,
                kind: f.kind.name().to_string(),
                format: None,
                min: None,
                max: None,
                min_length: None,
                max_length: None,
                options: Vec::new(),
                default: f.kind.default_value().map(|d| match d {
                    Value::String(s) => s,
                    other => other.to_string(),
                }),
                hint: String::new(),
            };
            match &f.kind {
                FieldKind::Text {
                    min_length,
                    max_length,
                    format,
                    ..
                } => {
                    v.format = format.map(|f| f.name().to_string());
                    v.min_length = *min_length;
                    v.max_length = *max_length;
                    let mut parts: Vec<String> =
                        format.iter().map(|f| f.example().to_string()).collect();
                    match (min_length, max_length) {
                        (Some(lo), Some(hi)) => parts.push(format!("{lo} to {hi} characters")),
                        (Some(lo), None) => parts.push(format!("at least {lo} characters")),
                        (None, Some(hi)) => parts.push(format!("at most {hi} characters")),
                        (None, None) => {}
                    }
                    v.hint = parts.join(", ");
                }
                FieldKind::Number {
                    integer,
                    minimum,
                    maximum,
                    ..
                } => {
                    v.min = minimum.as_ref().map(|n| n.to_string());
                    v.max = maximum.as_ref().map(|n| n.to_string());
                    let what = if *integer {
                        "a whole number"
                    } else {
                        "a number"
                    };
                    v.hint = match (&v.min, &v.max) {
                        (Some(lo), Some(hi)) => format!("{what} from {lo} to {hi}"),
                        (Some(lo), None) => format!("{what}, at least {lo}"),
                        (None, Some(hi)) => format!("{what}, at most {hi}"),
                        (None, None) => what.to_string(),
                    };
                }
                FieldKind::Boolean { .. } => {}
                FieldKind::Choice { options, .. } => {
                    v.options = options
                        .iter()
                        .map(|o| OptionView {
                            value: o.value.clone(),
                            label: o.label().to_string(),
                        })
                        .collect();
                }
            }
            v
        })
        .collect()
}

/// The tool an approval request's `action` names (`strands ask --action`).
pub fn action_tool(s: &Session) -> Option<String> {
    let text = s.variables.get("action").and_then(Value::as_str)?;
    let action: Value = serde_json::from_str(text).ok()?;
    action
        .get("tool")
        .and_then(Value::as_str)
        .filter(|t| !t.trim().is_empty())
        .map(str::to_string)
}

/// The words of a gate's Trust button: "Trust TOOL for this session"
/// (the request's action), else "Approve and trust".
pub fn trust_label(s: &Session) -> String {
    match action_tool(s) {
        Some(tool) => format!("Trust {tool} for this session"),
        None => "Approve and trust".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_carry_their_words_and_limits_in_order() {
        let form: Form = serde_json::from_str(
            r#"{"properties": {
                "zeta": {"type": "integer", "title": "Replicas", "minimum": 1, "maximum": 9, "default": 2},
                "env": {"type": "string", "oneOf": [{"const": "p", "title": "Production"}, {"const": "s"}]},
                "mail": {"type": "string", "format": "email", "maxLength": 80},
                "go": {"type": "boolean", "default": true}
            }, "required": ["zeta"]}"#,
        )
        .expect("form");
        let f = fields(&form);
        assert_eq!(f[0].name, "zeta");
        assert_eq!(f[0].label, "Replicas");
        assert!(f[0].required);
        assert_eq!(f[0].hint, "a whole number from 1 to 9");
        assert_eq!(f[0].default.as_deref(), Some("2"));
        assert_eq!(f[1].options[0].label, "Production");
        assert_eq!(f[1].options[1].label, "s");
        assert_eq!(f[2].format.as_deref(), Some("email"));
        assert!(f[2].hint.contains("e-mail") && f[2].hint.contains("at most 80"));
        assert_eq!(f[3].default.as_deref(), Some("true"));
    }
}
