//! The Teams room's way in: `POST /api/messages`, where the Bot Framework
//! delivers activities, mounted by `strands serve` when the room is on.
//!
//! | route | what |
//! |---|---|
//! | `POST /api/messages` | an activity: verified, its conversation remembered, acknowledged |
//!
//! The handler is thin: the body is read with the service's size limit
//! (413 over it), parsed (400 when it is not JSON), and its bearer token
//! checked by the one [`Verifier`] the server keeps (keys cached). A
//! refusal answers the status [`Refused::status`] gives with a small JSON
//! error, counts `strands_teams_refusals_total{reason}` and is audited
//! (kind, reason, activity type, the claimed `from.aadObjectId`; never the
//! token) — one entry each, at most [`AUDITED_REFUSALS_PER_MINUTE`] a
//! minute, the rest counted only, with one entry saying so; nothing else
//! changes. A verified activity is counted
//! (`strands_teams_activities_total{type}`) and refreshes its
//! conversation's reference in the store ([`TeamsConversation`]): Teams
//! moves `serviceUrl` between regions, so every activity brings the
//! current one.
//!
//! In the local Playground mode (`TEAMS_LOCAL_PLAYGROUND=1`, see
//! [`super::settings`]) there is no token to check: an activity is taken
//! only from a loopback peer, naming a loopback `http://` `serviceUrl`
//! ([`local_check`]); anything else is refused (401) and audited like a bad
//! token.
//!
//! A verified `message` with text is a command ([`super::commands`]):
//! carried out once per activity id in its conversation (the store
//! remembers the ids it has seen: a redelivery, to any replica or after a
//! restart, is acknowledged and does nothing), acknowledged with `{}` at
//! once, carried out in the background, and
//! answered in the conversation through the server's one [`Connector`]
//! (a reply in the message's thread in a channel, a message elsewhere);
//! `inbox` is answered with the person's inbox card ([`super::inbox`]).
//!
//! A card action ([`super::actions`]) — an `invoke` named
//! `adaptiveCard/action`, or an `Action.Submit` message carrying `value` —
//! is an answer handed to the hub; the invoke's HTTP response is the
//! updated card (or why not). Other invokes are acknowledged with `{}`.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use super::auth::{Refused, Verifier};
use super::commands::{self, Asked};
use super::connector::Connector;
use super::{Clock, TeamsSettings};
use crate::audit::{AuditEvent, AuditKind};
use crate::error::{Error, Result};
use crate::hub::Hub;
use crate::model::teams::{ConversationKind, TeamsConversation};

/// The path the Azure Bot's messaging endpoint names.
pub const MESSAGES_PATH: &str = "/api/messages";

/// What the route shares: the hub and the one verifier.
#[derive(Clone)]
pub struct Door(Arc<Inner>);

struct Inner {
    hub: Hub,
    verifier: Verifier,
    /// The local Playground mode: loopback instead of a token.
    local: bool,
    /// The one connector (and its token cache) replies go out through.
    connector: Arc<Connector>,
    clock: Clock,
    /// Where runs started elsewhere are asked, and the bot's app ID (for
    /// the 1:1 conversations it opens): what the room needs of the settings.
    approvals: Option<String>,
    app_id: String,
    /// Refusals audited in the current minute (its start, how many).
    audited: std::sync::Mutex<(DateTime<Utc>, u32)>,
}

/// At most this many refused activities a minute get an audit entry each;
/// the rest are counted in `/metrics` only. Anyone can send a refused
/// request — an unbounded audit entry per request would let them grow the
/// hash-chained trail at will.
pub const AUDITED_REFUSALS_PER_MINUTE: u32 = 60;

/// Whether the refusal seen at `now` gets an audit entry of its own:
/// `Some(true)` yes, `Some(false)` no but say once that the budget ran out
/// (this is the first one over it), `None` neither.
fn audit_budget(window: &mut (DateTime<Utc>, u32), now: DateTime<Utc>) -> Option<bool> {
    if now - window.0 >= chrono::Duration::minutes(1) || now < window.0 {
        *window = (now, 0);
    }
    window.1 = window.1.saturating_add(1);
    match window.1 {
        n if n <= AUDITED_REFUSALS_PER_MINUTE => Some(true),
        n if n == AUDITED_REFUSALS_PER_MINUTE + 1 => Some(false),
        _ => None,
    }
}

impl Door {
    /// The door for `settings`, on `hub`, reading the time from `clock`.
    pub fn new(hub: Hub, settings: &TeamsSettings, clock: Clock) -> Result<Door> {
        let verifier = Verifier::new(settings, Arc::clone(&clock))
            .map_err(|e| Error::Internal(format!("cannot build the Teams HTTP client: {e}")))?;
        let connector = Connector::new(settings, Arc::clone(&clock))
            .map_err(|e| Error::Internal(format!("cannot build the Teams connector: {e}")))?;
        let start = clock.now();
        Ok(Door(Arc::new(Inner {
            hub,
            verifier,
            local: settings.local_playground,
            connector: Arc::new(connector),
            clock,
            approvals: settings.approvals_conversation.clone(),
            app_id: settings.app_id.clone(),
            audited: std::sync::Mutex::new((start, 0)),
        })))
    }
}

impl Door {
    /// The room that posts approval cards, sharing this door's connector.
    pub fn room(&self) -> super::room::TeamsRoom {
        super::room::TeamsRoom::new(
            self.0.hub.clone(),
            Arc::clone(&self.0.connector),
            self.0.approvals.clone(),
            self.0.app_id.clone(),
        )
    }
}

/// `POST /api/messages`.
pub fn router(door: Door) -> Router {
    Router::new()
        .route(MESSAGES_PATH, post(messages_route))
        .with_state(door)
}

/// A small JSON error, the shape the API's refusals have.
fn error(status: StatusCode, code: &str, message: &str) -> Response {
    (
        status,
        Json(json!({ "error": { "code": code, "message": message } })),
    )
        .into_response()
}

async fn messages_route(
    State(door): State<Door>,
    extensions: axum::http::Extensions,
    headers: HeaderMap,
    body: axum::body::Body,
) -> Response {
    let d = &door.0;
    let bytes: Bytes = match axum::body::to_bytes(body, d.hub.max_body_bytes).await {
        Ok(b) => b,
        Err(_) => {
            d.hub.metrics.teams_refused("body_too_large");
            return error(
                StatusCode::PAYLOAD_TOO_LARGE,
                "body_too_large",
                "request body too large",
            );
        }
    };
    let activity: Value = match serde_json::from_slice(&bytes) {
        Ok(v @ Value::Object(_)) => v,
        _ => {
            d.hub.metrics.teams_refused("bad_json");
            return error(
                StatusCode::BAD_REQUEST,
                "bad_json",
                "the body is not a JSON activity",
            );
        }
    };
    let authorization = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    let kind = activity_type(&activity);
    let checked = if d.local {
        let peer = extensions
            .get::<axum::extract::ConnectInfo<SocketAddr>>()
            .map(|c| c.0);
        local_check(peer, &activity)
    } else {
        d.verifier
            .verify(authorization, &activity)
            .await
            .map(|_| ())
    };
    if let Err(refused) = checked {
        refuse(&door, &refused, &kind, &activity).await;
        return error(refused.status(), refused.kind(), &refused.to_string());
    }
    d.hub.metrics.teams_activity(&kind);
    // The sender's name, for cards (display only; identity is the aad).
    if let (Some(aad), Some(name)) = (
        str_at(&activity, "/from/aadObjectId"),
        str_at(&activity, "/from/name"),
    ) {
        super::names::seen(aad, name);
    }
    let now = d.clock.now();
    if !removes_the_bot(&activity) {
        if let Some(conversation) = reference(&activity, now) {
            if let Err(e) = d.hub.store.put_teams_conversation(&conversation).await {
                tracing::error!(conversation = %conversation.id, "could not record a Teams conversation: {e}");
                return error(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "store",
                    "the conversation could not be recorded",
                );
            }
            if adds_the_bot(&activity) {
                tracing::info!(
                    conversation = %conversation.id,
                    kind = conversation.kind.as_str(),
                    "the Teams room was added to a conversation"
                );
            }
        }
    }
    if kind == "invoke"
        && activity.get("name").and_then(Value::as_str) == Some("adaptiveCard/action")
    {
        return Json(super::actions::invoke(&door.room(), &activity).await).into_response();
    }
    if kind == "message" && activity.get("value").is_some() {
        super::actions::submit(door.room(), activity);
    } else if kind == "message" {
        if let Some(key) = command_key(&activity) {
            match d.hub.store.first_sighting(&key).await {
                Ok(true) => {}
                Ok(false) => {
                    tracing::info!(
                        "a Teams command delivered again is acknowledged, not carried out"
                    );
                    return (StatusCode::OK, Json(json!({}))).into_response();
                }
                Err(e) => {
                    tracing::error!("Teams command dedup failed: {e}");
                    return error(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        "store",
                        "the activity could not be recorded",
                    );
                }
            }
        }
        command(&door, activity);
    }
    (StatusCode::OK, Json(json!({}))).into_response()
}

/// The store's sighting key of a command `message`: its activity id,
/// scoped by its conversation (ids are unique within one), so the Bot
/// Framework's redelivery of it — to any replica, after a restart — is
/// carried out once. `None` for a message with no text, id or
/// conversation (nothing to carry out, or nothing to know it again by).
fn command_key(activity: &Value) -> Option<String> {
    commands::command_text(activity)?;
    let conversation = str_at(activity, "/conversation/id")?;
    let id = str_at(activity, "/id")?;
    Some(format!("teams-cmd:{conversation}:{id}"))
}

/// The local Playground mode's check, in place of a token: the request
/// came from this machine, and the activity's `serviceUrl` (where answers
/// go) is plain HTTP on this machine too.
pub fn local_check(peer: Option<SocketAddr>, activity: &Value) -> std::result::Result<(), Refused> {
    match peer {
        Some(p) if p.ip().is_loopback() => {}
        Some(_) => return Err(Refused::NotLocal("the request came from another machine")),
        None => return Err(Refused::NotLocal("the request's peer address is unknown")),
    }
    let url = str_at(activity, "/serviceUrl")
        .and_then(|u| url::Url::parse(u).ok())
        .ok_or(Refused::NotLocal("the activity has no serviceUrl"))?;
    let loopback = match url.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    };
    if url.scheme() != "http" || !loopback {
        return Err(Refused::NotLocal(
            "the activity's serviceUrl is not http:// on localhost, 127.0.0.1 or [::1]",
        ));
    }
    Ok(())
}

/// Carries out the command a verified `message` carries, in the
/// background, and answers it in the conversation. A message without
/// text, a sender's object ID or a conversation to answer in is ignored.
fn command(door: &Door, activity: Value) {
    let Some(text) = commands::command_text(&activity) else {
        return;
    };
    let (Some(aad), Some(conversation), Some(service_url)) = (
        str_at(&activity, "/from/aadObjectId"),
        str_at(&activity, "/conversation/id"),
        str_at(&activity, "/serviceUrl"),
    ) else {
        return;
    };
    let (person, conversation, service_url) = (
        commands::person(aad),
        conversation.to_string(),
        service_url.to_string(),
    );
    let kind = conversation_kind(&activity);
    let in_channel = kind == ConversationKind::Channel;
    let reply_to = str_at(&activity, "/id").map(str::to_string);
    let tasks = door.0.hub.tasks().clone();
    let door = door.clone();
    tasks.spawn(async move {
        let d = &door.0;
        let asked = Asked {
            person: &person,
            conversation: &conversation,
        };
        let reply = if super::inbox::asked(&text) {
            let personal = kind == ConversationKind::Personal;
            super::inbox::reply(&d.hub, &person, personal).await
        } else {
            let said = commands::handle(&d.hub, &asked, &text).await;
            json!({ "type": "message", "textFormat": "markdown", "text": said })
        };
        let sent = match (&reply_to, in_channel) {
            (Some(id), true) => d
                .connector
                .reply(&service_url, &conversation, id, &reply)
                .await
                .map(|_| ()),
            _ => d
                .connector
                .send(&service_url, &conversation, &reply)
                .await
                .map(|_| ()),
        };
        if let Err(e) = sent {
            tracing::warn!(conversation = %conversation, "could not answer a Teams command: {e}");
        }
    });
}

/// Counts, logs and audits a refused activity. The token is never
/// recorded; what the activity claims is cut short and marked unverified.
async fn refuse(door: &Door, refused: &Refused, kind: &str, activity: &Value) {
    let d = &door.0;
    d.hub.metrics.teams_refused(refused.kind());
    tracing::warn!(
        reason = refused.kind(),
        activity = kind,
        "refused a Teams activity: {refused}"
    );
    let budget = match d.audited.lock() {
        Ok(mut window) => audit_budget(&mut window, d.clock.now()),
        Err(_) => Some(true),
    };
    let mut ev = AuditEvent::new(AuditKind::Refusal, "", "", door.0.clock.now());
    ev.via = Some("teams".into());
    match budget {
        Some(true) => {}
        Some(false) => {
            ev.detail = Some(format!(
                "more than {AUDITED_REFUSALS_PER_MINUTE} refused Teams activities in a minute: further ones this minute are counted in strands_teams_refusals_total only"
            ));
            d.hub.audit_refusal(ev).await;
            return;
        }
        None => return,
    }
    let claimed = activity
        .pointer("/from/aadObjectId")
        .and_then(Value::as_str)
        .map(|s| short(s, 64));
    ev.detail = Some(format!(
        "refused a Teams {kind} activity ({}): {}{}",
        refused.kind(),
        short(&refused.to_string(), 200),
        claimed
            .map(|id| format!("; from.aadObjectId {id} (unverified)"))
            .unwrap_or_default()
    ));
    d.hub.audit_refusal(ev).await;
}

/// At most `max` characters of `s`.
fn short(s: &str, max: usize) -> String {
    s.chars().take(max).collect()
}

/// The activity's `type`, as a label: letters only, else `other`.
fn activity_type(activity: &Value) -> String {
    match activity.get("type").and_then(Value::as_str) {
        Some(t) if !t.is_empty() && t.len() <= 64 && t.bytes().all(|b| b.is_ascii_alphabetic()) => {
            t.to_string()
        }
        _ => "other".into(),
    }
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> Option<&'a str> {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

/// Whether `list` (`membersAdded`/`membersRemoved`) names the bot.
fn names_the_bot(activity: &Value, list: &str) -> bool {
    let Some(bot) = str_at(activity, "/recipient/id") else {
        return false;
    };
    activity.get("type").and_then(Value::as_str) == Some("conversationUpdate")
        && activity
            .get(list)
            .and_then(Value::as_array)
            .is_some_and(|members| {
                members
                    .iter()
                    .any(|m| m.get("id").and_then(Value::as_str) == Some(bot))
            })
}

/// A `conversationUpdate` that adds the bot: it was installed there.
fn adds_the_bot(activity: &Value) -> bool {
    names_the_bot(activity, "membersAdded")
}

/// A `conversationUpdate` that removes the bot: nothing to refresh.
fn removes_the_bot(activity: &Value) -> bool {
    names_the_bot(activity, "membersRemoved")
}

/// The kind of conversation an activity comes from: its
/// `conversationType`, else a group chat when `isGroup`, else personal.
fn conversation_kind(activity: &Value) -> ConversationKind {
    match str_at(activity, "/conversation/conversationType") {
        Some("channel") => ConversationKind::Channel,
        Some("groupChat") => ConversationKind::GroupChat,
        Some("personal") => ConversationKind::Personal,
        _ if activity.pointer("/conversation/isGroup") == Some(&Value::Bool(true)) => {
            ConversationKind::GroupChat
        }
        _ => ConversationKind::Personal,
    }
}

/// The conversation reference an activity carries, seen at `now`; `None`
/// when it lacks the conversation id, the service URL or the bot's id.
fn reference(activity: &Value, now: DateTime<Utc>) -> Option<TeamsConversation> {
    let kind = conversation_kind(activity);
    Some(TeamsConversation {
        id: str_at(activity, "/conversation/id")?.to_string(),
        service_url: str_at(activity, "/serviceUrl")?.to_string(),
        tenant_id: str_at(activity, "/channelData/tenant/id")
            .or_else(|| str_at(activity, "/conversation/tenantId"))
            .map(str::to_string),
        channel_id: str_at(activity, "/channelId")
            .unwrap_or("msteams")
            .to_string(),
        bot_id: str_at(activity, "/recipient/id")?.to_string(),
        kind,
        name: str_at(activity, "/conversation/name").map(str::to_string),
        first_seen: now,
        last_seen: now,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_local_mode_takes_activities_from_this_machine_only() {
        let here: SocketAddr = "127.0.0.1:40000".parse().expect("addr");
        let v6: SocketAddr = "[::1]:40000".parse().expect("addr");
        let away: SocketAddr = "10.0.0.7:40000".parse().expect("addr");
        let at = |u: &str| json!({"type": "message", "serviceUrl": u});
        for ok in [
            "http://localhost:56000/_connector",
            "http://127.0.0.1:56000/_connector",
            "http://[::1]:56000/_connector",
        ] {
            assert_eq!(local_check(Some(here), &at(ok)), Ok(()), "{ok}");
            assert_eq!(local_check(Some(v6), &at(ok)), Ok(()), "{ok}");
        }
        for bad in [
            "https://smba.trafficmanager.net/amer/",
            "http://10.0.0.7:56000/_connector",
            "http://localhost.evil.example/_connector",
            "https://localhost:56000/_connector",
            "not a url",
        ] {
            let r = local_check(Some(here), &at(bad));
            assert!(matches!(r, Err(Refused::NotLocal(_))), "{bad}: {r:?}");
        }
        let r = local_check(Some(away), &at("http://localhost:56000/_connector"));
        assert!(matches!(r, Err(Refused::NotLocal(_))), "{r:?}");
        assert_eq!(
            local_check(None, &at("http://localhost:1/")).map_err(|e| e.status()),
            Err(StatusCode::UNAUTHORIZED)
        );
        assert!(local_check(Some(here), &json!({"type": "message"})).is_err());
    }

    fn install() -> Value {
        json!({
            "type": "conversationUpdate",
            "serviceUrl": "https://smba.trafficmanager.net/amer/",
            "channelId": "msteams",
            "recipient": {"id": "28:app"},
            "conversation": {"id": "19:c@thread.tacv2", "conversationType": "channel", "name": "General", "tenantId": "t0"},
            "channelData": {"tenant": {"id": "t1"}},
            "membersAdded": [{"id": "28:app"}],
        })
    }

    #[test]
    fn an_install_is_read_as_a_reference() {
        let now = crate::clock::test_epoch();
        let a = install();
        assert!(adds_the_bot(&a));
        assert!(!removes_the_bot(&a));
        let r = reference(&a, now).expect("a reference");
        assert_eq!(r.id, "19:c@thread.tacv2");
        assert_eq!(r.kind, ConversationKind::Channel);
        assert_eq!(r.tenant_id.as_deref(), Some("t1"));
        assert_eq!(r.bot_id, "28:app");
        assert_eq!(r.name.as_deref(), Some("General"));
        let mut gone = a.clone();
        gone["membersRemoved"] = gone["membersAdded"].take();
        assert!(removes_the_bot(&gone));
        let mut bare = a;
        bare["conversation"] = json!({"id": "a:1", "isGroup": true});
        assert_eq!(
            reference(&bare, now).expect("ref").kind,
            ConversationKind::GroupChat
        );
        bare["serviceUrl"] = Value::Null;
        assert!(reference(&bare, now).is_none());
    }

    #[test]
    fn refusals_are_audited_one_each_up_to_the_budget_a_minute() {
        let t0 = crate::clock::test_epoch();
        let mut window = (t0, 0);
        for _ in 0..super::AUDITED_REFUSALS_PER_MINUTE {
            assert_eq!(super::audit_budget(&mut window, t0), Some(true));
        }
        // The first over the budget says so once; the rest are not audited.
        assert_eq!(super::audit_budget(&mut window, t0), Some(false));
        assert_eq!(super::audit_budget(&mut window, t0), None);
        // A minute on, the budget is whole again.
        let later = t0 + chrono::Duration::seconds(61);
        assert_eq!(super::audit_budget(&mut window, later), Some(true));
    }

    #[test]
    fn activity_types_are_bounded_labels() {
        assert_eq!(activity_type(&json!({"type": "message"})), "message");
        assert_eq!(activity_type(&json!({"type": "a b{"})), "other");
        assert_eq!(activity_type(&json!({})), "other");
    }
}
