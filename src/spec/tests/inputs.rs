//! Inputs: declarations located at the input, and the run's variables
//! (defaults, `inputs.values`, `--var` overrides typed and checked).

use super::*;

/// An input with a bad declaration should be reported on its own line, not
/// on the first entry of its section.
#[test]
fn input_declaration_errors_point_at_the_input() {
    let text = concat!(
        "version: 0\n",                         // 1
        "name: t\n",                            // 2
        "runtime:\n",                           // 3
        "  provider: echo\n",                   // 4
        "inputs:\n",                            // 5
        "  optional:\n",                        // 6
        "    n: {type: integer, default: 3}\n", // 7
        "    flag: boolean\n",                  // 8
        "    bogus: {type: float64}\n",         // 9
        "agents:\n",                            // 10
        "  a:\n",                               // 11
        "    prompt: hi\n",                     // 12
        "pattern:\n",                           // 13
        "  type: chain\n",                      // 14
        "  config:\n",                          // 15
        "    steps:\n",                         // 16
        "      - agent: a\n",                   // 17
    );
    let d = only(text);
    assert!(
        d.message.contains("input `bogus` has an invalid type"),
        "{d}"
    );
    assert!(d.hint.as_deref().is_some_and(|h| h.contains("integer")));
    // The key (column 5) or its value (column 12) would both be right.
    assert!(
        d.line == 9 && (d.column == 5 || d.column == 12),
        "expected f.yaml:9:5 or f.yaml:9:12 (the `bogus` input), got {}:{}",
        d.line,
        d.column
    );
}

const INPUTS: &str = concat!(
    "version: 0\n",
    "name: typed\n",
    "runtime:\n",
    "  provider: echo\n",
    "inputs:\n",
    "  required:\n",
    "    topic: string\n",
    "  optional:\n",
    "    n: {type: integer, default: 3, enum: [1, 2, 3, 5]}\n",
    "    flag:\n",
    "      type: boolean\n",
    "      description: a switch\n",
    "      default: false\n",
    "    ratio: number\n",
    "    tags: array\n",
    "    opts: object\n",
    "    level: {type: string, enum: [low, high]}\n",
    "agents:\n",
    "  a:\n",
    "    prompt: hi\n",
    "pattern:\n",
    "  type: chain\n",
    "  config:\n",
    "    steps:\n",
    "      - agent: a\n",
);

fn vars(spec: &Spec, overrides: &[(&str, &str)]) -> crate::Result<serde_json::Map<String, Value>> {
    let o: Vec<(String, String)> = overrides
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    spec.resolve_variables(&o)
}

#[track_caller]
fn usage_error(r: crate::Result<serde_json::Map<String, Value>>) -> String {
    match r {
        Err(e @ Error::Usage(_)) => {
            assert_eq!(e.exit_code(), exit::USAGE);
            e.to_string()
        }
        other => panic!("expected Error::Usage, got {other:?}"),
    }
}

#[test]
fn inputs_with_types_defaults_and_enums() {
    let spec = valid(INPUTS);
    let decl = |name: &str| {
        spec.inputs
            .iter()
            .find(|d| d.name == name)
            .unwrap_or_else(|| panic!("no input {name}"))
    };
    assert!(decl("topic").required);
    assert_eq!(decl("topic").ty, InputType::String);
    let n = decl("n");
    assert!(!n.required);
    assert_eq!(n.ty, InputType::Integer);
    assert_eq!(n.default, Some(json!(3)));
    assert_eq!(
        n.allowed,
        Some(vec![json!(1), json!(2), json!(3), json!(5)])
    );
    assert_eq!(decl("flag").ty, InputType::Boolean);
    assert_eq!(decl("flag").default, Some(json!(false)));
    assert_eq!(decl("ratio").ty, InputType::Number);
    assert_eq!(decl("tags").ty, InputType::Array);
    assert_eq!(decl("opts").ty, InputType::Object);
    assert_eq!(
        decl("level").allowed,
        Some(vec![json!("low"), json!("high")])
    );
}

#[test]
fn resolve_variables_applies_defaults_values_and_overrides() {
    let spec = valid(INPUTS);
    let v = vars(&spec, &[("topic", "sled")]).unwrap();
    assert_eq!(v.get("topic"), Some(&json!("sled")));
    assert_eq!(v.get("n"), Some(&json!(3)), "default applied");
    assert_eq!(v.get("flag"), Some(&json!(false)), "default applied");
    assert_eq!(v.get("ratio"), None, "no default, not given");

    let v = vars(
        &spec,
        &[
            ("topic", "x"),
            ("n", " 5 "),
            ("flag", "yes"),
            ("ratio", "0.25"),
            ("tags", "[1, \"a\"]"),
            ("opts", "{\"k\": true}"),
            ("level", "high"),
            ("extra", "42"),
        ],
    )
    .unwrap();
    assert_eq!(v.get("n"), Some(&json!(5)));
    assert_eq!(v.get("flag"), Some(&json!(true)));
    assert_eq!(v.get("ratio"), Some(&json!(0.25)));
    assert_eq!(v.get("tags"), Some(&json!([1, "a"])));
    assert_eq!(v.get("opts"), Some(&json!({"k": true})));
    assert_eq!(v.get("level"), Some(&json!("high")));
    assert_eq!(v.get("extra"), Some(&json!("42")), "undeclared: a string");

    // `inputs.values` sit between defaults and --var.
    let with_values = INPUTS.replace(
        "agents:\n",
        "  values:\n    topic: from-file\n    n: 2\nagents:\n",
    );
    let spec = valid(&with_values);
    let v = vars(&spec, &[]).unwrap();
    assert_eq!(v.get("topic"), Some(&json!("from-file")));
    assert_eq!(v.get("n"), Some(&json!(2)));
    let v = vars(&spec, &[("n", "1")]).unwrap();
    assert_eq!(v.get("n"), Some(&json!(1)));
}

#[test]
fn var_coercion_errors_name_the_input_and_type() {
    let spec = valid(INPUTS);
    let msg = usage_error(vars(&spec, &[("topic", "x"), ("n", "abc")]));
    assert!(msg.contains("--var n=abc"), "{msg}");
    assert!(msg.contains("not an integer"), "{msg}");
    assert!(msg.contains("input `n`"), "{msg}");
    let msg = usage_error(vars(&spec, &[("topic", "x"), ("n", "2.5")]));
    assert!(msg.contains("not an integer"), "{msg}");

    let msg = usage_error(vars(&spec, &[("topic", "x"), ("flag", "maybe")]));
    assert!(msg.contains("--var flag=maybe"), "{msg}");
    assert!(msg.contains("not a boolean"), "{msg}");
    assert!(msg.contains("input `flag`"), "{msg}");

    let msg = usage_error(vars(&spec, &[("topic", "x"), ("ratio", "lots")]));
    assert!(msg.contains("not a number"), "{msg}");
    let msg = usage_error(vars(&spec, &[("topic", "x"), ("tags", "{\"a\": 1}")]));
    assert!(msg.contains("not an array"), "{msg}");
    let msg = usage_error(vars(&spec, &[("topic", "x"), ("opts", "[")]));
    assert!(msg.contains("not valid JSON"), "{msg}");

    assert_eq!(coerce("FALSE", InputType::Boolean), Ok(json!(false)));
    assert_eq!(coerce("0", InputType::Boolean), Ok(json!(false)));
    assert_eq!(coerce("-7", InputType::Integer), Ok(json!(-7)));
    assert!(coerce("NaN", InputType::Number).is_err());
}

#[test]
fn enum_violations_are_usage_errors() {
    let spec = valid(INPUTS);
    let msg = usage_error(vars(&spec, &[("topic", "x"), ("n", "4")]));
    assert!(msg.contains("input `n` is 4"), "{msg}");
    assert!(msg.contains("not one of [1,2,3,5]"), "{msg}");
    let msg = usage_error(vars(&spec, &[("topic", "x"), ("level", "medium")]));
    assert!(msg.contains("input `level`"), "{msg}");
    assert!(msg.contains("\"medium\""), "{msg}");
    assert!(msg.contains("[\"low\",\"high\"]"), "{msg}");
}

#[test]
fn missing_required_inputs_are_named() {
    let spec = valid(INPUTS);
    let msg = usage_error(vars(&spec, &[]));
    assert_eq!(msg, "missing required input: topic (pass --var topic=...)");
    let two = INPUTS.replace("  optional:\n", "    audience: string\n  optional:\n");
    let spec = valid(&two);
    let msg = usage_error(vars(&spec, &[]));
    assert!(msg.starts_with("missing required inputs: "), "{msg}");
    assert!(msg.contains("audience") && msg.contains("topic"), "{msg}");
    assert!(msg.contains("--var audience=..."), "{msg}");
}

#[test]
fn parse_var_splits_on_the_first_equals() {
    assert_eq!(parse_var("q=a=b"), Ok(("q".to_string(), "a=b".to_string())));
    assert_eq!(parse_var(" k =v"), Ok(("k".to_string(), "v".to_string())));
    assert!(parse_var("novalue").is_err());
    assert!(parse_var("=v").is_err());
}
