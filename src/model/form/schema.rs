//! A form's JSON Schema, as it is written and sent — [`Schema`], its
//! properties in their order ([`Entries`]) — and the one parser that
//! turns it into a [`Form`] or says why not and where ([`SchemaError`],
//! [`SchemaAt`]: a spec points at the line of the part at fault). A
//! `Form` serializes back to the same shape.

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{json, Map, Number, Value};

use super::{
    Choice, Field, FieldKind, Form, TextFormat, MAX_DESCRIPTION, MAX_FIELDS, MAX_NAME, MAX_OPTIONS,
    MAX_OPTION_VALUE, MAX_TITLE,
};

/// A JSON object's entries in the order they were written.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Entries<V>(pub Vec<(String, V)>);

impl<'de, V: Deserialize<'de>> Deserialize<'de> for Entries<V> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Ordered<V>(std::marker::PhantomData<V>);
        impl<'de, V: Deserialize<'de>> Visitor<'de> for Ordered<V> {
            type Value = Entries<V>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object (a map of names to properties)")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Entries<V>, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = map.next_entry::<String, V>()? {
                    out.push((k, v));
                }
                Ok(Entries(out))
            }
        }
        d.deserialize_map(Ordered(std::marker::PhantomData))
    }
}

impl<V: Serialize> Serialize for Entries<V> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

/// A form as JSON Schema, the shape it is written and sent in.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Schema {
    /// `object`, or absent.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<Value>,
    #[serde(default)]
    pub properties: Entries<Value>,
    /// Names of properties that must be given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<Value>,
}

/// Where in a schema a problem is, so a spec can point at its line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemaAt {
    /// The form as a whole (no properties, too many).
    Form,
    /// Its `type`.
    Type,
    /// The n-th property (0-based, in the order written).
    Property(usize),
    /// Its `required` list.
    Required,
}

/// Why a schema is not a form this service can ask.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct SchemaError {
    pub at: SchemaAt,
    pub message: String,
}

fn fail<T>(at: SchemaAt, message: impl Into<String>) -> Result<T, SchemaError> {
    Err(SchemaError {
        at,
        message: message.into(),
    })
}

impl Form {
    /// The form a schema describes, or why not (and where).
    pub fn parse(schema: &Schema) -> Result<Form, SchemaError> {
        match &schema.kind {
            None => {}
            Some(Value::String(t)) if t == "object" => {}
            Some(Value::String(t)) if t == "array" => {
                return fail(
                    SchemaAt::Type,
                    "a form is an object of values, not an array (type: object)",
                )
            }
            Some(other) => {
                return fail(
                    SchemaAt::Type,
                    format!("a form's type is `object`, not {other}"),
                )
            }
        }
        let required: Vec<String> = match &schema.required {
            None => Vec::new(),
            Some(Value::Array(names)) => {
                let mut out = Vec::new();
                for n in names {
                    match n {
                        Value::String(s) => out.push(s.clone()),
                        other => {
                            return fail(
                                SchemaAt::Required,
                                format!("`required` lists property names, not {other}"),
                            )
                        }
                    }
                }
                out
            }
            Some(other) => {
                return fail(
                    SchemaAt::Required,
                    format!("`required` is a list of property names, not {other}"),
                )
            }
        };
        let props = &schema.properties.0;
        if props.is_empty() {
            return fail(
                SchemaAt::Form,
                "a form asks for at least one value: `properties` names none",
            );
        }
        if props.len() > MAX_FIELDS {
            return fail(
                SchemaAt::Form,
                format!(
                    "a form has at most {MAX_FIELDS} properties; this one has {}",
                    props.len()
                ),
            );
        }
        let mut fields: Vec<Field> = Vec::with_capacity(props.len());
        for (i, (name, v)) in props.iter().enumerate() {
            let at = SchemaAt::Property(i);
            if let Err(why) = check_name(name) {
                return fail(at, format!("property `{name}`: {why}"));
            }
            if fields.iter().any(|f| &f.name == name) {
                return fail(at, format!("property `{name}` is listed twice"));
            }
            let field =
                Field::parse(name, v, required.contains(name)).map_err(|why| SchemaError {
                    at,
                    message: format!("property `{name}`: {why}"),
                })?;
            fields.push(field);
        }
        if let Some(r) = required
            .iter()
            .find(|r| !fields.iter().any(|f| &f.name == *r))
        {
            return fail(
                SchemaAt::Required,
                format!(
                    "`required` names `{r}`, which is not a property (properties: {})",
                    fields
                        .iter()
                        .map(|f| f.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            );
        }
        Ok(Form { fields })
    }

    /// The form a JSON value describes (an approval request's `"form"`).
    pub fn from_value(v: &Value) -> Result<Form, SchemaError> {
        let schema: Schema = serde_json::from_value(v.clone()).map_err(|e| SchemaError {
            at: SchemaAt::Form,
            message: format!("not a form's JSON Schema ({e})"),
        })?;
        Form::parse(&schema)
    }

    /// The form as JSON Schema (the properties in their order).
    pub fn schema(&self) -> Schema {
        let required: Vec<Value> = self
            .fields
            .iter()
            .filter(|f| f.required)
            .map(|f| Value::String(f.name.clone()))
            .collect();
        Schema {
            kind: Some(json!("object")),
            properties: Entries(
                self.fields
                    .iter()
                    .map(|f| (f.name.clone(), f.to_json()))
                    .collect(),
            ),
            required: (!required.is_empty()).then_some(Value::Array(required)),
        }
    }
}

impl TryFrom<Schema> for Form {
    type Error = SchemaError;
    fn try_from(s: Schema) -> Result<Form, SchemaError> {
        Form::parse(&s)
    }
}

impl From<Form> for Schema {
    fn from(f: Form) -> Schema {
        f.schema()
    }
}

/// Property names become keys of the answer, HTML input names, Slack
/// block ids and `--value NAME=…`: 1–64 letters, digits, `_`, `-`, `.`.
fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.chars().count() > MAX_NAME {
        return Err(format!("a name has 1 to {MAX_NAME} characters"));
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
    {
        return Err("a name has only letters, digits, `_`, `-` and `.`".into());
    }
    Ok(())
}

const KEYS: &[&str] = &[
    "type",
    "title",
    "description",
    "default",
    "enum",
    "enumNames",
    "oneOf",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "format",
];

fn text_of(m: &Map<String, Value>, key: &str, max: usize) -> Result<Option<String>, String> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.chars().count() <= max => Ok(Some(s.clone())),
        Some(Value::String(_)) => Err(format!("`{key}` has at most {max} characters")),
        Some(other) => Err(format!("`{key}` is text, not {other}")),
    }
}

fn number_of(m: &Map<String, Value>, key: &str) -> Result<Option<Number>, String> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => Ok(Some(n.clone())),
        Some(other) => Err(format!("`{key}` is a number, not {other}")),
    }
}

fn length_of(m: &Map<String, Value>, key: &str) -> Result<Option<u64>, String> {
    let max = crate::model::MAX_ANSWER_TEXT as u64;
    match m.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => match n.as_u64() {
            Some(l) if l <= max => Ok(Some(l)),
            Some(_) => Err(format!(
                "`{key}` is at most {max} (the longest text a human may give)"
            )),
            None => Err(format!("`{key}` is a whole number of characters, not {n}")),
        },
        Some(other) => Err(format!("`{key}` is a whole number, not {other}")),
    }
}

impl Field {
    /// One property of a schema.
    fn parse(name: &str, v: &Value, required: bool) -> Result<Field, String> {
        let Value::Object(m) = v else {
            return Err(format!(
                "a property is an object like {{type: string, title: …}}, not {v}"
            ));
        };
        if let Some(k) = m.keys().find(|k| !KEYS.contains(&k.as_str())) {
            return Err(format!(
                "unknown key `{k}` (a property takes {})",
                KEYS.join(", ")
            ));
        }
        let ty = match m.get("type") {
            Some(Value::String(t)) => t.as_str(),
            None => return Err("needs a `type`: string, number, integer or boolean".into()),
            Some(other) => return Err(format!("`type` is a word, not {other}")),
        };
        let present = |keys: &[&str]| -> Vec<String> {
            keys.iter()
                .filter(|k| m.get(**k).is_some_and(|v| !v.is_null()))
                .map(|k| format!("`{k}`"))
                .collect()
        };
        let refuse = |keys: &[&str], what: &str| -> Result<(), String> {
            let wrong = present(keys);
            if wrong.is_empty() {
                Ok(())
            } else {
                Err(format!("{what} does not take {}", wrong.join(", ")))
            }
        };
        let kind = match ty {
            "string" if m.contains_key("enum") || m.contains_key("oneOf") => {
                refuse(
                    &["minimum", "maximum", "minLength", "maxLength", "format"],
                    "a choice",
                )?;
                choice(m)?
            }
            "string" => {
                refuse(&["minimum", "maximum", "enumNames"], "a string")?;
                let format = match m.get("format") {
                    None | Some(Value::Null) => None,
                    Some(Value::String(f)) => Some(TextFormat::parse(f).ok_or_else(|| {
                        format!("unknown format `{f}` (email, uri, date or date-time)")
                    })?),
                    Some(other) => return Err(format!("`format` is a word, not {other}")),
                };
                let (min_length, max_length) = (length_of(m, "minLength")?, length_of(m, "maxLength")?);
                if let (Some(lo), Some(hi)) = (min_length, max_length) {
                    if lo > hi {
                        return Err(format!("minLength {lo} is over maxLength {hi}"));
                    }
                }
                FieldKind::Text {
                    min_length,
                    max_length,
                    format,
                    default: None,
                }
            }
            "number" | "integer" => {
                refuse(
                    &["enum", "enumNames", "oneOf", "minLength", "maxLength", "format"],
                    "a number",
                )?;
                let (minimum, maximum) = (number_of(m, "minimum")?, number_of(m, "maximum")?);
                if let (Some(lo), Some(hi)) = (&minimum, &maximum) {
                    if lo.as_f64() > hi.as_f64() {
                        return Err(format!("minimum {lo} is over maximum {hi}"));
                    }
                }
                FieldKind::Number {
                    integer: ty == "integer",
                    minimum,
                    maximum,
                    default: None,
                }
            }
            "boolean" => {
                refuse(
                    &[
                        "enum",
                        "enumNames",
                        "oneOf",
                        "minimum",
                        "maximum",
                        "minLength",
                        "maxLength",
                        "format",
                    ],
                    "a boolean",
                )?;
                FieldKind::Boolean { default: None }
            }
            "object" | "array" => {
                return Err(format!(
                    "type `{ty}`: a form is flat — its values are string, number, integer or boolean (nested objects and arrays are not supported)"
                ))
            }
            other => {
                return Err(format!(
                    "unknown type `{other}` (string, number, integer or boolean)"
                ))
            }
        };
        let kind = match m.get("default") {
            None | Some(Value::Null) => kind,
            Some(d) => {
                let d = kind
                    .admit(d)
                    .map_err(|why| format!("the default {d} does not fit: it {why}"))?;
                with_default(kind, d)
            }
        };
        Ok(Field {
            name: name.to_string(),
            title: text_of(m, "title", MAX_TITLE)?,
            description: text_of(m, "description", MAX_DESCRIPTION)?,
            required,
            kind,
        })
    }

    /// The property as JSON Schema.
    fn to_json(&self) -> Value {
        let mut m = Map::new();
        let mut put = |k: &str, v: Value| {
            m.insert(k.to_string(), v);
        };
        match &self.kind {
            FieldKind::Text {
                min_length,
                max_length,
                format,
                ..
            } => {
                put("type", json!("string"));
                if let Some(l) = min_length {
                    put("minLength", json!(l));
                }
                if let Some(l) = max_length {
                    put("maxLength", json!(l));
                }
                if let Some(f) = format {
                    put("format", json!(f.name()));
                }
            }
            FieldKind::Number {
                integer,
                minimum,
                maximum,
                ..
            } => {
                put("type", json!(if *integer { "integer" } else { "number" }));
                if let Some(n) = minimum {
                    put("minimum", Value::Number(n.clone()));
                }
                if let Some(n) = maximum {
                    put("maximum", Value::Number(n.clone()));
                }
            }
            FieldKind::Boolean { .. } => put("type", json!("boolean")),
            FieldKind::Choice {
                options, one_of, ..
            } => {
                put("type", json!("string"));
                if *one_of {
                    let list: Vec<Value> = options
                        .iter()
                        .map(|o| match &o.title {
                            Some(t) => json!({"const": o.value, "title": t}),
                            None => json!({"const": o.value}),
                        })
                        .collect();
                    put("oneOf", Value::Array(list));
                } else {
                    put(
                        "enum",
                        Value::Array(options.iter().map(|o| json!(o.value)).collect()),
                    );
                    if options.iter().any(|o| o.title.is_some()) {
                        put(
                            "enumNames",
                            Value::Array(options.iter().map(|o| json!(o.label())).collect()),
                        );
                    }
                }
            }
        }
        if let Some(t) = &self.title {
            put("title", json!(t));
        }
        if let Some(d) = &self.description {
            put("description", json!(d));
        }
        if let Some(d) = self.kind.default_value() {
            put("default", d);
        }
        Value::Object(m)
    }
}

/// `kind` with its (admitted) default.
fn with_default(kind: FieldKind, d: Value) -> FieldKind {
    match (kind, d) {
        (
            FieldKind::Text {
                min_length,
                max_length,
                format,
                ..
            },
            Value::String(s),
        ) => FieldKind::Text {
            min_length,
            max_length,
            format,
            default: Some(s),
        },
        (
            FieldKind::Choice {
                options, one_of, ..
            },
            Value::String(s),
        ) => FieldKind::Choice {
            options,
            one_of,
            default: Some(s),
        },
        (
            FieldKind::Number {
                integer,
                minimum,
                maximum,
                ..
            },
            Value::Number(n),
        ) => FieldKind::Number {
            integer,
            minimum,
            maximum,
            default: Some(n),
        },
        (FieldKind::Boolean { .. }, Value::Bool(b)) => FieldKind::Boolean { default: Some(b) },
        (kind, _) => kind,
    }
}

/// A string property's options: `enum` (titled by `enumNames`) or `oneOf`.
fn choice(m: &Map<String, Value>) -> Result<FieldKind, String> {
    let (options, one_of) = match (m.get("enum"), m.get("oneOf")) {
        (Some(_), Some(_)) => return Err("takes `enum` or `oneOf`, not both".into()),
        (Some(Value::Array(values)), None) => {
            let mut options = Vec::new();
            for v in values {
                match v {
                    Value::String(s) => options.push(Choice {
                        value: s.clone(),
                        title: None,
                    }),
                    other => return Err(format!("`enum` lists strings, not {other}")),
                }
            }
            match m.get("enumNames") {
                None | Some(Value::Null) => {}
                Some(Value::Array(names)) if names.len() == options.len() => {
                    for (o, n) in options.iter_mut().zip(names) {
                        match n {
                            Value::String(t) if t.chars().count() <= MAX_TITLE => {
                                o.title = Some(t.clone())
                            }
                            other => {
                                return Err(format!(
                                    "`enumNames` lists titles of at most {MAX_TITLE} characters, not {other}"
                                ))
                            }
                        }
                    }
                }
                Some(_) => {
                    return Err(format!(
                        "`enumNames` is a list of {} titles, one per `enum` value",
                        options.len()
                    ))
                }
            }
            (options, false)
        }
        (None, Some(Value::Array(list))) => {
            if m.contains_key("enumNames") {
                return Err("`enumNames` goes with `enum`, not `oneOf`".into());
            }
            let mut options = Vec::new();
            for item in list {
                let Some(o) = item.as_object() else {
                    return Err(format!(
                        "`oneOf` lists {{const, title}} objects, not {item}"
                    ));
                };
                if let Some(k) = o.keys().find(|k| *k != "const" && *k != "title") {
                    return Err(format!(
                        "`oneOf` entries take `const` and `title`, not `{k}`"
                    ));
                }
                let value = match o.get("const") {
                    Some(Value::String(s)) => s.clone(),
                    _ => return Err("each `oneOf` entry needs a string `const`".into()),
                };
                let title = match o.get("title") {
                    None | Some(Value::Null) => None,
                    Some(Value::String(t)) if t.chars().count() <= MAX_TITLE => Some(t.clone()),
                    Some(other) => {
                        return Err(format!(
                            "a `oneOf` title is text of at most {MAX_TITLE} characters, not {other}"
                        ))
                    }
                };
                options.push(Choice { value, title });
            }
            (options, true)
        }
        (Some(other), None) | (None, Some(other)) => {
            return Err(format!("the options are a list, not {other}"))
        }
        (None, None) => return Err("a choice needs `enum` or `oneOf`".into()),
    };
    if options.is_empty() {
        return Err("a choice needs at least one option".into());
    }
    if options.len() > MAX_OPTIONS {
        return Err(format!(
            "a choice has at most {MAX_OPTIONS} options; this one has {}",
            options.len()
        ));
    }
    for (i, o) in options.iter().enumerate() {
        if o.value.is_empty() || o.value.chars().count() > MAX_OPTION_VALUE {
            return Err(format!(
                "an option's value has 1 to {MAX_OPTION_VALUE} characters"
            ));
        }
        if options[..i].iter().any(|p| p.value == o.value) {
            return Err(format!("the option `{}` is listed twice", o.value));
        }
    }
    Ok(FieldKind::Choice {
        options,
        default: None,
        one_of,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(v: Value) -> Result<Form, SchemaError> {
        Form::from_value(&v)
    }

    #[test]
    fn a_flat_schema_parses_in_order_and_writes_back_the_same() {
        let text = r#"{"type":"object","properties":{
            "zeta":{"type":"string","title":"Zeta","minLength":2,"format":"email"},
            "amount":{"type":"integer","minimum":1,"maximum":10,"default":3},
            "ratio":{"type":"number","minimum":0.5},
            "urgent":{"type":"boolean","default":false},
            "env":{"type":"string","enum":["prod","staging"],"enumNames":["Production","Staging"],"default":"staging"},
            "size":{"type":"string","oneOf":[{"const":"s","title":"Small"},{"const":"l"}]}
        },"required":["zeta","amount"]}"#;
        let f: Form = serde_json::from_str(text).expect("a form");
        let names: Vec<&str> = f.fields().iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["zeta", "amount", "ratio", "urgent", "env", "size"]);
        assert!(f.fields()[0].required && f.fields()[1].required && !f.fields()[2].required);
        assert_eq!(f.fields()[1].kind.name(), "integer");
        assert_eq!(
            f.defaults(),
            serde_json::from_value::<Map<String, Value>>(
                json!({"amount": 3, "urgent": false, "env": "staging"})
            )
            .unwrap()
        );
        let out = serde_json::to_string(&f).unwrap();
        assert!(
            out.find("\"zeta\"").unwrap() < out.find("\"amount\"").unwrap(),
            "{out}"
        );
        let again: Form = serde_json::from_str(&out).unwrap();
        assert_eq!(again, f);
        assert_eq!(f.needs_a_human().len(), 1);
    }

    #[test]
    fn bad_schemas_are_refused_naming_where() {
        let at = |v: Value| form(v).expect_err("refused");
        let e = at(json!({"properties": {"a": {"type": "object"}}}));
        assert_eq!(e.at, SchemaAt::Property(0));
        assert!(e.message.contains("flat"), "{e}");
        let e = at(json!({"properties": {"a": {"type": "array"}}}));
        assert!(e.message.contains("flat"), "{e}");
        let e = at(json!({"properties": {"a": {"type": "date"}}}));
        assert!(e.message.contains("unknown type `date`"), "{e}");
        let e = at(json!({"properties": {"a": {"type": "string"}}, "required": ["b"]}));
        assert_eq!(e.at, SchemaAt::Required);
        assert!(e.message.contains("`b`"), "{e}");
        let many: Map<String, Value> = (0..33)
            .map(|i| (format!("f{i}"), json!({"type": "boolean"})))
            .collect();
        let e = at(json!({"properties": many}));
        assert_eq!(e.at, SchemaAt::Form);
        assert!(e.message.contains("at most 32"), "{e}");
        let e = at(
            json!({"properties": {"a": {"type": "string"}, "env": {"type": "string", "enum": ["a", "b"], "default": "c"}}}),
        );
        assert_eq!(e.at, SchemaAt::Property(1));
        assert!(e.message.contains("default"), "{e}");
        let e = at(json!({"properties": {"n": {"type": "integer", "default": 2.5}}}));
        assert!(e.message.contains("whole number"), "{e}");
        let e = at(json!({"properties": {"n": {"type": "number", "minimum": 5, "default": 1}}}));
        assert!(e.message.contains("at least 5"), "{e}");
        let e = at(json!({"type": "array", "properties": {"n": {"type": "number"}}}));
        assert_eq!(e.at, SchemaAt::Type);
        assert_eq!(at(json!({"properties": {}})).at, SchemaAt::Form);
        let e = at(json!({"properties": {"a": {"type": "string", "pattern": "x"}}}));
        assert!(e.message.contains("unknown key `pattern`"), "{e}");
        let e = at(json!({"properties": {"a b": {"type": "string"}}}));
        assert!(e.message.contains("letters"), "{e}");
        let e = at(
            json!({"properties": {"a": {"type": "string", "enum": ["x"], "enumNames": ["X", "Y"]}}}),
        );
        assert!(e.message.contains("enumNames"), "{e}");
        let e = at(json!({"properties": {"a": {"type": "boolean", "enum": ["x"]}}}));
        assert!(e.message.contains("a boolean does not take `enum`"), "{e}");
        let e = at(json!({"properties": {"a": {"type": "string", "format": "phone"}}}));
        assert!(e.message.contains("unknown format"), "{e}");
        let e = at(json!({"properties": {"a": {"type": "number", "minimum": 3, "maximum": 1}}}));
        assert!(e.message.contains("over maximum"), "{e}");
        let e = at(json!({"title": "x", "properties": {"a": {"type": "number"}}}));
        assert!(e.message.contains("title"), "{e}");
    }
}
