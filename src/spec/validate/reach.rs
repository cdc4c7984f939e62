//! Fail before paying: which variables the spec's templates read that
//! nothing defines — not an input (`inputs.required` / `optional` /
//! `values`), not a step's `vars`, not a name the engine provides (the
//! pattern's results, gate answers, the artifact context). strands-cli
//! finds those only when the template renders, after every model call
//! before it has been paid for; here `validate` names them and `run` asks
//! for them (or refuses, naming them) before the first model call.
//!
//! Agent prompts are the exception: strands-cli sends them as written, so a
//! prompt reading an unknown name is a warning and is then sent verbatim.

use serde_json::Value;
use serde_saphyr::Spanned;
use std::collections::BTreeSet;

use super::{at, Validator};
use crate::spec::{InputDecl, Need};

/// Names the engine puts in templates' context (engine/context.rs and the
/// patterns' `template_vars`), and the ones tool/trigger templates get.
pub const CONTEXT: &[&str] = &[
    "steps",
    "tasks",
    "branches",
    "router",
    "router_retry",
    "draft",
    "producer_output",
    "score",
    "evaluation",
    "iteration",
    "iteration_index",
    "iterations",
    "nodes",
    "execution_path",
    "terminal_node",
    "chosen_route",
    "router_agent",
    "TRACE",
    "runtime",
    "context_policy",
    "total_steps",
    "cumulative_tokens",
    "name",
    "timestamp",
    "orchestrator_response",
    "subtasks",
    "task",
    "task_count",
    "workers",
    "worker_count",
    "worker_index",
    "num_workers",
    "round",
    "rounds",
    "round_count",
    "reduce",
    "reduce_review",
    "reduce_response",
    "writeup",
    "writeup_response",
    "plan_feedback",
    "reviewer_feedback",
    "previous_plan",
    "dropped_tasks",
    "decomposition_review",
    "hitl_response",
    "human_feedback",
    "last_response",
    "response",
    "args",
    "tool",
];

/// One template's reads, kept until the inputs are known.
pub(super) struct Use {
    names: BTreeSet<String>,
    line: u32,
    what: String,
    /// False for agent prompts: sent as written when a name is unknown.
    strict: bool,
}

impl Validator {
    /// Records what `s` reads, for [`Validator::needs`].
    pub(super) fn record_use(&mut self, s: &Spanned<String>, what: &str, strict: bool) {
        let names = self.templates.variables(&s.value);
        if !names.is_empty() {
            self.uses.push(Use {
                names,
                line: at(s).0,
                what: what.to_string(),
                strict,
            });
        }
    }

    /// The variables templates read that nothing defines, first use first;
    /// warns about agent prompts that will be sent as written.
    pub(super) fn needs(
        &mut self,
        text: &str,
        inputs: &[InputDecl],
        values: &[String],
    ) -> Vec<Need> {
        let mut known: BTreeSet<String> = CONTEXT.iter().map(|s| s.to_string()).collect();
        known.extend(inputs.iter().map(|d| d.name.clone()));
        known.extend(values.iter().cloned());
        let doc: Value = serde_saphyr::from_str(text).unwrap_or(Value::Null);
        vars_keys(&doc, &mut known);
        let mut out: Vec<Need> = Vec::new();
        let mut warned = BTreeSet::new();
        for u in std::mem::take(&mut self.uses) {
            for n in u.names.iter().filter(|n| !known.contains(*n)) {
                if u.strict {
                    if !out.iter().any(|x| &x.name == n) {
                        out.push(Need {
                            name: n.clone(),
                            at: format!("{}:{}", self.file, u.line),
                            what: u.what.clone(),
                        });
                    }
                } else if warned.insert((n.clone(), u.what.clone())) {
                    self.warnings.push(format!(
                        "{}:{}: {} reads `{n}`, which no input defines: without --var {n}=... it is sent as written, as strands-cli does",
                        self.file, u.line, u.what
                    ));
                }
            }
        }
        for n in &out {
            self.warnings.push(format!(
                "{}: {} reads `{}`, which is not a declared input: pass --var {}=... (run asks for it on a terminal)",
                n.at, n.what, n.name, n.name
            ));
        }
        out
    }
}

/// Every key of every `vars:` mapping in the document.
fn vars_keys(v: &Value, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(m) => {
            for (k, child) in m {
                if k == "vars" {
                    if let Value::Object(vars) = child {
                        out.extend(vars.keys().cloned());
                    }
                }
                vars_keys(child, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|c| vars_keys(c, out)),
        _ => {}
    }
}

/// Reads of results that cannot exist yet where the template renders: a
/// chain step reading `steps[N]` at or after itself, a workflow task
/// reading `tasks.X` that is not among its (direct or indirect) deps.
/// Only plain templates are judged: one with `{% ... %}` or an inline
/// `if` may guard the read, and is left to run time.
impl Validator {
    pub(super) fn chain_reads(&mut self, i: usize, input: &Spanned<String>) {
        if guarded(&input.value) {
            return;
        }
        let re = step_ref();
        let late: BTreeSet<usize> = re
            .captures_iter(&input.value)
            .filter_map(|c| c[1].parse::<usize>().ok())
            .filter(|&n| n >= i)
            .collect();
        for n in late {
            self.error(
                at(input),
                format!("the input of steps[{i}] reads `steps[{n}]`, which has not run yet at that point"),
                Some(if i == 0 {
                    "the first step sees no step results; use the inputs".to_string()
                } else {
                    format!("steps[{i}] sees the results of steps[0] to steps[{}]", i - 1)
                }),
            );
        }
    }

    pub(super) fn task_reads(
        &mut self,
        id: &str,
        input: &Spanned<String>,
        before: &BTreeSet<String>,
        all: &BTreeSet<String>,
    ) {
        if guarded(&input.value) {
            return;
        }
        let re = task_ref();
        let read: BTreeSet<String> = re
            .captures_iter(&input.value)
            .map(|c| c[1].to_string())
            .collect();
        for other in read {
            if !all.contains(&other) {
                self.error(
                    at(input),
                    format!("the input of task `{id}` reads `tasks.{other}`, and there is no task `{other}`"),
                    Some(format!("tasks: {}", all.iter().cloned().collect::<Vec<_>>().join(", "))),
                );
            } else if other == id || !before.contains(&other) {
                self.error(
                    at(input),
                    format!("the input of task `{id}` reads `tasks.{other}`, which is not among its deps, so it may not have run"),
                    Some(format!("add `{other}` to the `deps` of `{id}`")),
                );
            }
        }
    }
}

/// A template that may guard its reads (a block tag or an inline `if`).
fn guarded(source: &str) -> bool {
    source.contains("{%") || source.contains(" if ")
}

fn step_ref() -> regex::Regex {
    regex::Regex::new(r"\bsteps\[(\d+)\]").unwrap_or_else(|_| unreachable!("a fixed pattern"))
}

fn task_ref() -> regex::Regex {
    regex::Regex::new(r"\btasks\.([A-Za-z_][A-Za-z0-9_-]*)")
        .unwrap_or_else(|_| unreachable!("a fixed pattern"))
}

#[cfg(test)]
mod tests {
    use super::CONTEXT;

    /// Every name the engine puts at the top of a template context is
    /// known here, or specs reading it would be told to pass it as --var.
    #[test]
    fn every_name_the_engine_provides_is_known() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/engine");
        let re = regex::Regex::new(
            r#"(?:insert|entry)\(\s*"([A-Za-z_]+)"|\(\s*"([A-Za-z_]+)",\s*&st\."#,
        )
        .expect("regex");
        let mut stack = vec![root];
        let mut missing = Vec::new();
        while let Some(dir) = stack.pop() {
            for e in std::fs::read_dir(&dir).expect("read src/engine").flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|x| x == "rs") {
                    let text = std::fs::read_to_string(&p).expect("read");
                    for c in re.captures_iter(&text) {
                        let name = c.get(1).or(c.get(2)).map_or("", |m| m.as_str());
                        if !CONTEXT.contains(&name) {
                            missing.push(format!("{name} in {}", p.display()));
                        }
                    }
                }
            }
        }
        assert!(missing.is_empty(), "not in reach::CONTEXT: {missing:?}");
    }
}
