//! The Slack room's shared state: one [`App`], cheap to clone, that every
//! part of the room takes — the room's settings, the service it belongs to
//! ([`crate::hub::Hub`]: store, settings, drives, timers), the Web API
//! client, the templates — and what the parts keep between requests: the
//! posts in flight (a click may come before its message is indexed), the
//! user groups' members, the order of a message's updates, who keeps their
//! App Home tab open.
//!
//! It holds no job of its own. The parts take it: [`super::dispatch`]
//! receives, [`super::decide`] turns a click into an answer, [`super::post`]
//! asks, [`super::update`] shows what was decided, [`super::home`] keeps the
//! home tabs. What is here answers from this state alone (where a session
//! is asked, what a message asks about, a group's members), so every part
//! may use it and it uses none of them: the room's imports point one way.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::api::SlackApi;
use super::blocks::Templates;
use super::config::Config;
use crate::error::Result;
use crate::hub::metrics::Metrics;
use crate::hub::Hub;
use crate::model::Session;

/// A message's latest re-render: its lock orders `chat.update`s of one
/// message, and it holds the store revision last shown.
pub(super) type UpdateSlot = Arc<tokio::sync::Mutex<u64>>;
/// Tool-approval messages whose update order is tracked at most; beyond it
/// the table starts over (an update racing that moment may show an older
/// state until the next decision).
const MAX_UPDATE_SLOTS: usize = 4096;

/// Everything a handler or background task needs. Cheap to clone.
#[derive(Clone)]
pub struct App(Arc<Inner>);

pub struct Inner {
    pub config: Config,
    /// The service this room belongs to (store, settings, drives, timers).
    pub hub: Hub,
    pub api: SlackApi,
    pub templates: Templates,
    pub metrics: Arc<Metrics>,
    /// Channels with an approval message posted but not yet indexed: Slack
    /// shows a message before `chat.postMessage` returns its `ts` to us.
    posting: Mutex<HashMap<String, usize>>,
    /// User-group members by group id, with when they were fetched.
    groups: Mutex<HashMap<String, (std::time::Instant, HashSet<String>)>>,
    /// Tool-approval messages by (channel, ts): per-call decisions re-render
    /// the message, and a slower update must not overwrite a newer one.
    updates: Mutex<HashMap<(String, String), UpdateSlot>>,
    /// Who opened their App Home tab lately (kept up to date).
    pub home: Viewers,
}

impl std::ops::Deref for App {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        &self.0
    }
}

impl App {
    pub fn new(config: Config, hub: Hub) -> Result<App> {
        let metrics = Arc::clone(&hub.metrics);
        let api = SlackApi::new(&config, hub.settings.retry, Arc::clone(&metrics))?;
        let templates =
            Templates::load(config.templates.as_deref())?.with_web_base(&hub.public_url);
        Ok(App(Arc::new(Inner {
            config,
            hub,
            api,
            templates,
            metrics,
            posting: Mutex::new(HashMap::new()),
            groups: Mutex::new(HashMap::new()),
            updates: Mutex::new(HashMap::new()),
            home: Default::default(),
        })))
    }

    pub fn tasks(&self) -> &tokio_util::task::TaskTracker {
        self.hub.tasks()
    }

    /// Drives `id` in the background (the service's one drive).
    pub fn drive(&self, id: String) {
        self.hub.drive(id)
    }

    /// Where approval messages for `session` go: the channel the open gate
    /// names, else the one the run's command chose (its `--channel`,
    /// `STRANDS_APPROVAL_CHANNEL`, or the channel it came from), else
    /// `STRANDS_APPROVAL_CHANNEL` — except a run started in another room
    /// (Teams), which Slack asks only where its gate names a channel.
    pub fn approval_channel(&self, session: &Session) -> Option<String> {
        self.channel_for(session, session.first_gate())
    }

    /// [`App::approval_channel`] for one open gate.
    pub fn channel_for(
        &self,
        session: &Session,
        gate: Option<&crate::model::OpenGate>,
    ) -> Option<String> {
        let named = gate.and_then(|g| g.channel.clone());
        match session.origin.as_ref().map(|o| o.approval_channel.clone()) {
            // A run started in another room (Teams) is asked there; Slack
            // asks only where its gate names a channel.
            Some(place) if crate::model::Place::parse(&place).slack().is_none() => named,
            origin => named
                .or(origin)
                .or_else(|| self.config.approval_channel.clone()),
        }
    }

    /// The session an approval message asks about, if the message is known.
    pub async fn session_of(&self, channel: &str, ts: &str) -> Option<Session> {
        let target = self
            .hub
            .store
            .message_target(channel, ts)
            .await
            .ok()
            .flatten()?;
        self.hub.store.load(&target.session).await.ok().flatten()
    }

    /// The session and gate a message asks about. A click can arrive before
    /// we learn the message's `ts`; while a post to that channel is in
    /// flight, wait for it (well inside Slack's 3 s) instead of refusing.
    pub async fn message_target(
        &self,
        channel: &str,
        ts: &str,
    ) -> Result<Option<crate::model::MessageTarget>> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_millis(2000);
        loop {
            if let Some(t) = self.hub.store.message_target(channel, ts).await? {
                return Ok(Some(t));
            }
            let in_flight = self.lock_posting().get(channel).is_some_and(|n| *n > 0);
            if !in_flight || std::time::Instant::now() >= deadline {
                return Ok(None);
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }

    fn lock_posting(&self) -> std::sync::MutexGuard<'_, HashMap<String, usize>> {
        self.posting.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A post to `channel` is in flight: a click on it waits for the index.
    pub(super) fn begin_posting(&self, channel: &str) {
        *self.lock_posting().entry(channel.to_string()).or_insert(0) += 1;
    }

    /// The post [`App::begin_posting`] announced is indexed (or failed).
    pub(super) fn end_posting(&self, channel: &str) {
        let mut posting = self.lock_posting();
        if let Some(count) = posting.get_mut(channel) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                posting.remove(channel);
            }
        }
    }

    /// A user group's members, cached for five minutes.
    pub(super) async fn group_members(&self, group: &str) -> Result<HashSet<String>> {
        const TTL: std::time::Duration = std::time::Duration::from_secs(300);
        if let Some((at, m)) = self
            .groups
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(group)
        {
            if at.elapsed() < TTL {
                return Ok(m.clone());
            }
        }
        let users: HashSet<String> = self
            .api
            .usergroup_members(group)
            .await?
            .into_iter()
            .collect();
        self.groups
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(
                group.to_string(),
                (std::time::Instant::now(), users.clone()),
            );
        Ok(users)
    }

    /// The update slot of the tool-approval message `channel`/`ts`: its
    /// updates take turns on it, in the order the decisions were recorded.
    pub(super) fn update_slot(&self, channel: &str, ts: &str) -> UpdateSlot {
        let mut updates = self.updates.lock().unwrap_or_else(|p| p.into_inner());
        if updates.len() >= MAX_UPDATE_SLOTS {
            updates.clear();
        }
        Arc::clone(
            updates
                .entry((channel.to_string(), ts.to_string()))
                .or_default(),
        )
    }
}

/// How long after opening their tab a user's tab is kept up to date.
const FOLLOW_FOR: Duration = Duration::from_secs(24 * 3600);
/// At most this many tabs are kept up to date.
const MAX_VIEWERS: usize = 1000;

/// Who opened their home tab, and when (the tabs [`super::home`] keeps up
/// to date).
#[derive(Default)]
pub struct Viewers(Mutex<HashMap<String, Instant>>);

impl Viewers {
    pub(super) fn seen(&self, user: &str) {
        let mut m = self.0.lock().unwrap_or_else(|p| p.into_inner());
        m.retain(|_, at| at.elapsed() < FOLLOW_FOR);
        if m.len() >= MAX_VIEWERS && !m.contains_key(user) {
            // The longest unseen goes.
            if let Some(old) = m.iter().min_by_key(|(_, at)| **at).map(|(u, _)| u.clone()) {
                m.remove(&old);
            }
        }
        m.insert(user.to_string(), Instant::now());
    }
    pub(super) fn all(&self) -> Vec<String> {
        let m = self.0.lock().unwrap_or_else(|p| p.into_inner());
        m.iter()
            .filter(|(_, at)| at.elapsed() < FOLLOW_FOR)
            .map(|(u, _)| u.clone())
            .collect()
    }
}
