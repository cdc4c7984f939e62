//! A form a manual gate asks its approver to fill in (`form:` on a
//! `manual_gate`, `"form"` on an approval request): a flat JSON Schema
//! object as MCP elicitation's `requestedSchema` writes it — string,
//! number, integer and boolean properties, string choices (`enum` with
//! `enumNames`, or `oneOf` of `{const, title}`), bounds, lengths and a few
//! formats — parsed once into [`Form`], a list of typed [`Field`]s, and
//! never read as raw JSON again.
//!
//! Its wire shape is the schema itself: a spec, an approval request, a
//! stored session and the views all carry the same JSON, with the
//! properties in the order they were written ([`Entries`]: serde_json's
//! map would sort them, and a form is read top to bottom).
//!
//! What a value must be is [`FieldKind::admit`]: the parser holds each
//! `default` to it, and the one place answers are checked
//! (`crate::gate::form`) holds every value a human sends to it, after
//! turning the strings a web form, a Slack modal or a Teams card sends
//! into the field's type. Nothing here coerces or decides what an answer
//! means. Nested objects, arrays and multi-select are not supported: a
//! form is flat, as elicitation's is.
//!
//! The schema's parsing is `schema`'s (its shape on the wire, and why
//! a schema is refused, with where).

use chrono::{DateTime, NaiveDate};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value};

mod schema;

pub use schema::{Entries, Schema, SchemaAt, SchemaError};

/// The most properties a form may have.
pub const MAX_FIELDS: usize = 32;
/// The most options a choice may offer (Slack's `static_select` limit).
pub const MAX_OPTIONS: usize = 100;
/// The longest property name, in characters.
pub const MAX_NAME: usize = 64;
/// The longest `title` (and option title), in characters.
pub const MAX_TITLE: usize = 200;
/// The longest `description`, in characters.
pub const MAX_DESCRIPTION: usize = 2000;
/// The longest option value, in characters (Slack's option value limit).
pub const MAX_OPTION_VALUE: usize = 150;

/// A value an answer gave (or left out) that its form refuses: which
/// field, and what it must be. Unknown fields are named as given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{field}` {message}")]
pub struct FieldError {
    pub field: String,
    pub message: String,
}

/// A checked form: at least one field, at most [`MAX_FIELDS`], names
/// unique, every default admitted by its field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "Schema", into = "Schema")]
pub struct Form {
    fields: Vec<Field>,
}

/// One value the approver fills in.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    /// The property name: the key of the value in the answer.
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    /// Listed in `required`: an answer without it (and without a
    /// default) is refused.
    pub required: bool,
    pub kind: FieldKind,
}

/// What a field holds; each kind carries only the rules that apply to it.
#[derive(Debug, Clone, PartialEq)]
pub enum FieldKind {
    /// `type: string` without choices.
    Text {
        min_length: Option<u64>,
        max_length: Option<u64>,
        format: Option<TextFormat>,
        default: Option<String>,
    },
    /// `type: number`, or `integer` (whole numbers only).
    Number {
        integer: bool,
        minimum: Option<Number>,
        maximum: Option<Number>,
        default: Option<Number>,
    },
    /// `type: boolean`.
    Boolean { default: Option<bool> },
    /// `type: string` with `enum` (and `enumNames`) or `oneOf`.
    Choice {
        options: Vec<Choice>,
        default: Option<String>,
        /// Written as `oneOf` (`{const, title}`), not `enum`/`enumNames`:
        /// written back the same way.
        one_of: bool,
    },
}

/// One option of a choice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    pub value: String,
    pub title: Option<String>,
}

impl Choice {
    /// What people see: its title, else its value.
    pub fn label(&self) -> &str {
        self.title.as_deref().unwrap_or(&self.value)
    }
}

/// The string formats a text field may require.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextFormat {
    Email,
    Uri,
    Date,
    DateTime,
}

impl TextFormat {
    fn parse(s: &str) -> Option<TextFormat> {
        Some(match s {
            "email" => TextFormat::Email,
            "uri" => TextFormat::Uri,
            "date" => TextFormat::Date,
            "date-time" => TextFormat::DateTime,
            _ => return None,
        })
    }

    /// The schema's word for it.
    pub fn name(self) -> &'static str {
        match self {
            TextFormat::Email => "email",
            TextFormat::Uri => "uri",
            TextFormat::Date => "date",
            TextFormat::DateTime => "date-time",
        }
    }

    /// What a value of this format looks like, for messages and hints.
    pub fn example(self) -> &'static str {
        match self {
            TextFormat::Email => "an e-mail address like ana@corp.example",
            TextFormat::Uri => "a URI like https://corp.example/x",
            TextFormat::Date => "a date like 2025-11-30",
            TextFormat::DateTime => "a date and time like 2025-11-30T09:30:00Z",
        }
    }

    fn admits(self, s: &str) -> bool {
        match self {
            TextFormat::Email => super::mail::address(s).is_some() && !s.starts_with("mailto:"),
            TextFormat::Uri => url::Url::parse(s).is_ok(),
            TextFormat::Date => NaiveDate::parse_from_str(s, "%Y-%m-%d").is_ok(),
            TextFormat::DateTime => DateTime::parse_from_rfc3339(s).is_ok(),
        }
    }
}

impl FieldKind {
    /// The value as the field keeps it, or what it must be ("must be at
    /// least 10"). Only typed JSON: a number for a number, `true` for a
    /// boolean (turning a web form's strings into these is the answer
    /// check's, `crate::gate::form`). A whole number given as `3.0` to an
    /// integer field is kept as `3`.
    pub fn admit(&self, v: &Value) -> Result<Value, String> {
        match self {
            FieldKind::Text {
                min_length,
                max_length,
                format,
                ..
            } => {
                let Value::String(s) = v else {
                    return Err(format!("must be text, not {}", json_kind(v)));
                };
                let n = s.chars().count() as u64;
                let max = max_length.unwrap_or(super::MAX_ANSWER_TEXT as u64);
                if let Some(min) = min_length.filter(|m| n < *m) {
                    return Err(format!(
                        "must be at least {min} characters long (it is {n})"
                    ));
                }
                if n > max {
                    return Err(format!("must be at most {max} characters long (it is {n})"));
                }
                if let Some(f) = format.filter(|f| !f.admits(s)) {
                    return Err(format!("must be {}", f.example()));
                }
                Ok(v.clone())
            }
            FieldKind::Number {
                integer,
                minimum,
                maximum,
                ..
            } => {
                let Value::Number(n) = v else {
                    return Err(format!(
                        "must be {}, not {}",
                        if *integer {
                            "a whole number"
                        } else {
                            "a number"
                        },
                        json_kind(v)
                    ));
                };
                let x = n.as_f64().unwrap_or(f64::NAN);
                let kept = if *integer {
                    match whole(n) {
                        Some(w) => w,
                        None => return Err(format!("must be a whole number, not {n}")),
                    }
                } else {
                    n.clone()
                };
                if let Some(min) = minimum.as_ref().filter(|m| x < m.as_f64().unwrap_or(x)) {
                    return Err(format!("must be at least {min}"));
                }
                if let Some(max) = maximum.as_ref().filter(|m| x > m.as_f64().unwrap_or(x)) {
                    return Err(format!("must be at most {max}"));
                }
                Ok(Value::Number(kept))
            }
            FieldKind::Boolean { .. } => match v {
                Value::Bool(_) => Ok(v.clone()),
                other => Err(format!("must be true or false, not {}", json_kind(other))),
            },
            FieldKind::Choice { options, .. } => match v {
                Value::String(s) if options.iter().any(|o| &o.value == s) => Ok(v.clone()),
                other => Err(format!(
                    "must be one of {}{}",
                    options
                        .iter()
                        .map(|o| format!("`{}`", o.value))
                        .collect::<Vec<_>>()
                        .join(", "),
                    match other {
                        Value::String(s) => format!(", not `{s}`"),
                        v => format!(", not {}", json_kind(v)),
                    }
                )),
            },
        }
    }

    /// The default, as typed JSON.
    pub fn default_value(&self) -> Option<Value> {
        match self {
            FieldKind::Text { default, .. } | FieldKind::Choice { default, .. } => {
                default.clone().map(Value::String)
            }
            FieldKind::Number { default, .. } => default.clone().map(Value::Number),
            FieldKind::Boolean { default } => default.map(Value::Bool),
        }
    }

    /// `text`, `number`, `integer`, `boolean` or `choice`: what rooms and
    /// messages call it.
    pub fn name(&self) -> &'static str {
        match self {
            FieldKind::Text { .. } => "text",
            FieldKind::Number { integer: true, .. } => "integer",
            FieldKind::Number { .. } => "number",
            FieldKind::Boolean { .. } => "boolean",
            FieldKind::Choice { .. } => "choice",
        }
    }
}

/// `n` as an integer when it is a whole number within i64/u64.
fn whole(n: &Number) -> Option<Number> {
    if n.is_i64() || n.is_u64() {
        return Some(n.clone());
    }
    let f = n.as_f64()?;
    (f.fract() == 0.0 && f.abs() < 9.0e15).then(|| Number::from(f as i64))
}

/// Filled-in values as people read them: `amount: 42, env: prod`.
pub fn shown(values: &Map<String, Value>) -> String {
    values
        .iter()
        .map(|(k, v)| match v {
            Value::String(s) => format!("{k}: {s}"),
            other => format!("{k}: {other}"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// How a JSON value is named in messages.
pub fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "true/false",
        Value::Number(_) => "a number",
        Value::String(_) => "text",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

impl Field {
    /// What people see: its title, else its name.
    pub fn label(&self) -> &str {
        self.title.as_deref().unwrap_or(&self.name)
    }

    /// "amount (integer, required)": how the CLI, messages and refusals
    /// list it.
    pub fn summary(&self) -> String {
        let mut s = format!("{} ({}", self.name, self.kind.name());
        if self.required {
            s.push_str(", required");
        }
        s.push(')');
        s
    }
}

impl Form {
    pub fn fields(&self) -> &[Field] {
        &self.fields
    }

    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// Every default, by field name: what a timeout that approves fills in.
    pub fn defaults(&self) -> Map<String, Value> {
        self.fields
            .iter()
            .filter_map(|f| f.kind.default_value().map(|v| (f.name.clone(), v)))
            .collect()
    }

    /// Required fields without a default: what nobody but a human can
    /// fill in (a timeout cannot approve such a form).
    pub fn needs_a_human(&self) -> Vec<&Field> {
        self.fields
            .iter()
            .filter(|f| f.required && f.kind.default_value().is_none())
            .collect()
    }

    /// "amount (integer, required), reason (text)": the fields, as
    /// refusals and the CLI list them.
    pub fn summary(&self) -> String {
        self.fields
            .iter()
            .map(Field::summary)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn form(v: Value) -> Result<Form, SchemaError> {
        Form::from_value(&v)
    }

    #[test]
    fn admit_types_bounds_lengths_formats_and_options() {
        let f = form(json!({"properties": {
            "n": {"type": "integer", "minimum": 1, "maximum": 9},
            "t": {"type": "string", "maxLength": 3},
            "e": {"type": "string", "format": "email"},
            "d": {"type": "string", "format": "date"},
            "u": {"type": "string", "format": "uri"},
            "dt": {"type": "string", "format": "date-time"},
            "c": {"type": "string", "oneOf": [{"const": "a"}]},
        }}))
        .unwrap();
        let k = |n: &str| &f.field(n).unwrap().kind;
        assert_eq!(k("n").admit(&json!(3.0)).unwrap(), json!(3));
        assert!(k("n").admit(&json!(10)).unwrap_err().contains("at most 9"));
        assert!(k("n").admit(&json!("3")).unwrap_err().contains("not text"));
        assert!(k("t")
            .admit(&json!("abcd"))
            .unwrap_err()
            .contains("at most 3"));
        assert!(k("e").admit(&json!("ana@corp.example")).is_ok());
        assert!(k("e").admit(&json!("ana")).is_err());
        assert!(k("d").admit(&json!("2025-11-30")).is_ok());
        assert!(k("d").admit(&json!("30/11/2025")).is_err());
        assert!(k("u").admit(&json!("https://x.example/a")).is_ok());
        assert!(k("u").admit(&json!("not a uri")).is_err());
        assert!(k("dt").admit(&json!("2025-11-30T09:30:00Z")).is_ok());
        assert!(k("dt").admit(&json!("2025-11-30")).is_err());
        assert!(k("c")
            .admit(&json!("b"))
            .unwrap_err()
            .contains("one of `a`"));
    }
}
