//! Commands from a verified `message` activity: `run NAME [key=value ...]`,
//! `list`, `status ID`, `cancel ID`, `help`, and a person's own
//! delegation (`delegate bob [from DAY] until DAY`, `undelegate`,
//! `delegations`: the people directory's name or address of the delegate,
//! [`crate::hub::people::delegations::command`]) — the Slack `/strands`
//! commands, on the same workflow directory and through the same hub (a
//! run is started by [`Hub::start`], a cancel is a rejection through the
//! engine's intake, which decides who may give it).
//!
//! The text is the message's with the bot's @mention taken out (the
//! `mention` entity naming `recipient.id`); the person is
//! `teams:<from.aadObjectId>` of the verified activity, never anything the
//! text says. A run started here remembers its conversation
//! (`Origin.channel` = `teams:<conversation id>`), so its approval is asked
//! there.

use serde_json::Value;

use crate::hub::answers::refusal_text;
use crate::hub::door::{Door, DoorAnswer};
use crate::hub::{Hub, StartRefusal};
use crate::model::{Decision, Origin, Status};
use crate::spec;

/// What `help` answers.
pub const HELP: &str = "Commands (mention me first in a channel):\n\n\
- `run NAME [key=value ...]` start a workflow from the workflows directory\n\
- `status ID` show a run\n\
- `list` runs paused in this conversation\n\
- `cancel ID` reject a paused run\n\
- `inbox` (or `pending`, in a 1:1 chat) what waits for you across runs, to approve or reject several at once\n\
- `delegate PERSON [from YYYY-MM-DD] until YYYY-MM-DD [reason TEXT]` someone answers for you while you are away (UTC days)\n\
- `undelegate [PERSON]`, `delegations`\n\
- `help` this text";

/// The identity of the Entra object ID `aad`, as answers record it.
pub fn person(aad: &str) -> String {
    crate::model::Approver::TeamsUser(aad.to_string()).to_string()
}

/// The place (origin channel) of conversation `id`.
pub fn place(conversation_id: &str) -> String {
    crate::model::Place::Teams(conversation_id.to_string()).to_string()
}

/// The command a `message` activity carries: its text without the bot's
/// @mention (the `mention` entity whose `mentioned.id` is `recipient.id`),
/// trimmed. `None` when it carries no text.
pub fn command_text(activity: &Value) -> Option<String> {
    let mut text = activity.get("text").and_then(Value::as_str)?.to_string();
    let bot = activity.pointer("/recipient/id").and_then(Value::as_str);
    for entity in activity
        .get("entities")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let is_bot = entity.get("type").and_then(Value::as_str) == Some("mention")
            && bot.is_some()
            && entity.pointer("/mentioned/id").and_then(Value::as_str) == bot;
        if let (true, Some(said)) = (is_bot, entity.get("text").and_then(Value::as_str)) {
            if !said.is_empty() {
                text = text.replacen(said, "", 1);
            }
        }
    }
    let text = text.replace("&nbsp;", " ").replace('\u{a0}', " ");
    Some(text.trim().to_string())
}

/// Who asked, and where: read from the verified activity only.
pub struct Asked<'a> {
    /// `teams:<aadObjectId>`.
    pub person: &'a str,
    /// The conversation's id.
    pub conversation: &'a str,
}

/// The reply to command `text` (markdown).
pub async fn handle(hub: &Hub, asked: &Asked<'_>, text: &str) -> String {
    // Teams clients may send typographic quotes; `k="a b"` keeps its spaces.
    let plain = text
        .replace(['\u{201c}', '\u{201d}'], "\"")
        .replace(['\u{2018}', '\u{2019}'], "'");
    let owned = match shell_words::split(&plain) {
        Ok(w) => w,
        Err(_) => return format!("Unbalanced quotes in `{text}`."),
    };
    let words: Vec<&str> = owned.iter().map(String::as_str).collect();
    match words.as_slice() {
        ["run", name, rest @ ..] => run(hub, asked, name, rest).await,
        ["status", id] => status(hub, id).await,
        ["list"] => list(hub, asked.conversation).await,
        ["cancel", id] => cancel(hub, id, asked.person).await,
        [verb @ ("delegate" | "undelegate" | "delegations"), rest @ ..] => {
            crate::hub::people::delegations::command(hub, asked.person, "teams", verb, rest).await
        }
        [] | ["help"] => HELP.to_string(),
        _ => format!("I don't understand `{text}`.\n\n{HELP}"),
    }
}

async fn run(hub: &Hub, asked: &Asked<'_>, name: &str, rest: &[&str]) -> String {
    let mut vars = Vec::new();
    for w in rest {
        match spec::parse_var(w) {
            Ok(kv) => vars.push(kv),
            Err(e) => return format!("{e}. Usage: `run {name} key=value ...`"),
        }
    }
    let here = place(asked.conversation);
    let origin = Origin {
        channel: here.clone(),
        user: asked.person.to_string(),
        approval_channel: here,
    };
    match hub.start(name, &vars, asked.person, Some(origin)).await {
        Ok(Ok(session)) => format!("started {name} as `{}`", session.id),
        Ok(Err(StartRefusal::Invalid { name, message })) => {
            format!("Workflow `{name}` is invalid:\n\n```\n{message}\n```")
        }
        Ok(Err(refusal)) => format!("Cannot run `{name}`: {refusal}."),
        Err(e) => format!("Could not start `{name}`: {e}"),
    }
}

async fn status(hub: &Hub, id: &str) -> String {
    let s = match hub.store.get(id).await {
        Ok(s) => s,
        Err(e) => return e.to_string(),
    };
    let mut text = format!("`{}` ({}) is **{}**", s.id, s.workflow, s.status);
    for (i, g) in s.open_gates().enumerate() {
        let sep = if i == 0 { " at" } else { "\n\nalso at" };
        text.push_str(&format!("{sep} gate `{}`: {}", g.id, g.prompt));
    }
    if let Some(f) = &s.failure {
        text.push_str(&format!("\n\nfailure: {}", f.message));
    }
    text
}

async fn list(hub: &Hub, conversation: &str) -> String {
    let paused = match hub.store.sessions_with_status(Status::Paused).await {
        Ok(p) => p,
        Err(e) => return e.to_string(),
    };
    let here = place(conversation);
    let lines: Vec<String> = paused
        .iter()
        .filter(|s| {
            s.origin
                .as_ref()
                .is_some_and(|o| o.channel == here || o.approval_channel == here)
        })
        .map(|s| {
            format!(
                "- `{}` {} — gate `{}`",
                s.id,
                s.workflow,
                s.open_gates()
                    .map(|g| g.id.as_str())
                    .collect::<Vec<_>>()
                    .join("`, `")
            )
        })
        .collect();
    if lines.is_empty() {
        "No runs are paused in this conversation.".into()
    } else {
        format!("Paused in this conversation:\n\n{}", lines.join("\n"))
    }
}

/// A rejection of the run's first open gate, through the engine's intake
/// (which decides whether `person` may give it).
async fn cancel(hub: &Hub, id: &str, person: &str) -> String {
    let session = match hub.store.get(id).await {
        Ok(s) => s,
        Err(e) => return e.to_string(),
    };
    let Some(handle) = session.first_gate().map(|g| g.handle()) else {
        return format!(
            "`{}` is {}; only paused runs can be cancelled",
            session.id, session.status
        );
    };
    let reject = Decision::Reject {
        reason: Some(format!(
            "cancelled by {person} with the Teams `cancel` command"
        )),
    };
    // Teams has no user groups of its own: membership is never claimed.
    let answer = DoorAnswer::new(&session.id, person, Door::Teams, reject).at(Some(&handle));
    match hub.take(answer).await {
        Ok(Ok(_)) => format!("cancelled `{}`", session.id),
        Ok(Err(r)) => format!("Not cancelled: {}", refusal_text(&r)),
        Err(e) => format!("Not cancelled: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_bots_mention_is_taken_out() {
        let a = json!({
            "text": "<at>strands</at> run deploy env=\u{201c}prod eu\u{201d}",
            "recipient": {"id": "28:app"},
            "entities": [
                {"type": "mention", "mentioned": {"id": "28:app"}, "text": "<at>strands</at>"},
                {"type": "clientInfo", "locale": "en-US"},
            ],
        });
        assert_eq!(
            command_text(&a).as_deref(),
            Some("run deploy env=\u{201c}prod eu\u{201d}")
        );
        // Someone else's mention stays; personal chat has plain text.
        let other = json!({
            "text": "<at>Ann</at> help",
            "recipient": {"id": "28:app"},
            "entities": [{"type": "mention", "mentioned": {"id": "29:ann"}, "text": "<at>Ann</at>"}],
        });
        assert_eq!(command_text(&other).as_deref(), Some("<at>Ann</at> help"));
        assert_eq!(
            command_text(&json!({"text": " list\u{a0}"})).as_deref(),
            Some("list")
        );
        assert_eq!(command_text(&json!({"value": {}})), None);
    }
}
