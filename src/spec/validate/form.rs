//! A manual gate's `form:` and `allow_trust:` — the values approving fills
//! in, and whether trust approves too. The form is parsed by the model's
//! one parser ([`crate::model::form::Form::parse`]), each problem reported
//! at the line of the part at fault (the form, its `type`, a property,
//! `required`). And what the rest of the gate says must fit it: a
//! timeout that approves fills in the defaults, so every required field
//! needs one; trust approves without values, so it does not go with a form.

use super::raw;
use super::{at, Validator};
use crate::model::form::{Entries, Form, Schema, SchemaAt};
use crate::spec::Fallback;

const HINT: &str = "form: {properties: {amount: {type: integer, minimum: 1, title: Amount}, env: {type: string, enum: [prod, staging]}}, required: [amount]}";

impl Validator {
    /// The gate's form (`None` without one, or when it is refused) and
    /// `allow_trust`, checked against its fallback. `loc`: the gate's.
    pub(super) fn gate_form(
        &mut self,
        s: &raw::Step,
        label: &str,
        loc: (u32, u32),
        fallback: Fallback,
    ) -> (Option<Form>, bool) {
        let allow_trust = s.allow_trust.as_ref().is_some_and(|t| t.value);
        let Some(f) = &s.form else {
            return (None, allow_trust);
        };
        let raw = &f.value;
        let schema = Schema {
            kind: raw.kind.as_ref().map(|k| k.value.clone()),
            properties: Entries(
                raw.properties
                    .as_ref()
                    .map(|p| {
                        p.value
                            .0
                            .iter()
                            .map(|(k, v)| (k.clone(), v.value.clone()))
                            .collect()
                    })
                    .unwrap_or_default(),
            ),
            required: raw.required.as_ref().map(|r| r.value.clone()),
        };
        let form = match Form::parse(&schema) {
            Ok(form) => form,
            Err(e) => {
                let floc = at(f);
                let where_ = match e.at {
                    SchemaAt::Form => raw.properties.as_ref().map(at).unwrap_or(floc),
                    SchemaAt::Type => raw.kind.as_ref().map(at).unwrap_or(floc),
                    SchemaAt::Required => raw.required.as_ref().map(at).unwrap_or(floc),
                    SchemaAt::Property(i) => raw
                        .properties
                        .as_ref()
                        .and_then(|p| p.value.0.get(i))
                        .map(|(_, v)| at(v))
                        .unwrap_or(floc),
                };
                self.error(
                    where_,
                    format!("{label}: form: {}", e.message),
                    Some(HINT.into()),
                );
                return (None, allow_trust);
            }
        };
        if let Some(t) = s.allow_trust.as_ref().filter(|t| t.value) {
            self.error(
                at(t),
                format!("{label}: allow_trust and form do not go together: trust approves without the values the form asks for"),
                None,
            );
        }
        let default_approves = s
            .default
            .as_ref()
            .map(|d| d.value.trim().to_ascii_lowercase())
            .is_some_and(|d| d == "approve" || d == "approved");
        let approves =
            fallback == Fallback::Continue || (fallback == Fallback::Default && default_approves);
        let missing = form.needs_a_human();
        if approves && !missing.is_empty() {
            let floc = s.fallback_action.as_ref().map(at).unwrap_or(loc);
            self.error(
                floc,
                format!(
                    "{label}: a timeout that approves fills in the form's defaults, but {} required and {} no default",
                    missing
                        .iter()
                        .map(|f| format!("`{}`", f.name))
                        .collect::<Vec<_>>()
                        .join(", "),
                    if missing.len() == 1 { "has" } else { "have" }
                ),
                Some("give each required field a `default`, or use fallback_action: reject".into()),
            );
        }
        (Some(form), false)
    }
}

#[cfg(test)]
mod tests {
    use super::super::testkit::{errors, gate_of, spec};

    fn gate(keys: &str) -> String {
        spec(&format!(
            "      - type: manual_gate\n        prompt: ok?\n{keys}"
        ))
    }

    #[test]
    fn a_form_and_trust_are_read_from_a_manual_gate() {
        let g = gate_of(&gate(
            "        form:\n          properties:\n            zeta: {type: string}\n            amount: {type: integer, minimum: 1}\n          required: [amount]\n",
        ));
        let form = g.form.expect("a form");
        let names: Vec<&str> = form.fields().iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["zeta", "amount"]);
        assert!(!g.allow_trust);
        let g = gate_of(&gate("        allow_trust: true\n"));
        assert!(g.allow_trust && g.form.is_none());
    }

    /// The line and message of each diagnostic.
    fn problems(text: &str) -> Vec<(u32, String)> {
        errors(text)
            .into_iter()
            .map(|d| (d.line, d.message))
            .collect()
    }

    #[test]
    fn bad_forms_are_refused_at_their_line() {
        // The gate's keys start at line 15 (testkit::spec).
        let e = problems(&gate(
            "        form:\n          properties:\n            ok: {type: string}\n            nested:\n              type: object\n",
        ));
        assert!(
            e.iter()
                .any(|(l, m)| *l == 19 && m.contains("`nested`") && m.contains("flat")),
            "{e:?}"
        );
        let e = problems(&gate(
            "        form:\n          properties:\n            a: {type: string}\n          required: [b]\n",
        ));
        assert!(
            e.iter().any(|(l, m)| *l == 18 && m.contains("`b`")),
            "{e:?}"
        );
        let e = problems(&gate(
            "        form:\n          properties:\n            a: {type: string, enum: [prod, staging], default: dev}\n",
        ));
        assert!(
            e.iter().any(|(l, m)| *l == 17 && m.contains("default")),
            "{e:?}"
        );
        let e = problems(&gate(
            "        fallback_action: approve\n        timeout_minutes: 5\n        form:\n          properties:\n            a: {type: string}\n          required: [a]\n",
        ));
        assert!(
            e.iter().any(|(l, m)| *l == 15 && m.contains("no default")),
            "{e:?}"
        );
        let e = problems(&gate(
            "        allow_trust: true\n        form:\n          properties:\n            a: {type: string}\n",
        ));
        assert!(
            e.iter()
                .any(|(l, m)| *l == 15 && m.contains("do not go together")),
            "{e:?}"
        );
        let e = problems(&gate(
            "        form:\n          title: x\n          properties: {}\n",
        ));
        assert!(e.iter().any(|(_, m)| m.contains("title")), "{e:?}");
        let e = problems(&spec(
            "      - type: hitl\n        prompt: ok?\n        allow_trust: true\n        form:\n          properties:\n            a: {type: string}\n",
        ));
        assert!(
            e.iter().any(|(_, m)| m.contains("does not take")
                && m.contains("form")
                && m.contains("allow_trust")),
            "{e:?}"
        );
    }
}
