//! Checks a tool call's arguments against the tool's JSON Schema before the
//! call runs (edited arguments included).
//!
//! Validation uses the `jsonschema` crate, built without its HTTP and file
//! resolvers: tool schemas are self-contained, so no reference is ever
//! fetched. The validator is compiled per call; tool schemas are tiny.

use serde_json::Value;

/// The longest error message [`validate`] returns, in characters.
pub const MAX_MESSAGE_CHARS: usize = 500;

/// The longest single problem in that message, in characters.
const MAX_PROBLEM_CHARS: usize = 160;

/// `Ok(())` when `args` satisfies `schema`; otherwise a short message
/// listing the failing paths (at most [`MAX_MESSAGE_CHARS`] characters),
/// e.g. `/url: 5 is not of type "string"; "method" is a required property`.
pub fn validate(schema: &Value, args: &Value) -> Result<(), String> {
    let validator = jsonschema::validator_for(schema).map_err(|e| {
        cut(
            &format!("the tool's schema is invalid: {e}"),
            MAX_MESSAGE_CHARS,
        )
    })?;
    let problems: Vec<String> = validator
        .iter_errors(args)
        .map(|e| {
            let path = e.instance_path().as_str();
            let text = if path.is_empty() {
                e.to_string()
            } else {
                format!("{path}: {e}")
            };
            cut(&text, MAX_PROBLEM_CHARS)
        })
        .collect();
    if problems.is_empty() {
        return Ok(());
    }
    Err(join_bounded(&problems, MAX_MESSAGE_CHARS))
}

/// `problems` joined with `; `, stopping before `limit` characters and
/// saying how many were left out.
fn join_bounded(problems: &[String], limit: usize) -> String {
    let mut out = String::new();
    for (i, p) in problems.iter().enumerate() {
        let sep = if i == 0 { "" } else { "; " };
        let rest = problems.len() - i;
        // Room for this problem and a possible "; … (N more)" suffix.
        let suffix = format!("; … ({} more)", rest - 1);
        let needed = out.chars().count() + sep.len() + p.chars().count();
        let fits_alone = rest == 1 && needed <= limit;
        let fits_with_suffix = needed + suffix.chars().count() <= limit;
        if fits_alone || fits_with_suffix {
            out.push_str(sep);
            out.push_str(p);
            continue;
        }
        if i == 0 {
            // Even the first problem is too long: cut it.
            return cut(p, limit);
        }
        out.push_str(&format!("; … ({rest} more)"));
        break;
    }
    out
}

/// At most `max` characters of `s`, with `…` marking a cut.
fn cut(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "url": {"type": "string"},
                "method": {"type": "string", "enum": ["GET", "POST"]},
                "count": {"type": "integer", "minimum": 1},
                "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1}
            },
            "required": ["url", "method"],
            "additionalProperties": false
        })
    }

    #[test]
    fn accepts_valid_arguments() {
        assert_eq!(
            validate(&schema(), &json!({"url": "x", "method": "GET"})),
            Ok(())
        );
        assert_eq!(
            validate(
                &schema(),
                &json!({"url": "x", "method": "POST", "count": 2, "tags": ["a"]})
            ),
            Ok(())
        );
    }

    #[test]
    fn rejects_missing_required_fields() {
        let err = validate(&schema(), &json!({"url": "x"})).expect_err("must fail");
        assert!(err.contains("\"method\" is a required property"), "{err}");
    }

    #[test]
    fn rejects_wrong_types_naming_the_path() {
        let err = validate(&schema(), &json!({"url": 5, "method": "GET"})).expect_err("must fail");
        assert!(err.starts_with("/url: "), "{err}");
        assert!(err.contains("\"string\""), "{err}");
        let err = validate(
            &schema(),
            &json!({"url": "x", "method": "GET", "tags": [1]}),
        )
        .expect_err("must fail");
        assert!(err.contains("/tags/0"), "{err}");
        let err =
            validate(&schema(), &json!({"url": "x", "method": "DELETE"})).expect_err("must fail");
        assert!(err.contains("/method"), "{err}");
        let err = validate(&schema(), &json!("not an object")).expect_err("must fail");
        assert!(err.contains("object"), "{err}");
    }

    #[test]
    fn rejects_unknown_properties() {
        let err = validate(
            &schema(),
            &json!({"url": "x", "method": "GET", "evil": true}),
        )
        .expect_err("must fail");
        assert!(err.contains("evil"), "{err}");
    }

    #[test]
    fn lists_several_failures_briefly() {
        let err =
            validate(&schema(), &json!({"url": 1, "count": 0, "extra": 1})).expect_err("must fail");
        assert!(err.contains("/url"), "{err}");
        assert!(err.contains("/count"), "{err}");
        assert!(err.contains("method"), "{err}");
        assert!(err.chars().count() <= MAX_MESSAGE_CHARS);

        // Huge values and many problems stay within the bound.
        let long = "x".repeat(10_000);
        let mut many = serde_json::Map::new();
        for i in 0..100 {
            many.insert(format!("unknown_{i}_{long}"), json!(long));
        }
        let err = validate(&schema(), &Value::Object(many)).expect_err("must fail");
        assert!(err.chars().count() <= MAX_MESSAGE_CHARS, "{}", err.len());
    }

    #[test]
    fn join_bounded_counts_what_it_leaves_out() {
        let problems: Vec<String> = (0..50).map(|i| format!("problem number {i}")).collect();
        let joined = join_bounded(&problems, 100);
        assert!(joined.chars().count() <= 100, "{joined}");
        assert!(joined.starts_with("problem number 0; "), "{joined}");
        assert!(joined.ends_with("more)"), "{joined}");
        assert_eq!(join_bounded(&["a".into(), "b".into()], 100), "a; b");
    }

    #[test]
    fn an_invalid_schema_is_an_error_not_a_panic() {
        let err = validate(&json!({"type": 12}), &json!({})).expect_err("must fail");
        assert!(err.contains("schema is invalid"), "{err}");
    }
}
