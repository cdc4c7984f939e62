//! Validation of the `inputs` section: `required:` / `optional:` declare
//! each input as a type name or `{type, description, default, enum}`;
//! `values:` holds concrete values, taken as written.
//!
//! Values are typed and checked against the declarations when a run
//! resolves its variables (`Spec::resolve_variables`), not here, because
//! `--var` overrides only exist then.

use serde_json::{Map, Value};

use super::raw;
use super::{at, Validator};
use crate::spec::{InputDecl, InputType};

impl Validator {
    pub(super) fn inputs(
        &mut self,
        inputs: Option<&raw::Inputs>,
    ) -> (Vec<InputDecl>, Map<String, Value>) {
        let mut decls = Vec::new();
        let Some(inputs) = inputs else {
            return (decls, Map::new());
        };
        for (section, required) in [(&inputs.required, true), (&inputs.optional, false)] {
            let Some(section) = section else { continue };
            for (name, spanned) in &section.value {
                let v = &spanned.value;
                let (ty, default, allowed) = match v {
                    Value::String(t) => (parse_type(t), None, None),
                    Value::Object(o) => {
                        let ty = o.get("type").and_then(Value::as_str).map(parse_type);
                        let unknown: Vec<&String> = o
                            .keys()
                            .filter(|k| {
                                !["type", "description", "default", "enum"].contains(&k.as_str())
                            })
                            .collect();
                        if !unknown.is_empty() {
                            self.error(
                                at(spanned),
                                format!("input `{name}` has unknown keys: {unknown:?}"),
                                Some(
                                    "an input is a type name or {type, description, default, enum}"
                                        .into(),
                                ),
                            );
                        }
                        let allowed = o.get("enum").and_then(Value::as_array).cloned();
                        (
                            ty.unwrap_or(Some(InputType::String)),
                            o.get("default").cloned(),
                            allowed,
                        )
                    }
                    _ => (None, None, None),
                };
                match ty {
                    Some(ty) => decls.push(InputDecl {
                        name: name.clone(),
                        ty,
                        required,
                        default,
                        allowed,
                    }),
                    None => self.error(
                        at(spanned),
                        format!("input `{name}` has an invalid type: {v}"),
                        Some("types: string, number, integer, boolean, array, object".into()),
                    ),
                }
            }
        }
        (decls, inputs.values.clone().unwrap_or_default())
    }
}

fn parse_type(t: &str) -> Option<InputType> {
    Some(match t.trim() {
        "string" | "str" => InputType::String,
        "number" | "float" => InputType::Number,
        "integer" | "int" => InputType::Integer,
        "boolean" | "bool" => InputType::Boolean,
        "array" | "list" => InputType::Array,
        "object" | "dict" => InputType::Object,
        _ => return None,
    })
}
