//! `strands resume` (and strands-cli's `run --resume`): the CLI as a thin
//! door. Its flags become one answer in the API's words
//! ([`AnswerRequest`], read by the one decision parser every door uses);
//! the answer goes to this store's hub ([`Hub::record`], as every door's
//! does, and the run goes on in this process) or to the server the CLI
//! talks to; the outcome is rendered ([`super::render`]).

use std::io::IsTerminal;

use serde_json::{Map, Value};

use super::asking::{cli_channel, nobody_to_ask, with_resume};
use super::remote::Remote;
use super::render::{report, Words};
use super::ResumeArgs;
use crate::error::{Error, Result};
use crate::hub::answers::AnswerRequest;
use crate::hub::door::{Door, DoorAnswer};
use crate::hub::Hub;
use crate::model::{Refusal, Session, Status};

/// Where this invocation's answers go, who gives them, and how the
/// outcome is worded.
pub(super) struct Answering<'a> {
    pub to: To<'a>,
    /// Who answers (`--as`, or the Unix user).
    pub who: String,
    pub words: Words,
}

/// This store's hub, or the server the CLI talks to.
pub(super) enum To<'a> {
    Here(Hub),
    Server(&'a Remote),
}

/// `resume`: the answer the flags give (if any), then the run to its next
/// stop.
pub(super) async fn resume(door: &Answering<'_>, args: ResumeArgs) -> Result<u8> {
    let request = request(&args)?;
    match &door.to {
        To::Server(remote) => super::remote::resume(remote, &door.words, &args, request).await,
        To::Here(hub) => here(hub, door, &args, request).await,
    }
}

/// The flags' answer in the API's words; `None` when they give no decision.
pub(super) fn request(args: &ResumeArgs) -> Result<Option<AnswerRequest>> {
    let decision = if args.approve {
        "approve"
    } else if args.reject {
        "reject"
    } else if args.modify {
        "modify"
    } else if args.trust {
        "trust"
    } else if args.edit_args.is_some() {
        "edit"
    } else if args.response.is_some() {
        "respond"
    } else if args.vars.is_empty() {
        return Ok(None);
    } else {
        return Err(Error::Usage(
            "--var on resume comes with a decision (--approve, --reject, --modify, --response)"
                .into(),
        ));
    };
    let edited = match &args.edit_args {
        Some(raw) => Some(
            serde_json::from_str::<Value>(raw)
                .map_err(|e| Error::Usage(format!("--edit-args is not valid JSON: {e}")))?,
        ),
        None => None,
    };
    // Text, as typed: the spec's inputs and the gate's form type it.
    let text = |pairs: &[(String, String)]| -> Map<String, Value> {
        pairs
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect()
    };
    Ok(Some(AnswerRequest {
        decision: decision.into(),
        gate: args.gate.clone(),
        call: args.call.clone(),
        reason: args.reason.clone(),
        feedback: args.feedback.clone(),
        response: args.response.clone(),
        args: edited,
        vars: text(&args.vars),
        values: (!args.values.is_empty()).then(|| text(&args.values)),
        span: args.trust_for.clone(),
        matches: args.trust_match.clone(),
    }))
}

/// The answer taken by this store's hub, then the run driven here.
async fn here(
    hub: &Hub,
    door: &Answering<'_>,
    args: &ResumeArgs,
    request: Option<AnswerRequest>,
) -> Result<u8> {
    let words = &door.words;
    let id = hub.store.resolve(&args.id).await?;
    let mut interactive = args.interactive;
    if request.is_none() && !args.interactive && !args.auto_approve {
        // Without a decision, resume continues an interrupted run, applies
        // a timeout that has passed, or — paused — asks in a terminal.
        let s = hub.store.get(&id).await?;
        if let (Status::Paused, Some(g)) = (s.status, s.first_gate()) {
            if !s.open_gates().any(|g| g.timed_out(hub.clock.now())) {
                if std::io::stdin().is_terminal() {
                    eprintln!(
                        "session {id} is paused at gate `{}`; answer it here ([d] defers)",
                        g.id
                    );
                    interactive = true;
                } else {
                    return Err(Error::Usage(needs_answer(words, &s)));
                }
            }
        }
    }
    tracing::info!(session = %id, "resuming");
    if let Some(request) = request {
        let decision = request.decision().map_err(|p| Error::Usage(p.message))?;
        let limited = matches!(decision, crate::model::Decision::Trust { limit: Some(_) });
        // strands-cli's `run --resume ID --hitl-response` answers the first
        // open gate; otherwise `--gate`, or the only open gate.
        let first = match (&request.gate, args.first_open) {
            (None, true) => hub.store.get(&id).await?.first_gate().map(|g| g.handle()),
            _ => None,
        };
        let answer = DoorAnswer::new(&id, &door.who, Door::Cli, decision)
            .at(request.gate.as_deref().or(first.as_deref()))
            .call(request.call.as_deref())
            .vars(request.vars);
        match hub.record(answer).await? {
            // The same answer again, the run finished since: said as it ended.
            Ok(crate::engine::Accepted::Repeated(s)) if s.status.is_terminal() => {
                let notes = hub.store.notifications(&s.id).await?;
                return report(words, &s, args.json, notes.last());
            }
            Ok(_) if limited => {
                // The grant the answer made, as a rule people read.
                let made = hub
                    .store
                    .grants()
                    .await?
                    .into_iter()
                    .rfind(|g| g.origin.session == id);
                if let Some(g) = made {
                    eprintln!("granted {}: {}", g.id, g.rule());
                }
            }
            Ok(_) => {}
            Err(refusal @ Refusal::TimedOut { .. }) => {
                // The fallback wins; driving applies it.
                eprintln!("{refusal}");
            }
            Err(refusal) => {
                let status = hub.store.load(&id).await?.map(|s| s.status);
                return Err(refusal_error(&id, refusal, status));
            }
        }
    }
    let mut channel = cli_channel(interactive, args.auto_approve, &door.who, &hub.clock);
    let session = hub
        .continue_here(&id, &mut channel, args.force)
        .await
        .map_err(|e| with_resume(words, e))?;
    if let Some(e) = nobody_to_ask(words, &channel, &session) {
        return Err(e);
    }
    let notes = hub.store.notifications(&session.id).await?;
    report(words, &session, args.json, notes.last())
}

/// What a paused session needs when nobody can be asked here: its open
/// gates and the commands that answer them.
fn needs_answer(words: &Words, s: &Session) -> String {
    let open: Vec<&crate::model::OpenGate> = s.open_gates().collect();
    let id = &s.id;
    if let [g] = open.as_slice() {
        return format!(
            "session {id} is paused at gate `{}` and nobody can be asked here (stdin is not a terminal): answer with `{}`, --reject [--reason R], --modify --feedback F or --response TEXT (strands-cli: `strands run --resume {id} --hitl-response TEXT`)",
            g.id,
            words.resume_cmd(id, "--approve")
        );
    }
    let handles: Vec<String> = open.iter().map(|g| format!("`{}`", g.handle())).collect();
    format!(
        "session {id} is paused at {} gates ({}) and nobody can be asked here (stdin is not a terminal): answer each with --gate, e.g. `{}` (or --reject [--reason R], --modify --feedback F, --response TEXT)",
        open.len(),
        handles.join(", "),
        words.resume_cmd(
            id,
            &format!("--gate {} --approve", open.first().map(|g| g.handle()).unwrap_or_default())
        )
    )
}

/// A refused answer as the CLI reports it (message and exit code).
fn refusal_error(id: &str, refusal: Refusal, status: Option<Status>) -> Error {
    match refusal {
        Refusal::AlreadyAnswered(a) if status.is_some_and(|s| s.is_terminal()) => {
            Error::Session(format!(
                "session {id} is {}: {}",
                status.map(|s| s.to_string()).unwrap_or_default(),
                Refusal::AlreadyAnswered(a)
            ))
        }
        Refusal::BadAnswer(why) => Error::Usage(why),
        bad @ Refusal::BadValues(_) => Error::Usage(bad.to_string()),
        Refusal::NotOpen(Status::Running) => Error::Session(format!(
            "session {id} is running (interrupted or answered already); `strands resume {id}` without a decision continues it"
        )),
        Refusal::NotOpen(status) if status.is_terminal() => Error::Session(format!(
            "session {id} is {status}; there is nothing to resume"
        )),
        other => Error::Session(format!("session {id}: {other}")),
    }
}
