//! The Slack room's state and its jobs besides HTTP: asking in Slack
//! (posting approval messages, the room's side of [`super::room::SlackRoom`]),
//! taking clicks through the service's intake ([`App::decide`]) and
//! keeping the messages in step with the store, so the HTTP handlers only
//! ever parse, authorize, record and hand off. Driving sessions, timers and
//! the store belong to the service ([`crate::hub::Hub`]).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use super::api::SlackApi;
use super::blocks::{self, ApprovalView, DecidedView, ProgressView, Templates, ToolApprovalView};
use super::config::Config;
use crate::audit::{AuditEvent, AuditKind};
use crate::channel::Progress;
use crate::engine::Accepted;
use crate::error::{Error, Result};
use crate::hub::metrics::Metrics;
use crate::hub::Hub;
use crate::model::Answer;
use crate::model::Refusal;
use crate::model::{Notification, Session, Status};
use crate::spec::GateKind;

/// A message's latest re-render: its lock orders `chat.update`s of one
/// message, and it holds the store revision last shown.
type UpdateSlot = Arc<tokio::sync::Mutex<u64>>;
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
    pub home: super::home::Viewers,
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
            Some(place) if !crate::hub::places::is_slack(&place) => named,
            origin => named
                .or(origin)
                .or_else(|| self.config.approval_channel.clone()),
        }
    }

    /// Takes `answer` for the gate the message `channel`/`ts` asks about,
    /// through the engine's intake (authorize → check → record exactly once
    /// or queue → audit a refusal), then hands the resume to the background
    /// and updates the message. `handle` is the gate handle the click
    /// claims (the button's value); it must be the one the message was
    /// posted for. `Ok(Err(why))`: refused, nothing changed, `why` is what
    /// the clicker is told.
    pub async fn decide(
        &self,
        channel: &str,
        ts: &str,
        handle: &str,
        answer: Answer,
    ) -> Result<std::result::Result<(), Refusal>> {
        let target = self.message_target(channel, ts).await?;
        let session = match &target {
            Some(t) if t.gate == handle => self.hub.store.load(&t.session).await?,
            _ => None,
        };
        self.decide_read(target, session, channel, ts, handle, answer)
            .await
    }

    /// [`App::decide`] with the message's target and its session already
    /// read (a click reads them once for everything it does).
    pub async fn decide_read(
        &self,
        target: Option<crate::store::MessageTarget>,
        session: Option<Session>,
        channel: &str,
        ts: &str,
        handle: &str,
        answer: Answer,
    ) -> Result<std::result::Result<(), Refusal>> {
        let why = match target {
            None => "this message is not an approval request I know".to_string(),
            Some(t) if t.gate != handle => format!(
                "this button belongs to an earlier request (gate {handle}); the message asks about {}",
                t.gate
            ),
            Some(_) => match session {
                Some(session) => return self.decide_on(&session, channel, ts, handle, answer).await,
                None => "that session no longer exists".to_string(),
            },
        };
        self.audit_refused_click(channel, ts, handle, &answer.by, answer.call.clone(), &why)
            .await;
        Ok(Err(Refusal::BadAnswer(why)))
    }

    /// [`App::decide`] once the message's session is known.
    async fn decide_on(
        &self,
        session: &Session,
        channel: &str,
        ts: &str,
        handle: &str,
        answer: Answer,
    ) -> Result<std::result::Result<(), Refusal>> {
        let tool_gate = session
            .open_gate(handle)
            .is_some_and(|g| g.kind == GateKind::ToolCall);
        // The service drives the run when the answer lets it go on.
        let accepted = match self.take(session, handle, &answer).await? {
            Ok(a) => a,
            Err(refusal) => return Ok(Err(refusal)),
        };
        let app = self.clone();
        let (channel, ts, handle) = (channel.to_string(), ts.to_string(), handle.to_string());
        match accepted {
            Accepted::Recorded(recorded) | Accepted::Counted(recorded) if tool_gate => {
                // One call decided: the run resumes only once no call waits.
                self.tasks().spawn(async move {
                    if let Err(e) = app.show_tool_calls(&recorded, &channel, &ts, &handle).await {
                        tracing::warn!(session = %recorded.id, "could not update the tool approval message: {e}");
                    }
                });
            }
            Accepted::Counted(recorded) => {
                // A quorum still gathering: show the progress, keep the buttons.
                self.tasks().spawn(async move {
                    if let Err(e) = app.show_progress(&recorded, &handle, &channel, &ts).await {
                        tracing::warn!(session = %recorded.id, "could not update the approval message: {e}");
                    }
                });
            }
            Accepted::Recorded(shown) | Accepted::Queued(shown) => {
                // Queued: another branch is running; the engine records it
                // as soon as the run stops moving. Recorded: shown as the
                // intake recorded it (a delegate's answer says for whom).
                let answer = shown
                    .pending
                    .as_ref()
                    .filter(|p| p.gate == handle)
                    .map(|p| p.answer.clone())
                    .unwrap_or(answer);
                self.tasks().spawn(async move {
                    if let Err(e) = app.show_decision(&shown, &handle, &channel, &ts, &answer).await {
                        tracing::warn!(session = %shown.id, "could not update the approval message: {e}");
                    }
                });
            }
        }
        Ok(Ok(()))
    }

    /// Hands `answer` for gate `handle` of `session` to the service's
    /// intake as a Slack user (groups resolved, the installation's admins
    /// and default approvers, self-approval off by default); the service
    /// drives the run when the answer lets it go on.
    #[allow(clippy::result_large_err)] // see `Session::accept`
    pub async fn take(
        &self,
        session: &Session,
        handle: &str,
        answer: &Answer,
    ) -> Result<std::result::Result<Accepted, crate::model::Refusal>> {
        let groups = self.groups_of(session, handle, &answer.by).await;
        let member_of = |g: &str| groups.contains(g);
        let asker = self.hub.asker(&answer.by, &member_of);
        self.hub
            .answer(&session.id, Some(handle), answer.clone(), &asker)
            .await
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

    /// The groups among `groups` that `user` belongs to (resolved like
    /// [`App::groups_of`], cached; an unresolvable group admits nobody).
    pub(crate) async fn member_groups(&self, groups: &[String], user: &str) -> Vec<String> {
        let mut out = Vec::new();
        let groups = groups.iter().map(|g| crate::model::Approver::parse(g));
        for group in groups.filter_map(|a| a.slack_group().map(str::to_string)) {
            match self.group_members(&group).await {
                Ok(m) if m.contains(user) => out.push(group.clone()),
                Ok(_) => {}
                Err(e) => tracing::warn!(group, "could not resolve a user group: {e}"),
            }
        }
        out
    }

    /// The user groups among gate `handle`'s approvers (or the bot's
    /// default approvers) that `user` belongs to, resolved through
    /// `usergroups.users.list` (cached). An unresolvable group admits
    /// nobody (fail closed).
    pub(crate) async fn groups_of(
        &self,
        session: &Session,
        handle: &str,
        user: &str,
    ) -> HashSet<String> {
        let Some(gate) = session.open_gate(handle) else {
            return HashSet::new();
        };
        let approvers = if gate.approvers.is_empty() {
            &self.hub.settings.default_approvers
        } else {
            &gate.approvers
        };
        let mut groups = HashSet::new();
        for group in approvers.iter().filter_map(|a| a.slack_group()) {
            match self.group_members(group).await {
                Ok(m) if m.contains(user) => {
                    groups.insert(group.to_string());
                }
                Ok(_) => {}
                Err(e) => tracing::warn!(group, "could not resolve a user group: {e}"),
            }
        }
        groups
    }

    /// Whether `user` may answer gate `handle` with a decision like
    /// `decision`: the intake's own rules, asked before a modal opens.
    pub(crate) async fn may_answer(
        &self,
        session: &Session,
        handle: &str,
        decision: crate::model::Decision,
        user: &str,
    ) -> std::result::Result<(), String> {
        let Some(gate) = session.open_gate(handle) else {
            return Err("that gate is no longer open".into());
        };
        let groups = self.groups_of(session, handle, user).await;
        let member_of = |g: &str| groups.contains(g);
        let asker = self.hub.asker(user, &member_of);
        // The directory as stored (the intake judges on the same); the
        // last one read when the store does not answer.
        let people = match self.hub.fresh_people().await {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!("could not read the people directory: {e}");
                self.hub.people()
            }
        };
        crate::engine::intake::authorize(gate, session, &decision, &asker, &people)
            .map(|_| ())
            .map_err(|r| super::names::refusal(&r))
    }

    /// A user group's members, cached for five minutes.
    async fn group_members(&self, group: &str) -> Result<HashSet<String>> {
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

    /// Every refused click (or refused modal) that the intake did not see
    /// is audited here; nothing else changed.
    pub async fn audit_refused_click(
        &self,
        channel: &str,
        ts: &str,
        handle: &str,
        who: &str,
        call: Option<String>,
        why: &str,
    ) {
        let (session, workflow) = match self.session_of(channel, ts).await {
            Some(s) => (s.id, s.workflow),
            None => (String::new(), String::new()),
        };
        let mut ev = AuditEvent::new(
            AuditKind::Refusal,
            &session,
            &workflow,
            self.hub.clock.now(),
        );
        ev.gate = Some(handle.to_string());
        ev.call = call;
        ev.who = Some(who.to_string());
        ev.via = Some(format!("slack {channel}"));
        ev.detail = Some(why.to_string());
        if let Err(e) = self.hub.store.append_audit(&[ev]).await {
            tracing::error!("could not audit a refused click: {e}");
        }
    }

    /// Re-renders the approval message with the quorum's progress.
    async fn show_progress(
        &self,
        session: &Session,
        handle: &str,
        channel: &str,
        ts: &str,
    ) -> Result<()> {
        let Some(gate) = session.open_gate(handle) else {
            return Ok(());
        };
        let view = ApprovalView::of(gate, session);
        let text = format!(
            "{} of {} approvals",
            gate.approvals.len(),
            gate.approvals_required
        );
        let blocks = self.templates.approval(&view)?;
        // Every copy (direct, escalated) shows the progress; the clicked one first.
        let mut result = Ok(());
        for (c, t) in self
            .asking_messages(&session.id, handle, Some((channel, ts)))
            .await
        {
            if let Err(e) = self.api.update(&c, &t, &text, blocks.clone()).await {
                tracing::warn!(session = %session.id, channel = %c, "could not update an approval message: {e}");
                result = Err(e);
            }
        }
        result
    }

    /// The session and gate a message asks about. A click can arrive before
    /// we learn the message's `ts`; while a post to that channel is in
    /// flight, wait for it (well inside Slack's 3 s) instead of refusing.
    pub async fn message_target(
        &self,
        channel: &str,
        ts: &str,
    ) -> Result<Option<crate::store::MessageTarget>> {
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

    /// Every message that asks for gate `handle` of session `id`, `first`
    /// first: the approval message, its direct copies to approvers
    /// (`notify: dm`) and its escalated copies, each once.
    pub(super) async fn asking_messages(
        &self,
        id: &str,
        handle: &str,
        first: Option<(&str, &str)>,
    ) -> Vec<(String, String)> {
        let mut all: Vec<(String, String)> = first
            .map(|(c, ts)| (c.to_string(), ts.to_string()))
            .into_iter()
            .collect();
        if let Some(n) = super::timers::note_for(self, id, handle).await {
            all.extend(n.ts.clone().map(|ts| (n.channel.clone(), ts)));
            all.extend(n.copies);
        }
        if let Ok(Some(esc)) = self.hub.store.escalation(id, handle).await {
            all.extend(esc.messages);
        }
        let mut seen = HashSet::new();
        // Another room's copies (Teams cards) are that room's to update.
        all.retain(|m| crate::hub::places::is_slack(&m.0) && seen.insert(m.clone()));
        all
    }

    /// Replaces the approval message's buttons with who decided what.
    async fn show_decision(
        &self,
        session: &Session,
        handle: &str,
        channel: &str,
        ts: &str,
        answer: &Answer,
    ) -> Result<()> {
        let gate = session
            .open_gate(handle)
            .ok_or_else(|| Error::Internal("answered session without its gate".into()))?;
        let view = ApprovalView::of(gate, session);
        let text = format!(
            "{} by {}{} at {}",
            capitalize(answer.decision.verb()),
            mention(&answer.by),
            answer.for_whom(),
            answer.at.format("%Y-%m-%d %H:%M UTC")
        );
        let blocks = self
            .templates
            .decided(&DecidedView::from_answer(view, answer))?;
        // Every copy (direct, escalated) shows the decision; the clicked one first.
        let mut result = Ok(());
        for (c, t) in self
            .asking_messages(&session.id, handle, Some((channel, ts)))
            .await
        {
            if let Err(e) = self.api.update(&c, &t, &text, blocks.clone()).await {
                tracing::warn!(session = %session.id, channel = %c, "could not update an approval message: {e}");
                result = Err(e);
            }
        }
        result
    }

    /// Re-renders the tool-approval message from `session` (the state a
    /// decision was recorded in): decided calls say who decided, waiting
    /// ones keep their buttons. Updates of one message go out in the order
    /// the decisions were recorded; an older state never replaces a newer.
    async fn show_tool_calls(
        &self,
        session: &Session,
        channel: &str,
        ts: &str,
        handle: &str,
    ) -> Result<()> {
        let view = ToolApprovalView::from_session(session, handle).ok_or_else(|| {
            Error::Internal("a tool-call decision on a session without tool calls".into())
        })?;
        let text = tool_text(&view);
        let blocks = self.templates.tool_approval(&view)?;
        let slot = {
            let mut updates = self.updates.lock().unwrap_or_else(|p| p.into_inner());
            if updates.len() >= MAX_UPDATE_SLOTS {
                updates.clear();
            }
            Arc::clone(
                updates
                    .entry((channel.to_string(), ts.to_string()))
                    .or_default(),
            )
        };
        let mut shown = slot.lock().await;
        if session.rev <= *shown {
            return Ok(());
        }
        self.api.update(channel, ts, &text, blocks).await?;
        *shown = session.rev;
        Ok(())
    }

    /// Posts (or re-posts) the approval message for the open gate of a
    /// paused session, and the messages of other open gates (parallel
    /// branches) that were never posted; records each, with its failure if
    /// posting failed.
    pub async fn notify(&self, session_id: &str) -> Result<()> {
        let session = self.hub.store.get(session_id).await?;
        let notes = self.hub.store.notifications(&session.id).await?;
        let others: Vec<String> = session
            .open_gates()
            .skip(1)
            .map(|g| g.handle())
            .filter(|h| !posted(&notes, h))
            .collect();
        let first = self.notify_gate(session_id, None).await;
        for h in others {
            self.notify_gate(session_id, Some(&h)).await?;
        }
        first
    }

    /// Posts the approval message of one open gate (`None`: the first one).
    pub async fn notify_gate(&self, session_id: &str, handle: Option<&str>) -> Result<()> {
        let session = self.hub.store.get(session_id).await?;
        let gate = match handle {
            Some(h) => session.open_gate(h).cloned(),
            None => session.first_gate().cloned(),
        };
        let Some(gate) = gate else {
            return Err(Error::Session(format!(
                "session {session_id} has no open gate{}",
                handle.map(|h| format!(" `{h}`")).unwrap_or_default()
            )));
        };
        if session.status != Status::Paused {
            return Err(Error::Session(format!(
                "session {session_id} is {}, not paused",
                session.status
            )));
        }
        let Some(channel) = self.channel_for(&session, Some(&gate)) else {
            let n = Notification {
                gate: gate.handle(),
                channel: String::new(),
                ts: None,
                thread_ts: None,
                at: self.hub.clock.now(),
                error: Some("no approval channel: set STRANDS_APPROVAL_CHANNEL".into()),
                copies: Vec::new(),
            };
            self.hub.store.record_notification(&session.id, &n).await?;
            return Err(Error::Usage(
                "no approval channel: set STRANDS_APPROVAL_CHANNEL".into(),
            ));
        };
        // A tool-call gate gets one message with a row of buttons per call.
        let rendered = if gate.kind == GateKind::ToolCall {
            match ToolApprovalView::from_session(&session, &gate.handle()) {
                Some(view) => self
                    .templates
                    .tool_approval(&view)
                    .map(|blocks| (tool_text(&view), blocks)),
                None => Err(Error::Internal(
                    "a tool-call gate without tool calls".into(),
                )),
            }
        } else {
            let view = ApprovalView::of(&gate, &session);
            self.templates.approval(&view).map(|blocks| {
                (
                    format!("Approval needed: {} / {}", session.workflow, gate.id),
                    blocks,
                )
            })
        };
        // Progress stays in the first message's thread while the channel does.
        let notes = self.hub.store.notifications(&session.id).await?;
        let thread_ts = notes
            .iter()
            .rev()
            .find(|n| n.channel == channel && n.thread_ts.is_some())
            .and_then(|n| n.thread_ts.clone());
        self.begin_posting(&channel);
        let posted = match rendered {
            Ok((text, blocks)) => self.api.post_message(&channel, &text, blocks, None).await,
            Err(e) => Err(e),
        };
        let (ts, error) = match posted {
            Ok(ts) => (Some(ts), None),
            Err(e) => (None, Some(e.to_string())),
        };
        let mut n = Notification {
            gate: gate.handle(),
            channel: channel.clone(),
            thread_ts: thread_ts.clone().or_else(|| ts.clone()),
            ts,
            at: self.hub.clock.now(),
            error: error.clone(),
            copies: Vec::new(),
        };
        let recorded = self.hub.store.record_notification(&session.id, &n).await;
        self.end_posting(&channel);
        recorded?;
        if error.is_none() && gate.notify_dm {
            // `notify: dm`: each approver named by user id gets a copy,
            // indexed like the message so a click on any copy decides.
            let (copies, places) = super::dms::post(self, &session, &gate, &channel).await;
            let recorded = if copies.is_empty() {
                Ok(())
            } else {
                n.copies = copies;
                self.hub.store.record_notification(&session.id, &n).await
            };
            for place in &places {
                self.end_posting(place);
            }
            recorded?;
        }
        match error {
            None => {
                self.metrics.gate_opened();
                if let (Some(thread), Some(ts)) = (&thread_ts, &n.ts) {
                    if thread != ts {
                        let note = format!(
                            "paused again at gate `{}`: a new approval message is in the channel",
                            gate.id
                        );
                        self.post_progress_line(&channel, thread, &session, "paused", note)
                            .await;
                    }
                }
                Ok(())
            }
            Some(e) => Err(Error::Runtime(format!(
                "the approval message was not posted: {e}"
            ))),
        }
    }

    /// A progress line in the run's thread (or, without one, in the approval
    /// channel for the events that end a run).
    async fn post_progress(&self, session: &Session, event: &Progress) -> Result<()> {
        let (name, text, output) = match event {
            Progress::StepDone {
                position,
                agent,
                tokens,
                millis,
            } => (
                "step_done",
                format!(
                    "{position} done: {agent} ({tokens} tokens, {:.1}s)",
                    *millis as f64 / 1000.0
                ),
                None,
            ),
            Progress::Resent { position } => (
                "resent",
                format!("{position}: model request re-sent after a crash"),
                None,
            ),
            Progress::Completed => (
                "completed",
                format!("`{}` completed", session.workflow),
                session.output.clone(),
            ),
            Progress::Failed { message } => (
                "failed",
                format!("`{}` failed: {message}", session.workflow),
                None,
            ),
            Progress::Rejected { reason } => (
                "rejected",
                format!(
                    "`{}` rejected{}",
                    session.workflow,
                    reason
                        .as_ref()
                        .map(|r| format!(": {r}"))
                        .unwrap_or_default()
                ),
                None,
            ),
            Progress::Cancelled { by, reason } => (
                "cancelled",
                format!(
                    "`{}` cancelled by {by}{}",
                    session.workflow,
                    reason
                        .as_ref()
                        .map(|r| format!(": {r}"))
                        .unwrap_or_default()
                ),
                None,
            ),
            Progress::GateSkipped { .. } | Progress::GateAnswered { .. } => return Ok(()),
        };
        let thread = self
            .hub
            .store
            .notifications(&session.id)
            .await?
            .last()
            .and_then(|n| n.thread_ts.clone().map(|t| (n.channel.clone(), t)));
        let (channel, thread_ts) = match thread {
            Some((c, t)) if !c.is_empty() => (c, Some(t)),
            _ if name == "step_done" || name == "resent" => return Ok(()),
            _ => match self.approval_channel(session) {
                Some(c) => (c, None),
                None => return Ok(()),
            },
        };
        let (output, cut) = match output {
            Some(o) => {
                let (text, cut) = blocks::cut_for_section(&o, blocks::CODE_BLOCK_MAX);
                (Some(text), cut)
            }
            None => (None, 0),
        };
        let text = if cut > 0 {
            format!(
                "{text} (output cut by {cut} characters; `strands sessions show {}` shows all)",
                session.id
            )
        } else {
            text
        };
        let view = ProgressView {
            event: name.into(),
            workflow: session.workflow.clone(),
            session_id: session.id.clone(),
            text: text.clone(),
            output,
        };
        let blocks = self.templates.progress(&view)?;
        self.api
            .post_message(&channel, &text, blocks, thread_ts.as_deref())
            .await
            .map(|_| ())
    }
}

impl App {
    /// One progress line in a thread; failures are logged, not fatal.
    async fn post_progress_line(
        &self,
        channel: &str,
        thread: &str,
        session: &Session,
        event: &str,
        text: String,
    ) {
        let view = ProgressView {
            event: event.into(),
            workflow: session.workflow.clone(),
            session_id: session.id.clone(),
            text: text.clone(),
            output: None,
        };
        let posted = match self.templates.progress(&view) {
            Ok(blocks) => self
                .api
                .post_message(channel, &text, blocks, Some(thread))
                .await
                .map(|_| ()),
            Err(e) => Err(e),
        };
        if let Err(e) = posted {
            tracing::warn!(session = %session.id, "progress not posted: {e}");
        }
    }
}

impl App {
    /// Asks for every open gate of `session` not asked here yet: one
    /// message each (several when parallel branches wait at once).
    pub async fn ask(&self, session: &Session) {
        let notes = match self.hub.store.notifications(&session.id).await {
            Ok(n) => n,
            Err(e) => {
                tracing::error!(session = %session.id, "cannot read the approval messages: {e}");
                return;
            }
        };
        let unposted: Vec<String> = session
            .open_gates()
            .map(|g| g.handle())
            .filter(|h| !posted(&notes, h))
            .collect();
        for handle in unposted {
            if let Err(e) = self.notify_gate(&session.id, Some(&handle)).await {
                // Recorded on the session; `strands sessions notify ID` retries.
                tracing::error!(session = %session.id, gate = %handle, "approval message not posted: {e}");
            }
        }
    }

    /// Shows the run's progress in its thread.
    pub async fn on_progress(&self, session: &Session, event: &Progress) {
        if let Err(e) = self.post_progress(session, event).await {
            tracing::warn!(session = %session.id, "progress not posted: {e}");
        }
        if let Progress::GateAnswered { gate, answer } = event {
            // An escalated gate was asked in several messages: all show it.
            super::timers::after_answer(self, session, gate, answer).await;
        }
    }
}

/// Whether the Slack message asking for gate `handle` was posted (a card
/// another room posted does not count).
pub fn posted(notes: &[Notification], handle: &str) -> bool {
    notes
        .iter()
        .any(|n| n.gate == handle && n.ts.is_some() && crate::hub::places::is_slack(&n.channel))
}

/// The notification text of a tool-approval message.
fn tool_text(view: &ToolApprovalView) -> String {
    let status = if view.waiting > 0 {
        format!("{} of {} calls waiting", view.waiting, view.total)
    } else {
        "every call decided".to_string()
    };
    format!(
        "Tool approval: {} / {}: {status}",
        view.workflow, view.agent
    )
}

/// `<@U123>` for Slack user ids, the name otherwise.
pub fn mention(who: &str) -> String {
    super::names::who(who)
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}

/// What a refused click is told ([`super::names::refusal`]).
pub fn refusal_text(r: &Refusal) -> String {
    super::names::refusal(r)
}

#[cfg(test)]
mod place_tests {
    use super::posted;
    use crate::model::Notification;

    fn note(channel: &str, ts: Option<&str>) -> Notification {
        Notification {
            gate: "review#1".into(),
            channel: channel.into(),
            ts: ts.map(str::to_string),
            thread_ts: None,
            at: crate::clock::test_epoch(),
            error: None,
            copies: Vec::new(),
        }
    }

    #[test]
    fn a_card_another_room_posted_is_not_slacks_message() {
        assert!(!posted(
            &[note("teams:19:a@thread.tacv2", Some("1:card"))],
            "review#1"
        ));
        assert!(posted(&[note("C0123456789", Some("1700.1"))], "review#1"));
        assert!(!posted(&[note("C0123456789", None)], "review#1"));
    }
}
