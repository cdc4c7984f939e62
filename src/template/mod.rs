//! Jinja templates for prompts, inputs, gate prompts, conditions and artifact
//! paths, rendered by minijinja in a sandbox: no loader (no file access), no
//! auto-escaping, a fuel limit against runaway loops, and strict undefined
//! variables — a typo in `{{ steps[0].respone }}` is an error, not "".

use minijinja::{Environment, ErrorKind, UndefinedBehavior, Value};
use std::collections::BTreeSet;

mod filters;

/// Instructions a single render may spend; generous for prompts, finite for loops.
const FUEL: u64 = 2_000_000;

/// A syntax error inside one template, with its line inside the template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    /// 1-based line within the template text.
    pub line: u32,
    pub message: String,
}

/// The shared, sandboxed environment.
pub struct Templates {
    env: Environment<'static>,
}

impl Default for Templates {
    fn default() -> Self {
        Self::new()
    }
}

impl Templates {
    /// The process's one environment: it is never changed once built, and
    /// building one registers every filter and test anew (an engine is
    /// made per request).
    pub fn shared() -> &'static Templates {
        static SHARED: std::sync::OnceLock<Templates> = std::sync::OnceLock::new();
        SHARED.get_or_init(Templates::new)
    }

    pub fn new() -> Self {
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        env.set_auto_escape_callback(|_| minijinja::AutoEscape::None);
        env.set_fuel(Some(FUEL));
        env.set_keep_trailing_newline(true);
        // strands-cli specs are Jinja2 templates written against Python
        // values: `.lower()`, `.items()`, `.startswith()` ... work as there.
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_filter("truncate", filters::truncate);
        env.add_filter("tojson", filters::tojson);
        env.add_filter("regex_search", filters::regex_search);
        env.add_filter("wordcount", filters::wordcount);
        env.add_filter("striptags", filters::striptags);
        Templates { env }
    }

    /// Checks that `source` compiles, without rendering it.
    pub fn check(&self, source: &str) -> Result<(), SyntaxError> {
        self.env
            .template_from_str(source)
            .map(|_| ())
            .map_err(|e| SyntaxError {
                line: e.line().unwrap_or(1) as u32,
                message: detail(&e),
            })
    }

    /// Checks a condition: either a template (`{{ x > 1 }}`) or a bare expression (`x > 1`).
    pub fn check_condition(&self, source: &str) -> Result<(), SyntaxError> {
        if is_template(source) {
            return self.check(source);
        }
        self.expression(source)
            .map(|_| ())
            .map_err(|message| SyntaxError { line: 1, message })
    }

    /// Compiles a bare expression. minijinja 2.24's expression lexer
    /// panics ("empty lexer stack") on a top-level `}}` followed by more
    /// input (`x }} y`): the expression is first read inside `{{ ( ) }}`,
    /// where that is a plain syntax error, and a panic that still escapes
    /// the compiler becomes an error too — a spec can never crash strands.
    fn expression<'e>(&'e self, source: &'e str) -> Result<minijinja::Expression<'e, 'e>, String> {
        let wrapped = format!("{{{{ ({source}) }}}}");
        if let Err(e) = self.env.template_from_str(&wrapped) {
            return Err(detail(&e));
        }
        let env = &self.env;
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            env.compile_expression(source)
        })) {
            Ok(Ok(expr)) => Ok(expr),
            Ok(Err(e)) => Err(detail(&e)),
            Err(_) => Err("syntax error: the expression could not be read".into()),
        }
    }

    /// Renders `source` against `ctx`. `what` names the template in errors
    /// ("input of step 2"); an undefined value is named
    /// (`'topic' is undefined in the input of steps[0]`).
    pub fn render(&self, what: &str, source: &str, ctx: &Value) -> crate::Result<String> {
        self.env.render_str(source, ctx).map_err(|e| {
            crate::Error::Runtime(match self.undefined(&e, source, ctx) {
                Some(name) => format!("{name} is undefined in {what}"),
                None => format!("template error in {what}: {}", detail(&e)),
            })
        })
    }

    /// `source` rendered, or as written when it reads a variable `ctx`
    /// lacks: strands-cli sends agent prompts unrendered, so a prompt that
    /// mentions `{{ something }}` no input defines reaches the model as is.
    pub fn render_or_verbatim(
        &self,
        what: &str,
        source: &str,
        ctx: &Value,
    ) -> crate::Result<String> {
        match self.env.render_str(source, ctx) {
            Ok(text) => Ok(text),
            Err(e) if e.kind() == ErrorKind::UndefinedError => Ok(source.to_string()),
            Err(_) => self.render(what, source, ctx),
        }
    }

    /// The top-level variables template `source` reads and does not set
    /// itself; none when it does not compile.
    pub fn variables(&self, source: &str) -> BTreeSet<String> {
        if !is_template(source) {
            return BTreeSet::new();
        }
        let globals: BTreeSet<&str> = self.env.globals().map(|(n, _)| n).collect();
        self.env
            .template_from_str(source)
            .map(|t| {
                t.undeclared_variables(false)
                    .into_iter()
                    .filter(|n| !globals.contains(n.as_str()))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// What is undefined, when `e` is an undefined-value error: the
    /// variables missing from `ctx`, else the expression that failed.
    fn undefined(&self, e: &minijinja::Error, source: &str, ctx: &Value) -> Option<String> {
        if e.kind() != ErrorKind::UndefinedError {
            return None;
        }
        let missing: Vec<String> = self
            .variables(source)
            .into_iter()
            .filter(|n| ctx.get_attr(n).map_or(true, |v| v.is_undefined()))
            .map(|n| format!("'{n}'"))
            .collect();
        if !missing.is_empty() {
            return Some(missing.join(", "));
        }
        // The `{{ ... }}` (or `{% ... %}`) around the failing span.
        let at = e.range()?.start;
        let open = source.get(..at)?.rfind(['{'])?.saturating_sub(1);
        let close = source
            .get(at..)?
            .find("}}")
            .or_else(|| source.get(at..)?.find("%}"))
            .map_or(source.len(), |i| at + i + 2);
        let expr = source.get(open..close)?;
        Some(format!("`{}`", expr.trim()))
    }

    /// Evaluates a condition to a boolean. Rendered templates count as true
    /// unless they render to a false-like word (`false`, `0`, `no`, `none`, empty).
    pub fn truthy(&self, what: &str, source: &str, ctx: &Value) -> crate::Result<bool> {
        if is_template(source) {
            let out = self.render(what, source, ctx)?;
            let word = out.trim().to_ascii_lowercase();
            return Ok(!matches!(
                word.as_str(),
                "" | "false" | "0" | "no" | "none" | "null" | "off"
            ));
        }
        let expr = self
            .expression(source)
            .map_err(|e| crate::Error::Runtime(format!("condition error in {what}: {e}")))?;
        let v = expr.eval(ctx).map_err(|e| {
            crate::Error::Runtime(format!("condition error in {what}: {}", detail(&e)))
        })?;
        Ok(v.is_true())
    }
}

fn is_template(source: &str) -> bool {
    source.contains("{{") || source.contains("{%")
}

/// minijinja's message without the `(in <string>:N)` suffix noise.
fn detail(e: &minijinja::Error) -> String {
    let mut msg = e.kind().to_string();
    if let Some(d) = e.detail() {
        msg.push_str(": ");
        msg.push_str(d);
    }
    msg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shared_environment_is_built_once_with_the_same_sandbox() {
        let (a, b) = (Templates::shared(), Templates::shared());
        assert!(std::ptr::eq(a, b), "one environment for the process");
        let ctx = minijinja::context! { name => "Ada" };
        assert_eq!(
            a.render("x", "{{ name.lower() | truncate(2) }}", &ctx)
                .unwrap(),
            Templates::new()
                .render("x", "{{ name.lower() | truncate(2) }}", &ctx)
                .unwrap()
        );
        assert!(
            a.render("x", "{{ missing }}", &ctx).is_err(),
            "strict undefined"
        );
    }

    #[test]
    fn undefined_variables_are_errors() {
        let t = Templates::new();
        let ctx = minijinja::context! { topic => "rust" };
        assert_eq!(
            t.render("x", "about {{ topic }}", &ctx).unwrap(),
            "about rust"
        );
        let err = t
            .render("the input of steps[0]", "{{ topik }}", &ctx)
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("'topik' is undefined in the input of steps[0]"),
            "{err}"
        );
        let ctx =
            minijinja::Value::from_serialize(serde_json::json!({"steps": [{"response": "r"}]}));
        let err = t
            .render("the artifact", "a\n{{ steps[0].respone | upper }}", &ctx)
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("`{{ steps[0].respone | upper }}` is undefined in the artifact"),
            "{err}"
        );
    }

    #[test]
    fn variables_are_the_names_a_template_reads_and_does_not_set() {
        let t = Templates::new();
        let v = t.variables("{% set x = 1 %}{{ x }} {{ topic }} {% for s in steps %}{{ s.response }}{% endfor %} {{ range(3)|list }}");
        assert_eq!(v.into_iter().collect::<Vec<_>>(), vec!["steps", "topic"]);
        assert!(t.variables("plain text").is_empty());
    }

    #[test]
    fn strands_cli_filters_render_as_there() {
        let t = Templates::new();
        let ctx = minijinja::Value::from_serialize(
            serde_json::json!({"s": "abcdefghij", "o": {"k": [1, 2]}}),
        );
        assert_eq!(
            t.render("x", "{{ s | truncate(6) }}", &ctx).unwrap(),
            "abc..."
        );
        assert_eq!(
            t.render("x", "{{ o | tojson }}", &ctx).unwrap(),
            r#"{"k": [1, 2]}"#
        );
        assert_eq!(
            t.render("x", "{{ 'Score: 9' | regex_search('score: (\\d)') }}", &ctx)
                .unwrap(),
            "9"
        );
        assert_eq!(t.render("x", "{{ 'a b' | title }}", &ctx).unwrap(), "A B");
    }

    #[test]
    fn syntax_errors_carry_the_template_line() {
        let t = Templates::new();
        let e = t.check("line one\nline two {{ oops(\n").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(t.check("fine {{ a }}").is_ok());
    }

    #[test]
    fn conditions_accept_expressions_and_templates() {
        let t = Templates::new();
        let ctx = minijinja::context! { n => 5, s => "abc" };
        assert!(t.truthy("c", "n > 3", &ctx).unwrap());
        assert!(!t.truthy("c", "{{ n > 7 }}", &ctx).unwrap());
        assert!(t.truthy("c", "{{ s|length < 10 }}", &ctx).unwrap());
        assert!(t.check_condition("n >").is_err());
    }

    /// minijinja's expression lexer panics on these; here they are errors.
    #[test]
    fn a_stray_closing_brace_pair_is_an_error_not_a_panic() {
        let t = Templates::new();
        let ctx = minijinja::context! { x => 1 };
        for src in ["}}}}", "}} x", "x }} y", "}}}", "a }} }}"] {
            assert!(t.check_condition(src).is_err(), "{src:?}");
            assert!(t.truthy("c", src, &ctx).is_err(), "{src:?}");
        }
        // Braces inside strings and dicts are fine.
        assert!(t.truthy("c", "'}}' != x", &ctx).unwrap());
        assert!(t.check_condition("{'a': {'b': 1}}").is_ok());
    }

    #[test]
    fn runaway_loops_run_out_of_fuel() {
        let t = Templates::new();
        let ctx = minijinja::context! {};
        let src =
            "{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}";
        assert!(t.render("loop", src, &ctx).is_err());
    }

    #[test]
    fn python_string_and_dict_methods_work_as_in_strands_cli() {
        let t = Templates::new();
        let ctx = minijinja::Value::from_serialize(serde_json::json!({
            "answer": "APPROVE",
            "nodes": {"a": {"response": "x"}},
        }));
        let out = t
            .render(
                "test",
                "{{ answer.lower() }} {% for k, v in nodes.items() %}{{ k }}={{ v.response }}{% endfor %}",
                &ctx,
            )
            .expect("renders");
        assert_eq!(out, "approve a=x");
        assert!(t
            .truthy("test", "answer.lower().startswith('app')", &ctx)
            .expect("evaluates"));
    }
}
