//! The `orchestrator_workers` pattern: the orchestrator plans subtasks (a
//! JSON task list), an optional `decomposition_review` gate lets a human
//! approve, edit or send back the plan, workers run the subtasks in
//! parallel, an optional `reduce_review` gate looks at their results, then
//! the optional `reduce` and `writeup` agent steps run.
//!
//! The plan: a JSON array of `{"task": ...}` objects or strings, or an
//! object `{"subtasks": [...]}` / `{"tasks": [...]}` (or one `{"task": ...}`),
//! bare, in a fenced block or embedded in prose. Anything else fails the run
//! naming the problem. `[]` means no subtasks (nothing for workers to do). At
//! most `limits.max_workers` subtasks are taken; the rest are dropped and
//! counted (`dropped_tasks`, and a line in the output without reduce).
//!
//! `decomposition_review` answers (case-insensitive):
//! - `approve`, `approved`, `yes`, `y`, `ok`, `okay`, `lgtm`, `continue`,
//!   `proceed` (and a manual gate's approve, a skipped gate): the plan runs;
//! - `reject`, `rejected`, `no`, `deny`, `denied`, `cancel`, `stop`,
//!   `abort` (and `--reject`): the run ends rejected;
//! - a JSON task list (bare or fenced): the human's edited plan runs
//!   instead (`max_workers` applies); one that looks like JSON but is not a
//!   task list is refused with the reason;
//! - any other text, or `--modify --feedback F`: the orchestrator plans
//!   again with the feedback (a new round). At most `limits.max_rounds`
//!   plans are made in total; past that, feedback is refused as a usage
//!   error (nothing recorded; answer approve, reject or an edited plan).
//!
//! `reduce_review` answers: approve words continue; reject words end the
//! run rejected; other text continues and is visible to `reduce` as
//! `hitl_response` and `reduce_review.response`. `--modify --feedback F`
//! runs every worker again (they see `human_feedback`), then asks again.
//!
//! The output is the writeup's reply, else the reduce's, else every
//! worker's result under its subtask.
//!
//! Run-time text (subtasks, the previous plan, feedback) reaches templates
//! only as step variables (`task`, `previous_plan`, `plan_feedback`), never
//! spliced into a template.

use serde_json::{Map, Value};
use std::borrow::Cow;

use super::{latest, mismatch, rec, Next, Work};
use crate::error::{Error, Result};
pub use crate::model::pattern::orchestrator::{Round, State};
use crate::model::Position;
use crate::model::{RecordKind, StepRecord};
use crate::spec::{AgentStep, OrchestratorSpec};

/// The re-plan input after review feedback (appended to the orchestrator's
/// own `input`, when it has one).
const REPLAN_INPUT: &str = "Your previous plan:\n{{ previous_plan }}\n\n\
The reviewer asked for changes:\n\
{% if plan_feedback %}{{ plan_feedback }}{% else %}{{ human_feedback }}{% endif %}\n\n\
Reply with the revised plan: only a JSON array of {\"task\": \"...\"} objects.";

/// A worker's input when `worker_template.input` is not given.
const WORKER_INPUT: &str =
    "{{ task }}{% if human_feedback %}\n\nReviewer feedback: {{ human_feedback }}{% endif %}";

/// The input of a `reduce` (or a `writeup` without a reduce) that has none.
const COMBINE_INPUT: &str = "Combine the results of these {{ worker_count }} subtasks into one answer.\n\
{% for w in workers %}\n## Subtask {{ w.index + 1 }}: {{ w.task }}\n\n{{ w.response }}\n{% endfor %}\
{% if reduce_review and reduce_review.response and reduce_review.response != 'approved' %}\n\
Reviewer notes: {{ reduce_review.response }}{% endif %}";

const APPROVE_WORDS: &[&str] = &[
    "approve", "approved", "yes", "y", "ok", "okay", "lgtm", "continue", "proceed",
];
const REJECT_WORDS: &[&str] = &[
    "reject", "rejected", "no", "deny", "denied", "cancel", "stop", "abort",
];

fn word_in(response: &str, words: &[&str]) -> bool {
    let w = response
        .trim()
        .trim_end_matches(['.', '!'])
        .to_ascii_lowercase();
    words.contains(&w.as_str())
}

pub fn initial(_spec: &OrchestratorSpec) -> State {
    State::default()
}

pub fn next<'s>(spec: &'s OrchestratorSpec, st: &State) -> Result<Next<'s>> {
    let Some(round) = st.rounds.last().filter(|_| !st.replan) else {
        let r = st.rounds.len();
        if r as u32 >= spec.max_rounds {
            return Err(Error::Runtime(format!(
                "the orchestrator has made {r} plans and limits.max_rounds is {}",
                spec.max_rounds
            )));
        }
        let position = Position::Plan(r as u32);
        return Ok(Next::Run(vec![Work {
            position,
            step: plan_step(spec, st),
        }]));
    };
    let r = (st.rounds.len() - 1) as u32;
    if let (Some(gate), None) = (&spec.decomposition_review, &round.review) {
        return Ok(Next::gate(Position::DecompositionReview(r), gate));
    }
    let work: Vec<Work<'s>> = round
        .workers
        .iter()
        .enumerate()
        .filter(|(_, w)| w.is_none())
        .map(|(i, _)| Work {
            position: Position::Worker { round: r, index: i },
            step: Cow::Owned(worker_step(spec, round, i)),
        })
        .collect();
    if !work.is_empty() {
        return Ok(Next::Run(work));
    }
    if let (Some(gate), None) = (&spec.reduce_review, &st.reduce_review) {
        return Ok(Next::gate(Position::ReduceReview, gate));
    }
    if let (Some(step), None) = (&spec.reduce, &st.reduce) {
        return Ok(Next::Run(vec![Work {
            position: Position::Reduce,
            step: with_default_input(step, COMBINE_INPUT),
        }]));
    }
    if let (Some(step), None) = (&spec.writeup, &st.writeup) {
        // After a reduce, a writeup without input reads the reduce's reply.
        let step = if spec.reduce.is_some() {
            Cow::Borrowed(step)
        } else {
            with_default_input(step, COMBINE_INPUT)
        };
        return Ok(Next::Run(vec![Work {
            position: Position::Writeup,
            step,
        }]));
    }
    Ok(Next::Done {
        output: output(st, spec),
    })
}

fn with_default_input<'s>(step: &'s AgentStep, input: &str) -> Cow<'s, AgentStep> {
    if step.input.is_some() {
        Cow::Borrowed(step)
    } else {
        Cow::Owned(AgentStep {
            input: Some(input.to_string()),
            ..step.clone()
        })
    }
}

/// The orchestrator's step: as written for the first plan; a re-plan adds
/// the previous plan and the feedback (as variables).
fn plan_step<'s>(spec: &'s OrchestratorSpec, st: &State) -> Cow<'s, AgentStep> {
    let Some(prev) = st.rounds.last() else {
        return Cow::Borrowed(&spec.orchestrator);
    };
    let base = spec
        .orchestrator
        .input
        .as_ref()
        .map(|i| format!("{i}\n\n"))
        .unwrap_or_default();
    let mut vars = spec.orchestrator.vars.clone();
    vars.insert(
        "previous_plan".into(),
        Value::String(plan_json(&prev.tasks)),
    );
    let feedback = prev
        .review
        .as_ref()
        .filter(|r| r.kind == RecordKind::Answer)
        .map(|r| Value::String(r.response.clone()))
        .unwrap_or(Value::Null);
    vars.insert("plan_feedback".into(), feedback);
    Cow::Owned(AgentStep {
        agent: spec.orchestrator.agent.clone(),
        input: Some(format!("{base}{REPLAN_INPUT}")),
        vars,
        tools: None,
    })
}

/// Worker `i` of a round: the subtask goes in as the variable `task`.
fn worker_step(spec: &OrchestratorSpec, round: &Round, i: usize) -> AgentStep {
    let mut vars = spec.worker.vars.clone();
    vars.insert(
        "task".into(),
        Value::String(round.tasks.get(i).cloned().unwrap_or_default()),
    );
    vars.insert("worker_index".into(), Value::from(i));
    AgentStep {
        agent: spec.worker.agent.clone(),
        input: Some(
            spec.worker
                .input
                .clone()
                .unwrap_or_else(|| WORKER_INPUT.to_string()),
        ),
        vars,
        tools: spec.worker.tools.clone(),
    }
}

/// A task list as the JSON templates and reviewers see it.
fn plan_json(tasks: &[String]) -> String {
    let list: Vec<Value> = tasks
        .iter()
        .map(|t| serde_json::json!({ "task": t }))
        .collect();
    serde_json::to_string_pretty(&list).unwrap_or_else(|_| "[]".into())
}

fn output(st: &State, spec: &OrchestratorSpec) -> String {
    for r in [&st.writeup, &st.reduce].into_iter().flatten() {
        if r.kind.has_output() {
            return r.response.clone();
        }
    }
    let Some(round) = st.rounds.last() else {
        return String::new();
    };
    let mut parts: Vec<String> = round
        .tasks
        .iter()
        .zip(&round.workers)
        .enumerate()
        .map(|(i, (task, w))| {
            format!(
                "## {}. {task}\n\n{}",
                i + 1,
                w.as_ref().map(|w| w.response.as_str()).unwrap_or_default()
            )
        })
        .collect();
    if round.dropped > 0 {
        parts.push(format!(
            "({} more subtasks were not run: limits.max_workers is {})",
            round.dropped, spec.max_workers
        ));
    }
    parts.join("\n\n")
}

/// Subtasks from an orchestrator reply: the whole reply as JSON, else a
/// fenced block, else the first JSON value in the text that is a task list.
pub fn parse_plan(text: &str) -> std::result::Result<Vec<String>, String> {
    let mut problem = None;
    fn consider(v: Value, problem: &mut Option<String>) -> Option<Vec<String>> {
        match tasks_of(&v) {
            Ok(t) => Some(t),
            Err(why) => {
                problem.get_or_insert(why);
                None
            }
        }
    }
    if let Ok(v) = serde_json::from_str::<Value>(text.trim()) {
        return tasks_of(&v);
    }
    for block in fenced(text) {
        if let Ok(v) = serde_json::from_str::<Value>(block) {
            if let Some(t) = consider(v, &mut problem) {
                return Ok(t);
            }
        }
    }
    for (i, _) in text.match_indices(['[', '{']).take(200) {
        let mut values = serde_json::Deserializer::from_str(&text[i..]).into_iter::<Value>();
        if let Some(Ok(v)) = values.next() {
            if let Some(t) = consider(v, &mut problem) {
                return Ok(t);
            }
        }
    }
    Err(problem.unwrap_or_else(|| "it has no JSON in it".into()))
}

/// The contents of ``` fenced blocks (a language tag line dropped).
fn fenced(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("```") {
        let after = &rest[start + 3..];
        let Some(end) = after.find("```") else { break };
        let block = &after[..end];
        let block = match block.split_once('\n') {
            Some((tag, body)) if !tag.trim().starts_with(['[', '{']) => body,
            _ => block,
        };
        out.push(block.trim());
        rest = &after[end + 3..];
    }
    out
}

/// A JSON value as a task list, or what is wrong with it.
fn tasks_of(v: &Value) -> std::result::Result<Vec<String>, String> {
    match v {
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                task_text(item).ok_or_else(|| {
                    format!(
                        "subtask {} is not a string or an object with a `task` string",
                        i + 1
                    )
                })
            })
            .collect(),
        Value::Object(o) => {
            for key in ["subtasks", "tasks"] {
                if let Some(list) = o.get(key) {
                    return match list {
                        Value::Array(_) => tasks_of(list),
                        _ => Err(format!("`{key}` is not a JSON array")),
                    };
                }
            }
            task_text(v)
                .map(|t| vec![t])
                .ok_or_else(|| "it is a JSON object without `subtasks`, `tasks` or `task`".into())
        }
        _ => Err("it is JSON but not a list of subtasks".into()),
    }
}

fn task_text(item: &Value) -> Option<String> {
    let text = match item {
        Value::String(s) => s.as_str(),
        Value::Object(o) => ["task", "description"]
            .iter()
            .find_map(|k| o.get(*k).and_then(Value::as_str))?,
        _ => return None,
    };
    let t = text.trim();
    (!t.is_empty()).then(|| t.to_string())
}

/// What a `decomposition_review` answer means.
enum Verdict {
    Approve,
    Reject,
    Edited(Vec<String>),
    Feedback,
}

fn verdict(response: &str) -> std::result::Result<Verdict, String> {
    if word_in(response, APPROVE_WORDS) {
        return Ok(Verdict::Approve);
    }
    if word_in(response, REJECT_WORDS) {
        return Ok(Verdict::Reject);
    }
    let t = response.trim();
    if t.starts_with(['[', '{']) || t.starts_with("```") {
        let parsed = match serde_json::from_str::<Value>(t) {
            Ok(v) => tasks_of(&v),
            Err(e) => match fenced(t).first() {
                Some(block) => serde_json::from_str::<Value>(block)
                    .map_err(|e| format!("its JSON does not parse: {e}"))
                    .and_then(|v| tasks_of(&v)),
                None => Err(format!("its JSON does not parse: {e}")),
            },
        };
        return parsed.map(Verdict::Edited);
    }
    Ok(Verdict::Feedback)
}

fn take(spec: &OrchestratorSpec, mut tasks: Vec<String>) -> (Vec<String>, usize) {
    let dropped = tasks.len().saturating_sub(spec.max_workers);
    tasks.truncate(spec.max_workers);
    (tasks, dropped)
}

fn clear_after_workers(st: &mut State) {
    st.reduce_review = None;
    st.reduce = None;
    st.writeup = None;
}

pub fn record(
    spec: &OrchestratorSpec,
    st: &mut State,
    position: &Position,
    r: StepRecord,
) -> Result<()> {
    match position {
        Position::Plan(n) => {
            let n = *n as usize;
            if n > st.rounds.len() {
                return Err(mismatch());
            }
            let tasks = parse_plan(&r.response).map_err(|why| {
                Error::Runtime(format!(
                    "the orchestrator's reply (round {}) is not a task list: {why}; expected a JSON array of {{\"task\": \"...\"}} objects or strings, or {{\"subtasks\": [...]}}. The reply began: {}",
                    n + 1,
                    preview(&r.response)
                ))
            })?;
            let (tasks, dropped) = take(spec, tasks);
            st.rounds.truncate(n);
            st.rounds.push(Round {
                plan: r,
                workers: vec![None; tasks.len()],
                tasks,
                dropped,
                edited: false,
                review: None,
            });
            st.replan = false;
            clear_after_workers(st);
        }
        Position::DecompositionReview(n) => {
            let rounds = st.rounds.len();
            let round = last_round(st, *n)?;
            if r.kind == RecordKind::Answer {
                match verdict(&r.response).map_err(|why| {
                    Error::Usage(format!(
                        "the decomposition review answer is not a task list: {why}"
                    ))
                })? {
                    Verdict::Approve | Verdict::Reject => {}
                    Verdict::Edited(tasks) => {
                        let (tasks, dropped) = take(spec, tasks);
                        round.workers = vec![None; tasks.len()];
                        round.tasks = tasks;
                        round.dropped = dropped;
                        round.edited = true;
                    }
                    Verdict::Feedback => {
                        if rounds as u32 >= spec.max_rounds {
                            return Err(Error::Usage(no_rounds_left(spec)));
                        }
                        round.review = Some(r);
                        st.replan = true;
                        return Ok(());
                    }
                }
            } else if r.kind == RecordKind::Agent {
                return Err(mismatch());
            }
            round.review = Some(r);
        }
        Position::Worker { round, index } => {
            let slot = last_round(st, *round)?
                .workers
                .get_mut(*index)
                .ok_or_else(mismatch)?;
            *slot = Some(r);
        }
        Position::ReduceReview => st.reduce_review = Some(r),
        Position::Reduce => st.reduce = Some(r),
        Position::Writeup => st.writeup = Some(r),
        _ => return Err(mismatch()),
    }
    Ok(())
}

/// Round `n`, which must be the current one.
fn last_round(st: &mut State, n: u32) -> Result<&mut Round> {
    let len = st.rounds.len();
    if len == 0 || n as usize != len - 1 {
        return Err(mismatch());
    }
    st.rounds.last_mut().ok_or_else(mismatch)
}

fn preview(text: &str) -> String {
    let t = text.trim();
    let cut: String = t.chars().take(200).collect();
    if cut.len() < t.len() {
        format!("{cut:?}…")
    } else {
        format!("{cut:?}")
    }
}

pub fn no_rounds_left(spec: &OrchestratorSpec) -> String {
    format!(
        "the orchestrator has already made {} plan{} (limits.max_rounds), so feedback cannot ask for another; answer approve, reject, or your own plan as a JSON task list",
        spec.max_rounds,
        if spec.max_rounds == 1 { "" } else { "s" }
    )
}

/// Refuses a `decomposition_review` answer that cannot be carried out:
/// JSON that is not a task list, empty text, or feedback with no re-plan left.
pub fn check_response(
    spec: &OrchestratorSpec,
    st: &State,
    position: &Position,
    response: &str,
) -> Result<()> {
    let Position::DecompositionReview(_) = position else {
        return Ok(());
    };
    if response.trim().is_empty() {
        return Err(Error::Usage(
            "the decomposition review needs an answer: approve, reject, feedback for a new plan, or a JSON task list".into(),
        ));
    }
    match verdict(response) {
        Err(why) => Err(Error::Usage(format!(
            "the answer looks like a JSON task list but {why}; send a JSON array of {{\"task\": \"...\"}} objects or strings, or answer approve, reject or feedback"
        ))),
        Ok(Verdict::Feedback) if st.rounds.len() as u32 >= spec.max_rounds => {
            Err(Error::Usage(no_rounds_left(spec)))
        }
        Ok(_) => Ok(()),
    }
}

/// `reject` (and its synonyms) at either review ends the run rejected.
pub fn rejects(_spec: &OrchestratorSpec, position: &Position, response: &str) -> Option<String> {
    match position {
        Position::DecompositionReview(_) | Position::ReduceReview
            if word_in(response, REJECT_WORDS) =>
        {
            Some(format!("{position} answered `{}`", response.trim()))
        }
        _ => None,
    }
}

/// `modify` at `decomposition_review`: the next plan (while rounds are
/// left); at `reduce_review`: every worker of the current plan.
pub fn rerun_targets(spec: &OrchestratorSpec, st: &State, gate: &Position) -> Vec<Position> {
    match gate {
        Position::DecompositionReview(_) if (st.rounds.len() as u32) < spec.max_rounds => {
            vec![Position::Plan(st.rounds.len() as u32)]
        }
        Position::ReduceReview => st
            .rounds
            .last()
            .map(|round| {
                let r = (st.rounds.len() - 1) as u32;
                (0..round.tasks.len())
                    .map(|index| Position::Worker { round: r, index })
                    .collect()
            })
            .unwrap_or_default(),
        _ => Vec::new(),
    }
}

pub fn rewind(spec: &OrchestratorSpec, st: &mut State, gate: &Position) -> Result<()> {
    match gate {
        Position::DecompositionReview(_) => {
            if st.rounds.len() as u32 >= spec.max_rounds {
                return Err(Error::Usage(no_rounds_left(spec)));
            }
            st.replan = true;
        }
        Position::ReduceReview => {
            let round = st.rounds.last_mut().ok_or_else(mismatch)?;
            for w in &mut round.workers {
                *w = None;
            }
            clear_after_workers(st);
        }
        _ => return Err(mismatch()),
    }
    Ok(())
}

/// Forgets a step's result (and what depends on it) so it runs again: a
/// triggered gate's `modify`.
pub fn forget(st: &mut State, position: &Position) -> Result<()> {
    match position {
        Position::Plan(n) => {
            st.rounds.truncate(*n as usize);
            st.replan = *n > 0;
            clear_after_workers(st);
        }
        Position::DecompositionReview(n) => {
            last_round(st, *n)?.review = None;
            st.replan = false;
        }
        Position::Worker { round, index } => {
            let slot = last_round(st, *round)?
                .workers
                .get_mut(*index)
                .ok_or_else(mismatch)?;
            *slot = None;
            clear_after_workers(st);
        }
        Position::ReduceReview => clear_after_workers(st),
        Position::Reduce => {
            st.reduce = None;
            st.writeup = None;
        }
        Position::Writeup => st.writeup = None,
        _ => return Err(mismatch()),
    }
    Ok(())
}

fn records(st: &State) -> impl Iterator<Item = (Position, &StepRecord)> {
    let rounds = st.rounds.iter().enumerate().flat_map(|(r, round)| {
        let r = r as u32;
        std::iter::once((Position::Plan(r), &round.plan))
            .chain(
                round
                    .review
                    .iter()
                    .map(move |rv| (Position::DecompositionReview(r), rv)),
            )
            .chain(round.workers.iter().enumerate().filter_map(move |(i, w)| {
                w.as_ref()
                    .map(|w| (Position::Worker { round: r, index: i }, w))
            }))
    });
    rounds.chain(
        [
            (Position::ReduceReview, &st.reduce_review),
            (Position::Reduce, &st.reduce),
            (Position::Writeup, &st.writeup),
        ]
        .into_iter()
        .filter_map(|(p, r)| r.as_ref().map(|r| (p, r))),
    )
}

pub fn last_response(st: &State) -> Option<String> {
    latest(records(st).map(|(_, r)| r))
}

pub fn agent_records(st: &State) -> Vec<(Position, &StepRecord)> {
    records(st).collect()
}

/// strands-cli's names: `orchestrator_response` (the current plan as a JSON
/// task list), `subtasks` (`[{task}]`), `task_count`, `workers` (`[{index,
/// task, response, status}]`, `response` null until done), `worker_count` /
/// `num_workers`, `reduce_response` / `reduce.response`, `writeup_response`;
/// and `round` / `round_count` (plans made), `dropped_tasks`, `rounds`
/// (every plan: `response`, `tasks`, `review`), `decomposition_review` and
/// `reduce_review` (the answers, null until given).
pub fn template_vars(
    _spec: &OrchestratorSpec,
    st: &State,
    root: &mut Map<String, Value>,
    _at: Option<&Position>,
) {
    let current = st.rounds.last();
    let tasks: &[String] = current.map(|r| r.tasks.as_slice()).unwrap_or_default();
    let workers: Vec<Value> = current
        .map(|round| {
            round
                .tasks
                .iter()
                .enumerate()
                .map(|(i, task)| {
                    let w = round.workers.get(i).and_then(Option::as_ref);
                    serde_json::json!({
                        "index": i,
                        "task": task,
                        "response": w.map(|w| w.response.clone()),
                        "status": if w.is_some() { "success" } else { "pending" },
                        "agent": w.and_then(|w| w.agent.clone()),
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    let n = tasks.len();
    root.insert(
        "orchestrator_response".into(),
        current
            .map(|r| Value::String(plan_json(&r.tasks)))
            .unwrap_or(Value::Null),
    );
    root.insert(
        "subtasks".into(),
        Value::Array(
            tasks
                .iter()
                .map(|t| serde_json::json!({ "task": t }))
                .collect(),
        ),
    );
    root.insert("task_count".into(), Value::from(n));
    root.insert("workers".into(), Value::Array(workers));
    root.insert("worker_count".into(), Value::from(n));
    root.insert("num_workers".into(), Value::from(n));
    root.insert("round".into(), Value::from(st.rounds.len()));
    root.insert("round_count".into(), Value::from(st.rounds.len()));
    root.insert(
        "dropped_tasks".into(),
        Value::from(current.map(|r| r.dropped).unwrap_or(0)),
    );
    root.insert(
        "rounds".into(),
        Value::Array(
            st.rounds
                .iter()
                .map(|r| {
                    serde_json::json!({
                        "response": r.plan.response,
                        "tasks": r.tasks,
                        "edited": r.edited,
                        "review": r.review.as_ref().map(|v| v.response.clone()),
                    })
                })
                .collect(),
        ),
    );
    root.insert(
        "decomposition_review".into(),
        current
            .and_then(|r| r.review.as_ref())
            .map(rec)
            .unwrap_or(Value::Null),
    );
    for (name, r) in [
        ("reduce_review", &st.reduce_review),
        ("reduce", &st.reduce),
        ("writeup", &st.writeup),
    ] {
        root.insert(name.into(), r.as_ref().map(rec).unwrap_or(Value::Null));
    }
    for (name, r) in [
        ("reduce_response", &st.reduce),
        ("writeup_response", &st.writeup),
    ] {
        root.insert(
            name.into(),
            r.as_ref()
                .map(|r| Value::String(r.response.clone()))
                .unwrap_or(Value::Null),
        );
    }
}

pub fn finished(st: &State) -> usize {
    records(st).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_are_read_bare_fenced_embedded_and_in_every_shape() {
        let want = vec!["a".to_string(), "b".to_string()];
        for text in [
            r#"[{"task": "a"}, {"task": "b"}]"#,
            r#"["a", "b"]"#,
            r#"{"subtasks": [{"task": "a"}, "b"]}"#,
            r#"{"tasks": ["a", {"description": "b"}]}"#,
            "Here is the plan:\n```json\n[{\"task\": \"a\"}, {\"task\": \"b\"}]\n```\nGood luck.",
            "Step [1] done. The plan: [{\"task\": \"a\"}, {\"task\": \"b\"}] — that's all.",
        ] {
            assert_eq!(parse_plan(text).as_ref(), Ok(&want), "{text}");
        }
        assert_eq!(parse_plan(r#"{"task": "a"}"#), Ok(vec!["a".to_string()]));
        assert_eq!(parse_plan("[]"), Ok(Vec::new()));
        assert!(parse_plan("no plan today").is_err());
        let e = parse_plan(r#"[{"name": "a"}]"#).unwrap_err();
        assert!(e.contains("subtask 1"), "{e}");
        let e = parse_plan(r#"{"plan": 1}"#).unwrap_err();
        assert!(e.contains("without `subtasks`"), "{e}");
    }

    #[test]
    fn review_answers_are_classified() {
        assert!(matches!(verdict(" Approved. "), Ok(Verdict::Approve)));
        assert!(matches!(verdict("yes"), Ok(Verdict::Approve)));
        assert!(matches!(verdict("REJECT"), Ok(Verdict::Reject)));
        assert!(matches!(verdict("split task 1"), Ok(Verdict::Feedback)));
        assert!(matches!(verdict(r#"["x"]"#), Ok(Verdict::Edited(t)) if t == ["x"]));
        assert!(matches!(
            verdict("```\n[{\"task\": \"x\"}]\n```"),
            Ok(Verdict::Edited(t)) if t == ["x"]
        ));
        assert!(verdict("[not json").is_err());
        assert!(verdict(r#"{"x": 1}"#).is_err());
    }
}
