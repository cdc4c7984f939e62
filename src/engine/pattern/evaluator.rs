//! The `evaluator_optimizer` pattern: the producer drafts, the evaluator
//! scores the draft (`{score, issues, fixes}`), the producer revises, until
//! the score reaches `min_score` or `max_iters` iterations have run.
//!
//! Iteration `i` (0-based) is `Draft(i)` then `Evaluation(i)`; then, when the
//! loop goes on:
//! - `accept.manual_review` (the seed's quality gate), once `i + 1 >=
//!   after_iterations`: `approve-current` (or `--approve`) ends with this
//!   draft, `continue` runs the next revision, `reject` ends the run
//!   rejected, `--modify --feedback F` runs the next revision with F. It is
//!   asked after the last iteration too (where `continue` and modify are
//!   refused: no iterations are left).
//! - `review_gate` (strands-cli), between iterations only and not after a
//!   manual review that was asked: `continue` (or `approved`) goes on,
//!   `stop` ends with this draft, any other text is feedback that reaches
//!   the next revision (strands-cli: "any other feedback for context").
//!
//! Choices made here:
//! - the output is always the latest draft: the accepted one, the one a
//!   human stopped or approved at, or — when `max_iters` runs out — the
//!   last one (so `last_response`, `draft` and the output agree);
//! - an evaluator reply without a numeric score is re-asked once (as
//!   strands-cli does), then the run fails quoting the reply;
//! - feedback reaches only the revision it was given for: appended to the
//!   revision input (as `human_feedback` after a modify, as
//!   `reviewer_feedback` for review-gate text) unless `revise_prompt`
//!   already uses that variable.
//!
//! Run-time text (drafts, evaluations, feedback) is only ever template
//! *data* (`draft`, `evaluation`, `reviewer_feedback`), never template source.

use serde_json::{json, Map, Value};
use std::borrow::Cow;

use super::routing::{json_object_with, quote};
use super::{mismatch, Next, Work};
use crate::error::{Error, Result};
pub use crate::model::pattern::evaluator::{Evaluation, Iteration, State, Verdict};
use crate::model::Position;
use crate::model::{RecordKind, StepRecord};
use crate::spec::{AgentStep, EvaluatorSpec};

/// Re-asks of the evaluator after a reply without a numeric score.
const EVAL_RETRIES: usize = 1;

/// Characters of a draft in `iterations[i].draft_preview`.
const PREVIEW_CHARS: usize = 500;

/// The revision input when the spec has no `revise_prompt` (strands-cli's).
const DEFAULT_REVISE: &str = "Revise the following draft based on evaluator feedback.\n\nDraft:\n{{ draft }}\n\nEvaluation (Score: {{ evaluation.score }}/100):\n{% if evaluation.issues %}Issues:\n{% for issue in evaluation.issues %}- {{ issue }}\n{% endfor %}{% endif %}{% if evaluation.fixes %}Suggested fixes:\n{% for fix in evaluation.fixes %}- {{ fix }}\n{% endfor %}{% endif %}\nPlease provide an improved version.";

/// The evaluator's input when the spec gives none (strands-cli's).
const DEFAULT_EVALUATE: &str = "Evaluate the following draft and return JSON with score (0-100), issues, and fixes:\n\n{{ draft }}";

/// The re-ask after a reply without a score (strands-cli's clarification).
const EVALUATE_AGAIN: &str = "Your previous response was not valid JSON with a numeric score. Please return only valid JSON in this exact format: {\"score\": <0-100>, \"issues\": [\"issue1\", ...], \"fixes\": [\"fix1\", ...]}\n\nEvaluate this draft:\n\n{{ draft }}";

const MODIFY_FEEDBACK: &str =
    "{% if human_feedback %}\n\nFeedback from a human reviewer:\n{{ human_feedback }}{% endif %}";
const TEXT_FEEDBACK: &str = "\n\nFeedback from a human reviewer:\n{{ reviewer_feedback }}";

/// Where the loop stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Draft(u32),
    Evaluate(u32),
    Manual(u32),
    Review(u32),
    Done,
}

fn idx(i: u32) -> usize {
    i as usize
}

fn stage(spec: &EvaluatorSpec, st: &State) -> Stage {
    let Some(last) = st.iterations.len().checked_sub(1) else {
        return Stage::Draft(0);
    };
    let i = last as u32;
    let it = &st.iterations[last];
    let Some(ev) = &it.score else {
        return Stage::Evaluate(i);
    };
    if ev.score >= spec.min_score {
        return Stage::Done;
    }
    let out_of_iterations = i + 1 >= spec.max_iters;
    let goes_on = if out_of_iterations {
        Stage::Done
    } else {
        Stage::Draft(i + 1)
    };
    if let Some(m) = &spec.manual_review {
        if i + 1 >= m.after_iterations {
            match &it.manual {
                None => return Stage::Manual(i),
                Some(Verdict::Approve | Verdict::Stop) => return Stage::Done,
                Some(Verdict::Continue | Verdict::Feedback { .. }) => return goes_on,
                Some(Verdict::Skipped) => {}
            }
        }
    }
    if out_of_iterations {
        return Stage::Done;
    }
    if spec.review_gate.is_some() {
        match &it.review {
            None => return Stage::Review(i),
            Some(Verdict::Stop | Verdict::Approve) => return Stage::Done,
            Some(_) => {}
        }
    }
    goes_on
}

pub fn initial(_spec: &EvaluatorSpec) -> State {
    State::default()
}

pub fn next<'s>(spec: &'s EvaluatorSpec, st: &State) -> Result<Next<'s>> {
    Ok(match stage(spec, st) {
        Stage::Draft(0) => Next::Run(vec![Work::borrowed(Position::Draft(0), &spec.producer)]),
        Stage::Draft(i) => Next::Run(vec![revision(spec, st, i)]),
        Stage::Evaluate(i) => Next::Run(vec![evaluation(spec, st, i)]),
        Stage::Manual(i) => match &spec.manual_review {
            Some(m) => Next::gate(Position::ManualReview(i), &m.gate),
            None => return Err(mismatch()),
        },
        Stage::Review(i) => match &spec.review_gate {
            Some(g) => Next::gate(Position::ReviewGate(i), g),
            None => return Err(mismatch()),
        },
        Stage::Done => Next::Done {
            output: last_response(st).unwrap_or_default(),
        },
    })
}

/// The producer's step for revision `i`: `revise_prompt` (or the built-in
/// revision input) over `draft` / `evaluation` of iteration `i - 1`, plus
/// the feedback a human gave after it.
fn revision<'s>(spec: &'s EvaluatorSpec, st: &State, i: u32) -> Work<'s> {
    let mut input = spec
        .revise_prompt
        .clone()
        .unwrap_or_else(|| DEFAULT_REVISE.to_string());
    let mut vars = spec.producer.vars.clone();
    let previous = i.checked_sub(1).and_then(|p| st.iterations.get(idx(p)));
    let feedback = previous.and_then(|it| {
        [&it.manual, &it.review]
            .into_iter()
            .flatten()
            .find_map(|v| match v {
                Verdict::Feedback { text } => Some(text.clone()),
                _ => None,
            })
    });
    if feedback.is_some() {
        input.truncate(input.trim_end().len());
    }
    match feedback {
        Some(Some(text)) => {
            vars.insert("reviewer_feedback".into(), Value::String(text));
            if !input.contains("reviewer_feedback") {
                input.push_str(TEXT_FEEDBACK);
            }
        }
        Some(None) if !input.contains("human_feedback") => input.push_str(MODIFY_FEEDBACK),
        _ => {}
    }
    Work {
        position: Position::Draft(i),
        step: Cow::Owned(AgentStep {
            agent: spec.producer.agent.clone(),
            input: Some(input),
            vars,
            tools: None,
        }),
    }
}

/// The evaluator's step for iteration `i` (its draft is `draft`).
fn evaluation<'s>(spec: &'s EvaluatorSpec, st: &State, i: u32) -> Work<'s> {
    let retrying = st
        .iterations
        .get(idx(i))
        .is_some_and(|it| !it.bad_evaluations.is_empty());
    let input = if retrying {
        EVALUATE_AGAIN.to_string()
    } else {
        spec.evaluator
            .input
            .clone()
            .unwrap_or_else(|| DEFAULT_EVALUATE.to_string())
    };
    Work {
        position: Position::Evaluation(i),
        step: Cow::Owned(AgentStep {
            agent: spec.evaluator.agent.clone(),
            input: Some(input),
            vars: spec.evaluator.vars.clone(),
            tools: None,
        }),
    }
}

/// Reads an evaluator reply: `score` (a number, or a string holding one),
/// `issues` and `fixes` (lists, or one string; the seed's `feedback` counts
/// as an issue). `None` without a usable score.
pub fn parse_evaluation(reply: &str) -> Option<Evaluation> {
    let obj = json_object_with(reply, "score")?;
    let score = match obj.get("score")? {
        Value::Number(n) => n.as_f64()?,
        Value::String(s) => s
            .trim()
            .trim_end_matches("/100")
            .trim()
            .parse::<f64>()
            .ok()?,
        _ => return None,
    };
    if !score.is_finite() {
        return None;
    }
    let list = |key: &str| -> Vec<String> {
        match obj.get(key) {
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect(),
            Some(Value::String(s)) if !s.trim().is_empty() => vec![s.clone()],
            _ => Vec::new(),
        }
    };
    let mut issues = list("issues");
    if issues.is_empty() {
        issues = list("feedback");
    }
    Some(Evaluation {
        score,
        issues,
        fixes: list("fixes"),
    })
}

pub fn record(
    spec: &EvaluatorSpec,
    st: &mut State,
    position: &Position,
    r: StepRecord,
) -> Result<()> {
    match *position {
        Position::Draft(i) => {
            if idx(i) != st.iterations.len() {
                return Err(mismatch());
            }
            st.iterations.push(Iteration {
                draft: r,
                evaluation: None,
                score: None,
                bad_evaluations: Vec::new(),
                manual: None,
                review: None,
            });
            Ok(())
        }
        Position::Evaluation(i) => {
            let it = current(st, i)?;
            match parse_evaluation(&r.response) {
                Some(ev) => {
                    it.score = Some(ev);
                    it.evaluation = Some(r);
                    Ok(())
                }
                None => {
                    let reply = r.response.clone();
                    it.bad_evaluations.push(r);
                    if it.bad_evaluations.len() > EVAL_RETRIES {
                        Err(Error::Runtime(format!(
                            "the evaluator (agent `{}`) gave no numeric score for iteration {} in {} attempts; expected JSON {{\"score\": 0-100, \"issues\": [...], \"fixes\": [...]}}; its last reply: \"{}\"",
                            spec.evaluator.agent,
                            i + 1,
                            it.bad_evaluations.len(),
                            quote(&reply, 300)
                        )))
                    } else {
                        Ok(())
                    }
                }
            }
        }
        Position::ReviewGate(i) => {
            let verdict = match r.kind {
                RecordKind::Skipped => Verdict::Skipped,
                _ => review_verdict(&r.response),
            };
            current(st, i)?.review = Some(verdict);
            Ok(())
        }
        Position::ManualReview(i) => {
            let verdict = match r.kind {
                RecordKind::Skipped => Verdict::Skipped,
                _ => manual_verdict(&r.response),
            };
            current(st, i)?.manual = Some(verdict);
            Ok(())
        }
        _ => Err(mismatch()),
    }
}

/// The latest iteration, which must be `i`.
fn current(st: &mut State, i: u32) -> Result<&mut Iteration> {
    if idx(i) + 1 != st.iterations.len() {
        return Err(mismatch());
    }
    st.iterations.get_mut(idx(i)).ok_or_else(mismatch)
}

fn word(response: &str) -> String {
    response.trim().to_ascii_lowercase()
}

/// `review_gate`: continue / stop; other text is feedback.
fn review_verdict(response: &str) -> Verdict {
    match word(response).as_str() {
        "" | "continue" | "approved" | "approve" | "yes" | "y" => Verdict::Continue,
        "stop" | "abort" | "end" => Verdict::Stop,
        _ => Verdict::Feedback {
            text: Some(response.trim().to_string()),
        },
    }
}

const APPROVE_WORDS: &[&str] = &[
    "approved",
    "approve",
    "approve-current",
    "approve_current",
    "approve current",
    "accept",
    "yes",
    "y",
];
const REJECT_WORDS: &[&str] = &["reject", "rejected"];

/// `accept.manual_review`: approve-current / continue (reject ends the run
/// before anything is recorded; other text was refused).
fn manual_verdict(response: &str) -> Verdict {
    let w = word(response);
    if APPROVE_WORDS.contains(&w.as_str()) {
        Verdict::Approve
    } else if w == "continue" {
        Verdict::Continue
    } else {
        Verdict::Feedback {
            text: Some(response.trim().to_string()),
        }
    }
}

pub fn check_response(
    spec: &EvaluatorSpec,
    _st: &State,
    position: &Position,
    response: &str,
) -> Result<()> {
    let Position::ManualReview(i) = *position else {
        // review_gate takes any text (continue, stop, or feedback).
        return Ok(());
    };
    let w = word(response);
    let last = i + 1 >= spec.max_iters;
    if APPROVE_WORDS.contains(&w.as_str()) || REJECT_WORDS.contains(&w.as_str()) {
        return Ok(());
    }
    if w == "continue" && !last {
        return Ok(());
    }
    Err(Error::Usage(if w == "continue" {
        format!(
            "the manual review after iteration {} cannot continue: max_iters ({}) is reached; answer approve-current (--approve) or reject (--reject)",
            i + 1,
            spec.max_iters
        )
    } else {
        format!(
            "the manual review takes approve-current (--approve), continue, reject (--reject) or --modify --feedback F, not `{}`",
            response.trim()
        )
    }))
}

pub fn rejects(_spec: &EvaluatorSpec, position: &Position, response: &str) -> Option<String> {
    match position {
        Position::ManualReview(i) if REJECT_WORDS.contains(&word(response).as_str()) => Some(
            format!("rejected at the manual review after iteration {}", i + 1),
        ),
        _ => None,
    }
}

/// A modify at a gate after iteration `i` runs revision `i + 1` with the
/// feedback (none is left after the last iteration).
pub fn rerun_targets(spec: &EvaluatorSpec, _st: &State, gate: &Position) -> Vec<Position> {
    match *gate {
        Position::ReviewGate(i) | Position::ManualReview(i) if i + 1 < spec.max_iters => {
            vec![Position::Draft(i + 1)]
        }
        _ => Vec::new(),
    }
}

pub fn rewind(_spec: &EvaluatorSpec, st: &mut State, gate: &Position) -> Result<()> {
    let feedback = Some(Verdict::Feedback { text: None });
    match *gate {
        Position::ReviewGate(i) => current(st, i)?.review = feedback,
        Position::ManualReview(i) => current(st, i)?.manual = feedback,
        _ => return Err(mismatch()),
    }
    Ok(())
}

/// A triggered gate's modify: forget the step it reviewed and everything after.
pub fn forget(st: &mut State, position: &Position) -> Result<()> {
    match *position {
        Position::Draft(i) => st.iterations.truncate(idx(i)),
        Position::Evaluation(i) | Position::ManualReview(i) | Position::ReviewGate(i) => {
            st.iterations.truncate(idx(i) + 1);
            let it = st.iterations.get_mut(idx(i)).ok_or_else(mismatch)?;
            if let Position::Evaluation(_) = position {
                it.evaluation = None;
                it.score = None;
                it.bad_evaluations.clear();
            }
            if !matches!(position, Position::ReviewGate(_)) {
                it.manual = None;
            }
            it.review = None;
        }
        _ => return Err(mismatch()),
    }
    Ok(())
}

/// The latest draft: while the loop runs, what is being evaluated or
/// revised; once it ends, the output.
pub fn last_response(st: &State) -> Option<String> {
    st.iterations.last().map(|it| it.draft.response.clone())
}

pub fn agent_records(st: &State) -> Vec<(Position, &StepRecord)> {
    let mut out = Vec::new();
    for (i, it) in st.iterations.iter().enumerate() {
        let i = i as u32;
        out.push((Position::Draft(i), &it.draft));
        for bad in &it.bad_evaluations {
            out.push((Position::Evaluation(i), bad));
        }
        if let Some(e) = &it.evaluation {
            out.push((Position::Evaluation(i), e));
        }
    }
    out
}

/// A score as templates see it: whole numbers print without `.0`.
fn score_value(score: f64) -> Value {
    if score.fract() == 0.0 && score.abs() < 9e15 {
        json!(score as i64)
    } else {
        json!(score)
    }
}

fn evaluation_value(ev: Option<&Evaluation>) -> Value {
    match ev {
        Some(e) => json!({"score": score_value(e.score), "issues": e.issues, "fixes": e.fixes}),
        None => json!({"score": null, "issues": [], "fixes": []}),
    }
}

/// `draft` (the latest draft: at a revision, the one being revised),
/// `evaluation.score|issues|fixes` (the latest evaluation),
/// `iteration_index` (0-based, the iteration at hand), `iterations` (every
/// evaluated iteration: `draft`, `draft_preview`, `score`, `issues`,
/// `fixes`, `evaluation`). The seed's names `iteration` (1-based), `score`
/// and `producer_output` are set unless an input of that name exists.
pub fn template_vars(
    _spec: &EvaluatorSpec,
    st: &State,
    root: &mut Map<String, Value>,
    at: Option<&Position>,
) {
    let index = match at {
        Some(
            Position::Draft(i)
            | Position::Evaluation(i)
            | Position::ReviewGate(i)
            | Position::ManualReview(i),
        ) => *i as usize,
        _ => st.iterations.len().saturating_sub(1),
    };
    let draft = st
        .iterations
        .last()
        .map(|it| Value::String(it.draft.response.clone()))
        .unwrap_or(Value::Null);
    let latest = st.iterations.iter().rev().find_map(|it| it.score.as_ref());
    let iterations: Vec<Value> = st
        .iterations
        .iter()
        .filter_map(|it| {
            let ev = it.score.as_ref()?;
            let text = &it.draft.response;
            Some(json!({
                "draft": text,
                "draft_preview": crate::model::cut(text, PREVIEW_CHARS).0,
                "score": score_value(ev.score),
                "issues": ev.issues,
                "fixes": ev.fixes,
                "evaluation": evaluation_value(Some(ev)),
                "response": it.evaluation.as_ref().map(|e| e.response.clone()),
            }))
        })
        .collect();
    root.insert("draft".into(), draft.clone());
    root.insert("evaluation".into(), evaluation_value(latest));
    root.insert("iteration_index".into(), json!(index));
    root.insert("iterations".into(), Value::Array(iterations));
    root.entry("iteration").or_insert(json!(index + 1));
    root.entry("score")
        .or_insert(latest.map(|e| score_value(e.score)).unwrap_or(Value::Null));
    root.entry("producer_output").or_insert(draft);
}

pub fn finished(st: &State) -> usize {
    st.iterations
        .iter()
        .map(|it| {
            1 + it.bad_evaluations.len()
                + usize::from(it.evaluation.is_some())
                + usize::from(it.manual.is_some())
                + usize::from(it.review.is_some())
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evaluations_are_read_leniently() {
        let e = parse_evaluation(
            "Here you go:\n```json\n{\"score\": 72, \"issues\": [\"thin\"], \"fixes\": \"add data\"}\n```",
        )
        .expect("a score");
        assert_eq!(e.score, 72.0);
        assert_eq!(e.issues, vec!["thin".to_string()]);
        assert_eq!(e.fixes, vec!["add data".to_string()]);
        let e = parse_evaluation("{\"score\": \"88\", \"feedback\": \"good\"}").expect("a score");
        assert_eq!(e.score, 88.0);
        assert_eq!(e.issues, vec!["good".to_string()]);
        assert!(parse_evaluation("great work, 9/10").is_none());
        assert!(parse_evaluation("{\"score\": \"high\"}").is_none());
    }

    #[test]
    fn review_text_is_continue_stop_or_feedback() {
        assert_eq!(review_verdict(" Continue "), Verdict::Continue);
        assert_eq!(review_verdict("approved"), Verdict::Continue);
        assert_eq!(review_verdict("STOP"), Verdict::Stop);
        assert_eq!(
            review_verdict("shorter please"),
            Verdict::Feedback {
                text: Some("shorter please".into())
            }
        );
        assert_eq!(manual_verdict("approve-current"), Verdict::Approve);
        assert_eq!(manual_verdict("continue"), Verdict::Continue);
    }

    fn spec(extra: &str) -> EvaluatorSpec {
        let text = format!(
            "version: 0\nname: t\nruntime:\n  provider: echo\nagents:\n  w:\n    prompt: W\n  c:\n    prompt: C\npattern:\n  type: evaluator_optimizer\n  config:\n    producer: w\n    evaluator:\n      agent: c\n    accept:\n      min_score: 80\n      max_iters: 3\n{extra}"
        );
        match crate::spec::parse(
            &text,
            std::path::Path::new("t.yaml"),
            &crate::spec::Limits::default(),
        ) {
            Ok(s) => match s.pattern {
                crate::spec::PatternSpec::EvaluatorOptimizer(p) => p,
                _ => panic!("not an evaluator spec"),
            },
            Err(e) => panic!("{e}"),
        }
    }

    fn agent(text: &str) -> StepRecord {
        StepRecord {
            agent: Some("x".into()),
            response: text.into(),
            kind: RecordKind::Agent,
            finished_at: crate::clock::test_epoch(),
        }
    }

    fn answer(text: &str, kind: RecordKind) -> StepRecord {
        StepRecord {
            agent: None,
            response: text.into(),
            kind,
            finished_at: crate::clock::test_epoch(),
        }
    }

    const BOTH: &str = "      manual_review:\n        after_iterations: 1\n        prompt: ok?\n    review_gate:\n      type: hitl\n      prompt: go on?\n";

    #[test]
    fn a_skipped_manual_review_leaves_the_review_gate_to_ask() {
        let spec = spec(BOTH);
        let mut st = initial(&spec);
        record(&spec, &mut st, &Position::Draft(0), agent("D1")).unwrap();
        assert_eq!(stage(&spec, &st), Stage::Evaluate(0));
        record(
            &spec,
            &mut st,
            &Position::Evaluation(0),
            agent("{\"score\": 10}"),
        )
        .unwrap();
        assert_eq!(stage(&spec, &st), Stage::Manual(0));
        let skipped = answer("", RecordKind::Skipped);
        record(&spec, &mut st, &Position::ManualReview(0), skipped).unwrap();
        assert_eq!(stage(&spec, &st), Stage::Review(0));
        record(
            &spec,
            &mut st,
            &Position::ReviewGate(0),
            answer("continue", RecordKind::Answer),
        )
        .unwrap();
        assert_eq!(stage(&spec, &st), Stage::Draft(1));
    }

    #[test]
    fn an_answered_manual_review_decides_without_the_review_gate() {
        let spec = spec(BOTH);
        let mut st = initial(&spec);
        record(&spec, &mut st, &Position::Draft(0), agent("D1")).unwrap();
        record(
            &spec,
            &mut st,
            &Position::Evaluation(0),
            agent("{\"score\": 10}"),
        )
        .unwrap();
        record(
            &spec,
            &mut st,
            &Position::ManualReview(0),
            answer("continue", RecordKind::Answer),
        )
        .unwrap();
        assert_eq!(stage(&spec, &st), Stage::Draft(1));
        // A modify is a continue with feedback for revision 1 only.
        let mut st2 = st.clone();
        st2.iterations[0].manual = None;
        assert_eq!(
            rerun_targets(&spec, &st2, &Position::ManualReview(0)),
            vec![Position::Draft(1)]
        );
        rewind(&spec, &mut st2, &Position::ManualReview(0)).unwrap();
        assert_eq!(stage(&spec, &st2), Stage::Draft(1));
        let Next::Run(work) = next(&spec, &st2).unwrap() else {
            panic!("a revision")
        };
        let input = work[0].step.input.clone().unwrap_or_default();
        assert!(
            input.ends_with("{{ human_feedback }}{% endif %}"),
            "{input}"
        );
        // Forgetting the evaluation (a triggered gate's modify) drops the answers after it.
        forget(&mut st, &Position::Evaluation(0)).unwrap();
        assert_eq!(stage(&spec, &st), Stage::Evaluate(0));
        assert!(st.iterations[0].manual.is_none());
    }

    #[test]
    fn templates_see_draft_evaluation_and_the_last_iteration() {
        let spec = spec("");
        let mut st = initial(&spec);
        record(&spec, &mut st, &Position::Draft(0), agent("D1")).unwrap();
        record(
            &spec,
            &mut st,
            &Position::Evaluation(0),
            agent("{\"score\": 42.5, \"issues\": [\"a\"]}"),
        )
        .unwrap();
        let mut root = Map::new();
        template_vars(&spec, &st, &mut root, Some(&Position::Draft(1)));
        let t = crate::template::Templates::new();
        let ctx = minijinja::Value::from_serialize(&root);
        let out = t
            .render(
                "t",
                "{{ draft }}|{{ evaluation.score }}|{{ iterations[-1].issues[0] }}|{{ iteration_index }}|{{ iterations[-1].draft_preview }}",
                &ctx,
            )
            .unwrap();
        assert_eq!(out, "D1|42.5|a|1|D1");
        assert_eq!(stage(&spec, &st), Stage::Draft(1));
    }
}
