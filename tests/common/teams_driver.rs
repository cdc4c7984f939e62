//! Acting as Teams towards a real `strands serve`: a Bot Framework token
//! signed with the test-only fixture key the fake Bot Framework publishes
//! (kid `k1`), and the activities a Teams channel sends — an @mention
//! command and an `Action.Execute` card action. Shared by the Teams tests
//! and the invoke bench.

use base64::Engine as _;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{json, Value};

use super::fake_teams::{self, APP_ID};

/// The bot's id in the conversation.
pub const BOT: &str = "28:app-id-1";
/// The channel the activities come from.
pub const CHANNEL: &str = "19:general@thread.tacv2";
/// The tenant they carry.
pub const TENANT: &str = "tid-ours";

/// A PKCS#1 PEM fixture as the DER `jsonwebtoken` signs with.
pub fn private_key(name: &str) -> EncodingKey {
    let pem = fake_teams::fixture(name);
    let b64: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
    let der = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .expect("PEM body is base64");
    EncodingKey::from_rsa_der(&der)
}

/// A Bot Framework token for `service_url`, valid for an hour, signed by
/// the fixture key `key_file` under kid `k1`.
pub fn token(service_url: &str, key_file: &str) -> String {
    let t = chrono::Utc::now().timestamp();
    let claims = json!({
        "iss": "https://api.botframework.com",
        "aud": APP_ID,
        "serviceurl": service_url,
        "nbf": t - 60,
        "exp": t + 3600,
    });
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some("k1".into());
    jsonwebtoken::encode(&header, &claims, &private_key(key_file)).expect("signs")
}

/// An activity in [`CHANNEL`] from `aad`, with `extra` fields merged in.
pub fn in_channel(service_url: &str, id: &str, aad: &str, extra: Value) -> Value {
    let mut a = json!({
        "id": id,
        "channelId": "msteams",
        "serviceUrl": service_url,
        "from": {"id": format!("29:{aad}"), "aadObjectId": aad, "name": format!("Person {aad}")},
        "recipient": {"id": BOT, "name": "strands"},
        "conversation": {"id": CHANNEL, "conversationType": "channel", "isGroup": true},
        "channelData": {"tenant": {"id": TENANT}},
    });
    if let (Some(a), Value::Object(extra)) = (a.as_object_mut(), extra) {
        a.extend(extra);
    }
    a
}

/// `@strands <text>` said by `aad` in the channel.
pub fn command(service_url: &str, id: &str, aad: &str, text: &str) -> Value {
    in_channel(
        service_url,
        id,
        aad,
        json!({"type": "message", "text": format!("<at>strands</at> {text}"),
               "entities": [{"type": "mention", "mentioned": {"id": BOT, "name": "strands"}, "text": "<at>strands</at>"}]}),
    )
}

/// `aad` clicks the card's `verb` button for `gate` of `session`.
pub fn card_action(
    service_url: &str,
    id: &str,
    aad: &str,
    verb: &str,
    session: &str,
    gate: &str,
) -> Value {
    in_channel(
        service_url,
        id,
        aad,
        json!({"type": "invoke", "name": "adaptiveCard/action", "replyToId": "card",
               "value": {"action": {"type": "Action.Execute", "verb": verb,
                                    "data": {"session": session, "gate": gate}}}}),
    )
}

/// Every `Action.Execute` on a card (or an activity carrying one) as
/// `(verb, data)`, nested cards included, in order.
pub fn executes(v: &Value) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    match v {
        Value::Object(m) => {
            if m.get("type") == Some(&json!("Action.Execute")) {
                out.push((
                    m["verb"].as_str().unwrap_or_default().to_string(),
                    m["data"].clone(),
                ));
            }
            m.values().for_each(|x| out.extend(executes(x)));
        }
        Value::Array(a) => a.iter().for_each(|x| out.extend(executes(x))),
        _ => {}
    }
    out
}

/// Every `Action.Execute` verb on a card: none once it is decided.
pub fn verbs(v: &Value) -> Vec<String> {
    executes(v).into_iter().map(|(verb, _)| verb).collect()
}

/// The `data` of the card's first `Action.Execute` with `verb` (and, for a
/// tool-call card, `call`).
pub fn action_data(card: &Value, verb: &str, call: Option<&str>) -> Option<Value> {
    executes(card)
        .into_iter()
        .find(|(v, d)| v == verb && call.is_none_or(|c| d["call"] == c))
        .map(|(_, d)| d)
}
