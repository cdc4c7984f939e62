//! Where the Teams room can post: a conversation reference, recorded when
//! the bot is added to a conversation and refreshed by every activity from
//! it (Teams moves a conversation's `serviceUrl` between regions).
//!
//! What this does not hold: who is in the conversation, or any message.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// What kind of conversation it is, as Teams names it
/// (`conversation.conversationType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ConversationKind {
    /// A 1:1 chat with the bot.
    Personal,
    /// A channel of a team.
    Channel,
    /// A group chat.
    GroupChat,
}

impl ConversationKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ConversationKind::Personal => "personal",
            ConversationKind::Channel => "channel",
            ConversationKind::GroupChat => "groupChat",
        }
    }
}

/// A stored conversation reference.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TeamsConversation {
    /// `conversation.id`.
    pub id: String,
    /// Where the Connector for this conversation is, as last seen.
    pub service_url: String,
    /// `channelData.tenant.id` (or `conversation.tenantId`).
    pub tenant_id: Option<String>,
    /// `channelId` (`msteams`).
    pub channel_id: String,
    /// `recipient.id` (`28:<app id>`).
    pub bot_id: String,
    pub kind: ConversationKind,
    /// `conversation.name`, when Teams gives one.
    pub name: Option<String>,
    pub first_seen: DateTime<Utc>,
    pub last_seen: DateTime<Utc>,
}

impl TeamsConversation {
    /// The reference as `strands teams conversations --json` and
    /// `GET /api/v1/teams/conversations` list it.
    pub fn listed(&self) -> serde_json::Value {
        serde_json::json!({
            "id": self.id,
            "type": self.kind.as_str(),
            "name": self.name,
            "tenant_id": self.tenant_id,
            "channel_id": self.channel_id,
            "bot_id": self.bot_id,
            "service_url": self.service_url,
            "service_host": self.service_host(),
            "first_seen": self.first_seen,
            "last_seen": self.last_seen,
        })
    }

    /// The host the service URL names (the URL itself when it has none).
    pub fn service_host(&self) -> String {
        url::Url::parse(&self.service_url)
            .ok()
            .and_then(|u| u.host_str().map(str::to_string))
            .unwrap_or_else(|| self.service_url.clone())
    }

    /// `self` as it is after `newer` was seen: everything from `newer`
    /// except the first sighting, and a name kept when `newer` has none.
    pub fn refreshed_by(&self, newer: &TeamsConversation) -> TeamsConversation {
        TeamsConversation {
            first_seen: self.first_seen.min(newer.first_seen),
            last_seen: self.last_seen.max(newer.last_seen),
            name: newer.name.clone().or_else(|| self.name.clone()),
            ..newer.clone()
        }
    }
}
