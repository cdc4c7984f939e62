//! Answers to a gate with a form: the one place the values a human sends
//! are checked, typed and completed, whichever room they came from.
//!
//! A web form, a Slack modal, a Teams card and `--value NAME=VALUE` send
//! text; the API sends JSON. [`fill`] turns each value into its field's
//! type (`"42"` → 42 for a number or integer, `"true"`/`"on"` → true for a
//! boolean; empty text is no value), fills in defaults for what is
//! missing, refuses what is required and missing, what a field does not
//! admit ([`FieldKind::admit`]: types, options, bounds, lengths, formats)
//! and names it does not know — every problem at once, each naming its
//! field, so a room can put each error under its input. The intake
//! records the values as [`fill`] returns them ([`settle`]); [`super::interpret`]
//! reads them as the gate's response. Rooms render the form and parse
//! what came back; none of them checks a value.

use serde_json::{Map, Number, Value};

use crate::model::form::{FieldError, FieldKind, Form};
use crate::model::{Decision, OpenGate};

/// The values as the gate records them: each given value typed and
/// admitted by its field, defaults for the missing ones; or every
/// problem, each naming its field.
pub fn fill(
    form: &Form,
    given: &Map<String, Value>,
) -> Result<Map<String, Value>, Vec<FieldError>> {
    let mut out = Map::new();
    let mut errors = Vec::new();
    let mut refuse = |field: &str, message: String| {
        errors.push(FieldError {
            field: field.to_string(),
            message,
        })
    };
    for f in form.fields() {
        let typed = match given.get(&f.name) {
            None => None,
            Some(v) => match coerce(&f.kind, v) {
                Ok(t) => t,
                Err(why) => {
                    refuse(&f.name, why);
                    continue;
                }
            },
        };
        match typed.or_else(|| f.kind.default_value()) {
            Some(v) => match f.kind.admit(&v) {
                Ok(kept) => {
                    out.insert(f.name.clone(), kept);
                }
                Err(why) => refuse(&f.name, why),
            },
            None if f.required => refuse(&f.name, "is required".into()),
            None => {}
        }
    }
    for name in given.keys().filter(|k| form.field(k).is_none()) {
        refuse(
            name,
            format!(
                "is not a field of this form (fields: {})",
                form.fields()
                    .iter()
                    .map(|f| f.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        );
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

/// A value as sent, in its field's type: text is read as the field's
/// kind; empty text and `null` are no value (`Ok(None)`); typed JSON is
/// left for the field to admit.
fn coerce(kind: &FieldKind, v: &Value) -> Result<Option<Value>, String> {
    let s = match v {
        Value::Null => return Ok(None),
        Value::String(s) => s.trim(),
        other => return Ok(Some(other.clone())),
    };
    if s.is_empty() {
        return Ok(None);
    }
    Ok(Some(match kind {
        FieldKind::Text { .. } | FieldKind::Choice { .. } => Value::String(s.to_string()),
        FieldKind::Number { integer, .. } => {
            let n = if let Ok(i) = s.parse::<i64>() {
                Some(Number::from(i))
            } else {
                s.parse::<f64>()
                    .ok()
                    .filter(|x| x.is_finite())
                    .and_then(Number::from_f64)
            };
            match n {
                Some(n) => Value::Number(n),
                None if *integer => return Err(format!("must be a whole number, not `{s}`")),
                None => return Err(format!("must be a number, not `{s}`")),
            }
        }
        FieldKind::Boolean { .. } => match s.to_ascii_lowercase().as_str() {
            "true" | "on" | "yes" | "y" | "1" => Value::Bool(true),
            "false" | "off" | "no" | "n" | "0" => Value::Bool(false),
            _ => return Err(format!("must be true or false, not `{s}`")),
        },
    }))
}

/// The decision as gate `gate` records it: a fill of its form with the
/// values [`fill`] makes of what was sent (`Ok(Some)`), anything else
/// as it is (`Ok(None)`: [`super::interpret`] judges it). `Err`: the
/// values the form refuses; nothing is recorded.
pub fn settle(gate: &OpenGate, decision: &Decision) -> Result<Option<Decision>, Vec<FieldError>> {
    match (&gate.form, decision) {
        (Some(form), Decision::Fill { values }) => Ok(Some(Decision::Fill {
            values: fill(form, values)?,
        })),
        _ => Ok(None),
    }
}

/// What a plain approve of a gate with a form is told: the fields to
/// fill in, and how.
pub fn asks(gate: &str, form: &Form) -> String {
    format!(
        "gate `{gate}` asks for values: approve by filling in {} (--value NAME=VALUE; in the API `\"values\"`)",
        form.summary()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn form() -> Form {
        Form::from_value(&json!({"properties": {
            "amount": {"type": "integer", "minimum": 1, "maximum": 100},
            "ratio": {"type": "number"},
            "urgent": {"type": "boolean", "default": false},
            "env": {"type": "string", "enum": ["prod", "staging"], "default": "staging"},
            "why": {"type": "string", "maxLength": 5},
            "mail": {"type": "string", "format": "email"},
        }, "required": ["amount", "why"]}))
        .expect("form")
    }

    fn map(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => panic!("not an object"),
        }
    }

    fn errors(v: Value) -> Vec<(String, String)> {
        fill(&form(), &map(v))
            .expect_err("refused")
            .into_iter()
            .map(|e| (e.field, e.message))
            .collect()
    }

    #[test]
    fn strings_are_typed_and_defaults_filled_in() {
        let got = fill(
            &form(),
            &map(
                json!({"amount": " 42 ", "ratio": "2.5", "why": "ok", "urgent": "on", "mail": ""}),
            ),
        )
        .expect("filled");
        assert_eq!(
            Value::Object(got),
            json!({"amount": 42, "ratio": 2.5, "why": "ok", "urgent": true, "env": "staging"})
        );
        for (text, want) in [
            ("true", true),
            ("ON", true),
            ("1", true),
            ("off", false),
            ("no", false),
        ] {
            let got = fill(
                &form(),
                &map(json!({"amount": 1, "why": "x", "urgent": text})),
            )
            .unwrap();
            assert_eq!(got["urgent"], json!(want), "{text}");
        }
        // Typed JSON passes as it is; a whole float is an integer.
        let got = fill(
            &form(),
            &map(json!({"amount": 7.0, "why": "x", "urgent": true})),
        )
        .unwrap();
        assert_eq!(got["amount"], json!(7));
        // Filling what was filled changes nothing (the engine reads it again).
        let again = fill(&form(), &got).unwrap();
        assert_eq!(again, got);
    }

    #[test]
    fn every_problem_is_named_by_its_field() {
        let e = errors(json!({"amount": "ten", "urgent": "maybe", "nope": 1, "env": "dev"}));
        let fields: Vec<&str> = e.iter().map(|(f, _)| f.as_str()).collect();
        // In the form's order (json! sorts the properties), unknown names last.
        assert_eq!(fields, ["amount", "env", "urgent", "why", "nope"], "{e:?}");
        assert!(e[0].1.contains("whole number"), "{e:?}");
        assert!(e[1].1.contains("`prod`"), "{e:?}");
        assert!(e[2].1.contains("true or false"), "{e:?}");
        assert_eq!(e[3].1, "is required");
        assert!(e[4].1.contains("not a field"), "{e:?}");
        let e = errors(json!({"amount": 101, "why": "toolong", "mail": "x"}));
        assert!(e[0].1.contains("at most 100"), "{e:?}");
        assert!(
            e[1].1.contains("mail") || e[1].1.contains("e-mail"),
            "{e:?}"
        );
        assert!(
            e.iter().any(|(f, m)| f == "why" && m.contains("at most 5")),
            "{e:?}"
        );
        let e = errors(json!({"amount": "1.5", "why": "x"}));
        assert!(e[0].1.contains("whole number"), "{e:?}");
        let e = errors(json!({"amount": "", "why": "  "}));
        assert_eq!(e.len(), 2, "empty text is no value: {e:?}");
    }

    #[test]
    fn settle_types_a_fill_and_leaves_the_rest() {
        let mut g = OpenGate::for_tests("g");
        g.form = Some(form());
        let d = Decision::Fill {
            values: map(json!({"amount": "3", "why": "x"})),
        };
        match settle(&g, &d).unwrap() {
            Some(Decision::Fill { values }) => assert_eq!(values["amount"], json!(3)),
            other => panic!("{other:?}"),
        }
        assert_eq!(settle(&g, &Decision::Approve).unwrap(), None);
        let bad = Decision::Fill {
            values: map(json!({"amount": "x"})),
        };
        assert_eq!(settle(&g, &bad).unwrap_err().len(), 2);
        g.form = None;
        assert_eq!(settle(&g, &d).unwrap(), None);
    }
}
