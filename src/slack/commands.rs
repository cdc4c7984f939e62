//! `/strands` slash commands: `run NAME [k=v ...] [--channel C]`,
//! `status ID`, `list`, `cancel ID`, `notify ID`, `help`, and a person's
//! own delegation: `delegate @bob [from DAY] until DAY`, `undelegate`,
//! `delegations` ([`crate::hub::people::delegations::command`]). Every answer is an
//! ephemeral message returned in the HTTP response (well inside Slack's 3 s);
//! runs continue in the background.

use serde_json::{json, Value};
use slack_morphism::prelude::SlackCommandEvent;

use super::app::App;
use super::decide::{decide, take};
use super::post;
use super::words::{refusal, who};
use crate::hub::StartRefusal;
use crate::model::{Answer, Decision};
use crate::model::{Origin, Status};
use crate::spec;

const HELP: &str = "Usage:\n\
• `/strands run NAME [key=value ...] [--channel C123]` start a workflow from the workflows directory\n\
• `/strands status ID` show a session\n\
• `/strands list` sessions paused in this channel\n\
• `/strands cancel ID` reject a paused session\n\
• `/strands notify ID` post a session's approval message again\n\
• `/strands delegate @PERSON [from YYYY-MM-DD] until YYYY-MM-DD [reason TEXT]` someone answers for you while you are away (UTC days)\n\
• `/strands undelegate [@PERSON]` · `/strands delegations`\n\
• `/strands help` this text";

fn ephemeral(text: impl Into<String>) -> Value {
    json!({ "response_type": "ephemeral", "text": text.into() })
}

pub async fn handle(app: &App, cmd: SlackCommandEvent) -> Value {
    let text = cmd.text.clone().unwrap_or_default();
    // Slack clients may send typographic quotes; `k="a b"` keeps its spaces.
    let plain = text
        .replace(['\u{201c}', '\u{201d}'], "\"")
        .replace(['\u{2018}', '\u{2019}'], "'");
    let owned = match shell_words::split(&plain) {
        Ok(w) => w,
        Err(_) => return ephemeral(format!("Unbalanced quotes in `{text}`.")),
    };
    let words: Vec<&str> = owned.iter().map(String::as_str).collect();
    match words.as_slice() {
        ["run", name, rest @ ..] => run(app, &cmd, name, rest).await,
        ["status", id] => status(app, id).await,
        ["list"] => list(app, &cmd.channel_id.0).await,
        ["cancel", id] => cancel(app, id, &cmd.user_id.0).await,
        ["notify", id] => notify(app, id).await,
        [verb @ ("delegate" | "undelegate" | "delegations"), rest @ ..] => {
            let user = &cmd.user_id.0;
            let said =
                crate::hub::people::delegations::command(&app.hub, user, "slack", verb, rest);
            ephemeral(said.await)
        }
        [] | ["help"] => ephemeral(HELP),
        _ => ephemeral(format!("I don't understand `{text}`.\n{HELP}")),
    }
}

async fn run(app: &App, cmd: &SlackCommandEvent, name: &str, rest: &[&str]) -> Value {
    let mut vars = Vec::new();
    let mut channel = None;
    let mut words = rest.iter();
    while let Some(w) = words.next() {
        if *w == "--channel" {
            channel = words.next().map(|c| c.trim_start_matches('#').to_string());
            continue;
        }
        match spec::parse_var(w) {
            Ok(kv) => vars.push(kv),
            Err(e) => return ephemeral(format!("{e}. Usage: `/strands run {name} key=value ...`")),
        }
    }
    let approval_channel = channel
        .or_else(|| app.config.approval_channel.clone())
        .unwrap_or_else(|| cmd.channel_id.0.clone());
    let origin = Origin {
        channel: cmd.channel_id.0.clone(),
        user: cmd.user_id.0.clone(),
        approval_channel,
    };
    match app
        .hub
        .start(name, &vars, &cmd.user_id.0, Some(origin))
        .await
    {
        Ok(Ok(session)) => ephemeral(format!("started {name} as {}", session.id)),
        Ok(Err(StartRefusal::Invalid { name, message })) => {
            ephemeral(format!("Workflow `{name}` is invalid:\n```{message}```"))
        }
        Ok(Err(refusal)) => ephemeral(format!("Cannot run `{name}`: {refusal}.")),
        Err(e) => ephemeral(format!("Could not start `{name}`: {e}")),
    }
}

async fn status(app: &App, id: &str) -> Value {
    let s = match app.hub.store.get(id).await {
        Ok(s) => s,
        Err(e) => return ephemeral(e.to_string()),
    };
    let mut text = format!("`{}` ({}) is *{}*", s.id, s.workflow, s.status);
    for (i, g) in s.open_gates().enumerate() {
        let sep = if i == 0 { " at" } else { "\nalso at" };
        text.push_str(&format!("{sep} gate `{}`: {}", g.id, g.prompt));
    }
    let notes = app.hub.store.notifications(&s.id).await.unwrap_or_default();
    if let Some(err) = notes.last().and_then(|n| n.error.as_ref()) {
        text.push_str(&format!(
            "\n⚠ the approval message could not be posted: {err} (`/strands notify {}`)",
            s.id
        ));
    }
    if let Some(f) = &s.failure {
        text.push_str(&format!("\nfailure: {}", f.message));
    }
    ephemeral(text)
}

async fn list(app: &App, channel: &str) -> Value {
    let paused = match app.hub.store.sessions_with_status(Status::Paused).await {
        Ok(p) => p,
        Err(e) => return ephemeral(e.to_string()),
    };
    let mut asked_here = std::collections::HashSet::new();
    for s in &paused {
        let notes = app.hub.store.notifications(&s.id).await.unwrap_or_default();
        if notes.iter().any(|n| n.channel == channel) {
            asked_here.insert(s.id.clone());
        }
    }
    let here: Vec<String> = paused
        .iter()
        .filter(|s| {
            s.origin
                .as_ref()
                .is_some_and(|o| o.channel == channel || o.approval_channel == channel)
                || asked_here.contains(&s.id)
        })
        .map(|s| {
            format!(
                "• `{}` {} — gate `{}`",
                s.id,
                s.workflow,
                s.open_gates()
                    .map(|g| g.id.as_str())
                    .collect::<Vec<_>>()
                    .join("`, `")
            )
        })
        .collect();
    if here.is_empty() {
        ephemeral("No sessions are paused in this channel.")
    } else {
        ephemeral(format!("Paused in this channel:\n{}", here.join("\n")))
    }
}

async fn cancel(app: &App, id: &str, user: &str) -> Value {
    let session = match app.hub.store.get(id).await {
        Ok(s) => s,
        Err(e) => return ephemeral(e.to_string()),
    };
    let Some(handle) = session.first_gate().map(|g| g.handle()) else {
        return ephemeral(format!(
            "`{}` is {}; only paused sessions can be cancelled",
            session.id, session.status
        ));
    };
    let answer = Answer {
        decision: Decision::Reject {
            reason: Some(format!("cancelled by {} with /strands cancel", who(user))),
        },
        by: user.to_string(),
        at: app.hub.clock.now(),
        via: "slack".into(),
        vars: Default::default(),
        call: None,
        person: None,
        on_behalf_of: None,
        step_up: None,
        idp_group: None,
    };
    let target = app
        .hub
        .store
        .notifications(&session.id)
        .await
        .unwrap_or_default()
        .into_iter()
        .rev()
        .find(|n| n.gate == handle)
        .and_then(|n| n.ts.map(|ts| (n.channel, ts)));
    let outcome = match target {
        Some((channel, ts)) => decide(app, &channel, &ts, &handle, answer).await,
        // No message to update: the same intake, then the run goes on.
        None => match take(app, &session, &handle, &answer).await {
            Ok(Ok(_)) => Ok(Ok(())),
            Ok(Err(r)) => Ok(Err(r)),
            Err(e) => Err(e),
        },
    };
    match outcome {
        Ok(Ok(())) => ephemeral(format!("cancelled `{}`", session.id)),
        Ok(Err(r)) => ephemeral(format!("Not cancelled: {}", refusal(&r))),
        Err(e) => ephemeral(format!("Not cancelled: {e}")),
    }
}

async fn notify(app: &App, id: &str) -> Value {
    let session = match app.hub.store.get(id).await {
        Ok(s) => s,
        Err(e) => return ephemeral(e.to_string()),
    };
    if session.status != Status::Paused {
        return ephemeral(format!(
            "`{}` is {}, not waiting for anyone",
            session.id, session.status
        ));
    }
    let app = app.clone();
    let sid = session.id.clone();
    app.clone().tasks().spawn(async move {
        if let Err(e) = post::notify(&app, &sid).await {
            tracing::error!(session = %sid, "notify failed: {e}");
        }
    });
    ephemeral(format!(
        "posting the approval message for `{}` again",
        session.id
    ))
}

#[cfg(test)]
mod tests {
    #[test]
    fn quoted_values_keep_their_spaces() {
        let plain = "run research topic=\u{201c}durable approvals\u{201d} n=3"
            .replace(['\u{201c}', '\u{201d}'], "\"");
        let words = shell_words::split(&plain).expect("balanced");
        assert_eq!(
            words,
            vec!["run", "research", "topic=durable approvals", "n=3"]
        );
    }
}
