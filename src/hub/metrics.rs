//! The service's metrics (`GET /metrics`, Prometheus text format via
//! prometheus-client): one registry for every room and the API. Sessions
//! by status are counted from the store at scrape time; everything else is
//! counted as it happens.

use std::sync::{Arc, OnceLock};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::text::encode;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

type Labels = Vec<(String, String)>;

/// At most this many workflows get a label of their own on
/// `strands_decision_seconds`; the rest are `other`.
pub const WORKFLOWS: usize = 100;

pub struct Metrics {
    registry: Registry,
    /// Webhook deliveries, counted by the deliverer (when webhooks are on).
    webhooks: Arc<WebhookCounters>,
    webhooks_failed: Gauge,
    sessions: Family<Labels, Gauge>,
    gates_opened: Counter,
    gates_answered: Family<Labels, Counter>,
    click_ack: Histogram,
    /// Time to decision of people's answers, by door, workflow and rule.
    decided: Family<Labels, Histogram>,
    /// The workflows `decided` has a label for (at most [`WORKFLOWS`]; any
    /// more count as `other`, so the label set stays bounded).
    workflows: std::sync::Mutex<std::collections::BTreeSet<String>>,
    /// Open gates by how long they have waited, and those overdue, set at
    /// scrape time ([`crate::gate::ages`]).
    gates_open: Family<Labels, Gauge>,
    gates_overdue: Gauge,
    slack_calls: Family<Labels, Counter>,
    slack_errors: Family<Labels, Counter>,
    refused: Family<Labels, Counter>,
    slack_events: Family<Labels, Counter>,
    socket_connections: Counter,
    teams_activities: Family<Labels, Counter>,
    teams_refusals: Family<Labels, Counter>,
    /// Mail attempts by outcome (the e-mail room's sender).
    mail: Family<Labels, Counter>,
    mail_failed: Gauge,
    /// The queue room's connection and messages, shown only when it is
    /// configured.
    amqp: Arc<AmqpMetrics>,
    /// Syncs to stable storage the store made, read at scrape time.
    store_syncs: Arc<StoreSyncs>,
    /// Runs by `state` (`driving`, `queued`), set at scrape time.
    runs: Family<Labels, Gauge>,
    drive_slots: Gauge,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("strands");
        let sessions = Family::<Labels, Gauge>::default();
        let gates_opened = Counter::default();
        let gates_answered = Family::<Labels, Counter>::default();
        let click_ack = Histogram::new([
            0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 3.0,
        ]);
        let decided = Family::<Labels, Histogram>::new_with_constructor(|| {
            // 1 s … 1 week: a click, a coffee, a meeting, a day, a weekend.
            Histogram::new([
                1.0, 10.0, 60.0, 300.0, 900.0, 3600.0, 14400.0, 86400.0, 259200.0, 604800.0,
            ])
        });
        let gates_open = Family::<Labels, Gauge>::default();
        let gates_overdue = Gauge::default();
        let slack_calls = Family::<Labels, Counter>::default();
        let slack_errors = Family::<Labels, Counter>::default();
        let refused = Family::<Labels, Counter>::default();
        let slack_events = Family::<Labels, Counter>::default();
        let socket_connections = Counter::default();
        let teams_activities = Family::<Labels, Counter>::default();
        let teams_refusals = Family::<Labels, Counter>::default();
        let mail = Family::<Labels, Counter>::default();
        let mail_failed = Gauge::default();
        let amqp = Arc::new(AmqpMetrics::default());
        registry.register_collector(Box::new(Arc::clone(&amqp)));
        let runs = Family::<Labels, Gauge>::default();
        let drive_slots = Gauge::default();
        registry.register(
            "runs",
            "Running sessions by state: driving (this process drives them now), queued (waiting for a slot; on a shared store, those this process queued)",
            runs.clone(),
        );
        registry.register(
            "drive_slots",
            "How many runs this process drives at once (STRANDS_DRIVES)",
            drive_slots.clone(),
        );
        let webhooks = Arc::new(WebhookCounters::default());
        let webhooks_failed = Gauge::default();
        registry.register_collector(Box::new(Arc::clone(&webhooks)));
        let store_syncs = Arc::new(StoreSyncs::default());
        registry.register_collector(Box::new(Arc::clone(&store_syncs)));
        registry.register(
            "webhooks_failed",
            "Webhook deliveries given up on (`strands webhooks failed` lists them)",
            webhooks_failed.clone(),
        );
        registry.register(
            "sessions",
            "Sessions in the store by status",
            sessions.clone(),
        );
        registry.register(
            "gates_opened",
            "Approval messages posted for gates",
            gates_opened.clone(),
        );
        registry.register(
            "gates_answered",
            "Gate decisions recorded, by decision",
            gates_answered.clone(),
        );
        registry.register(
            "decision_seconds",
            "Time from a gate's request to a person's answer that decided it, by door, workflow and approval rule (what `strands report` computes from the audit, since this process started)",
            decided.clone(),
        );
        registry.register(
            "gates_open",
            "Open gates by how long they have waited (age: 1h, 1d, 1w, older), at scrape time",
            gates_open.clone(),
        );
        registry.register(
            "gates_overdue",
            "Open gates past their deadline or escalated, at scrape time",
            gates_overdue.clone(),
        );
        registry.register(
            "click_ack_seconds",
            "Time from receiving a Slack interaction to acknowledging it",
            click_ack.clone(),
        );
        registry.register(
            "slack_api_calls",
            "Slack Web API calls by method",
            slack_calls.clone(),
        );
        registry.register(
            "slack_api_errors",
            "Failed Slack Web API calls by method",
            slack_errors.clone(),
        );
        registry.register(
            "requests_refused",
            "Slack requests refused, by reason",
            refused.clone(),
        );
        registry.register(
            "slack_events",
            "Slack events carried out (a retried event counts once), by type",
            slack_events.clone(),
        );
        registry.register(
            "slack_socket_connections",
            "Slack Socket Mode connections opened (reconnections included)",
            socket_connections.clone(),
        );
        registry.register(
            "teams_activities",
            "Verified Teams activities, by type",
            teams_activities.clone(),
        );
        registry.register(
            "teams_refusals",
            "Teams activities refused, by reason",
            teams_refusals.clone(),
        );
        registry.register(
            "mail",
            "Mail attempts by outcome (sent, not_needed, retried, gave_up)",
            mail.clone(),
        );
        registry.register(
            "mail_failed",
            "Mails given up on (`strands notifications failed` lists them)",
            mail_failed.clone(),
        );
        Metrics {
            mail,
            mail_failed,
            amqp,
            registry,
            webhooks,
            webhooks_failed,
            sessions,
            gates_opened,
            gates_answered,
            decided,
            workflows: Default::default(),
            gates_open,
            gates_overdue,
            click_ack,
            slack_calls,
            slack_errors,
            refused,
            slack_events,
            socket_connections,
            teams_activities,
            teams_refusals,
            store_syncs,
            runs,
            drive_slots,
        }
    }

    /// The store's syncs so far (`None`: a store that does not count them).
    pub fn set_store_syncs(&self, n: Option<u64>) {
        if let Some(n) = n {
            self.store_syncs
                .0
                .store(n, std::sync::atomic::Ordering::Relaxed);
            self.store_syncs
                .1
                .store(true, std::sync::atomic::Ordering::Relaxed);
        }
    }

    pub fn gate_opened(&self) {
        self.gates_opened.inc();
    }
    pub fn gate_answered(&self, decision: &str) {
        self.gates_answered
            .get_or_create(&vec![("decision".into(), decision.into())])
            .inc();
    }
    /// A person's answer decided a gate of `workflow` after `waited_ms`,
    /// through `door`, under approval rule `rule` (1-based; `None`: the
    /// gate's one fixed list).
    pub fn decided(&self, door: &str, workflow: &str, rule: Option<usize>, waited_ms: u64) {
        let workflow = {
            let mut seen = self
                .workflows
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if seen.contains(workflow) || seen.len() < WORKFLOWS {
                seen.insert(workflow.to_string());
                workflow.to_string()
            } else {
                "other".to_string()
            }
        };
        let rule = rule.map_or_else(|| "none".to_string(), |n| n.to_string());
        self.decided
            .get_or_create(&vec![
                ("door".into(), door.into()),
                ("workflow".into(), workflow),
                ("rule".into(), rule),
            ])
            .observe(waited_ms as f64 / 1000.0);
    }

    /// The open gates' ages, as counted at scrape time.
    pub fn set_open_gates(&self, ages: &crate::gate::ages::Ages) {
        for b in &ages.buckets {
            self.gates_open
                .get_or_create(&vec![("age".into(), b.key.clone())])
                .set(b.count as i64);
        }
        self.gates_overdue.set(ages.overdue as i64);
    }
    pub fn click_acked(&self, seconds: f64) {
        self.click_ack.observe(seconds);
    }
    pub fn slack_call(&self, method: &str) {
        self.slack_calls
            .get_or_create(&vec![("method".into(), method.into())])
            .inc();
    }
    pub fn slack_error(&self, method: &str) {
        self.slack_errors
            .get_or_create(&vec![("method".into(), method.into())])
            .inc();
    }
    pub fn refused(&self, reason: &str) {
        self.refused
            .get_or_create(&vec![("reason".into(), reason.into())])
            .inc();
    }

    /// An Events API event carried out; `kind` is its type as Slack names it.
    pub fn slack_event(&self, kind: &str) {
        // Slack's event types are short snake_case words; anything else is
        // counted under one label rather than growing the family.
        let ok = kind.len() <= 64 && kind.bytes().all(|b| b.is_ascii_lowercase() || b == b'_');
        let kind = if ok { kind } else { "other" };
        self.slack_events
            .get_or_create(&vec![("type".into(), kind.into())])
            .inc();
    }
    /// A verified Teams activity; `kind` is its `type` (`message`,
    /// `invoke`, `conversationUpdate`, …).
    pub fn teams_activity(&self, kind: &str) {
        // Activity types are short camelCase words; anything else is
        // counted under one label rather than growing the family.
        let ok =
            !kind.is_empty() && kind.len() <= 64 && kind.bytes().all(|b| b.is_ascii_alphabetic());
        let kind = if ok { kind } else { "other" };
        self.teams_activities
            .get_or_create(&vec![("type".into(), kind.into())])
            .inc();
    }
    /// A refused Teams activity; `reason` is a fixed label.
    pub fn teams_refused(&self, reason: &str) {
        self.teams_refusals
            .get_or_create(&vec![("reason".into(), reason.into())])
            .inc();
    }
    pub fn socket_connected(&self) {
        self.socket_connections.inc();
    }

    /// Counts the deliveries of this deliverer's `stats`.
    pub fn watch_webhooks(&self, stats: Arc<crate::webhook::Stats>) {
        let _ = self.webhooks.0.set(stats);
    }

    /// A mail attempt came to `outcome`.
    pub fn mail(&self, outcome: &str) {
        self.mail
            .get_or_create(&vec![("outcome".into(), outcome.into())])
            .inc();
    }

    /// Whether the queue room is connected now (the room's metrics are
    /// shown from the first call on).
    pub fn set_amqp_connected(&self, up: bool) {
        self.amqp.connected.set(i64::from(up));
        self.amqp
            .on
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// A queue message came to `outcome`.
    pub fn amqp_message(&self, outcome: &str) {
        self.amqp
            .messages
            .get_or_create(&vec![("outcome".into(), outcome.into())])
            .inc();
    }

    /// The mails given up on now.
    pub fn set_mail_failed(&self, n: i64) {
        self.mail_failed.set(n);
    }

    /// The failed webhook deliveries now.
    pub fn set_webhooks_failed(&self, n: i64) {
        self.webhooks_failed.set(n);
    }

    /// The exposition text, with session counts taken now.
    /// The drives now: how many runs are `driving` and `queued`, of
    /// `slots`.
    pub fn set_drives(&self, driving: i64, queued: i64, slots: i64) {
        for (state, n) in [("driving", driving), ("queued", queued)] {
            self.runs
                .get_or_create(&vec![("state".into(), state.into())])
                .set(n);
        }
        self.drive_slots.set(slots);
    }

    pub fn render(&self, sessions_by_status: &[(&str, i64)]) -> String {
        for (status, n) in sessions_by_status {
            self.sessions
                .get_or_create(&vec![("status".into(), (*status).into())])
                .set(*n);
        }
        let mut out = String::new();
        if encode(&mut out, &self.registry).is_err() {
            out.clear();
        }
        out
    }
}

/// `strands_webhook_deliveries_total{outcome}` (HTTP webhooks, when
/// there are endpoints) and `strands_amqp_published_total{outcome}` (the
/// queue room's exchange, when it is on), read from the deliverer's
/// counters at scrape time.
#[derive(Debug, Default)]
struct WebhookCounters(OnceLock<Arc<crate::webhook::Stats>>);

impl Collector for WebhookCounters {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let Some(stats) = self.0.get() else {
            return Ok(());
        };
        let families = [
            (
                "webhook_deliveries",
                "HTTP webhook delivery attempts by outcome (delivered, retried, gave_up)",
                stats.counters(),
            ),
            (
                "amqp_published",
                "Events published to the queue room's exchange, attempts by outcome (published: confirmed by the broker, retried, gave_up)",
                stats.published(),
            ),
        ];
        for (name, help, counters) in families {
            let Some(counters) = counters else { continue };
            let mut family = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
            for (outcome, n) in counters {
                let labels = [("outcome", outcome)];
                ConstCounter::new(n).encode(family.encode_family(&labels)?)?;
            }
        }
        Ok(())
    }
}

/// `strands_amqp_connected` and `strands_amqp_messages_total{outcome}`:
/// absent until the queue room is opened (a service without a broker
/// has no connection to report as down).
#[derive(Debug, Default)]
struct AmqpMetrics {
    on: std::sync::atomic::AtomicBool,
    connected: Gauge,
    messages: Family<Labels, Counter>,
}

impl Collector for AmqpMetrics {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        if !self.on.load(std::sync::atomic::Ordering::Relaxed) {
            return Ok(());
        }
        self.connected.encode(encoder.encode_descriptor(
            "amqp_connected",
            "1 while the queue room is connected to the broker, 0 while it reconnects",
            None,
            MetricType::Gauge,
        )?)?;
        self.messages.encode(encoder.encode_descriptor(
            "amqp_messages",
            "Queue room messages by outcome (taken, refused: dead-lettered, retried: back to the queue, gave_up: dead-lettered after STRANDS_AMQP_MAX_DELIVERIES)",
            None,
            MetricType::Counter,
        )?)
    }
}

/// `strands_store_syncs_total`: flushes to stable storage the embedded
/// store made (each durable state change once), when it counts them.
#[derive(Debug, Default)]
struct StoreSyncs(std::sync::atomic::AtomicU64, std::sync::atomic::AtomicBool);

impl Collector for StoreSyncs {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        if !self.1.load(std::sync::atomic::Ordering::Relaxed) {
            return Ok(());
        }
        let n = self.0.load(std::sync::atomic::Ordering::Relaxed);
        let metric = encoder.encode_descriptor(
            "store_syncs",
            "Syncs of the session store to stable storage (one per durable state change)",
            None,
            MetricType::Counter,
        )?;
        ConstCounter::new(n).encode(metric)
    }
}

/// The label a decision is counted under.
pub fn decision_name(d: &crate::model::Decision) -> &'static str {
    use crate::model::Decision;
    match d {
        Decision::Approve => "approve",
        Decision::Reject { .. } => "reject",
        Decision::Modify { .. } => "modify",
        Decision::Defer => "defer",
        Decision::Respond { .. } => "respond",
        Decision::Edit { .. } => "edit",
        Decision::Trust { .. } => "trust",
        Decision::Fill { .. } => "fill",
        Decision::Skip => "skip",
        Decision::Abort { .. } => "abort",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text_has(m: &Metrics, line: &str) -> bool {
        m.render(&[]).contains(line)
    }

    #[test]
    fn workflow_labels_are_bounded() {
        let m = Metrics::new();
        for i in 0..WORKFLOWS + 5 {
            m.decided("api", &format!("w{i}"), None, 10);
        }
        m.decided("api", "w0", None, 10);
        let text = m.render(&[]);
        assert!(text_has(&m, "workflow=\"w0\",rule=\"none\"} 2"), "{text}");
        assert!(
            text.contains(
                "strands_decision_seconds_count{door=\"api\",workflow=\"other\",rule=\"none\"} 5"
            ),
            "{text}"
        );
    }

    #[test]
    fn open_gates_by_age_and_overdue() {
        let m = Metrics::new();
        let now = crate::clock::test_epoch();
        let ages = crate::gate::ages::ages(
            [
                crate::gate::ages::Waited {
                    opened_at: now - chrono::TimeDelta::minutes(5),
                    timeout_at: None,
                    reminded: false,
                    escalated: false,
                },
                crate::gate::ages::Waited {
                    opened_at: now - chrono::TimeDelta::days(8),
                    timeout_at: Some(now - chrono::TimeDelta::days(1)),
                    reminded: false,
                    escalated: false,
                },
            ],
            now,
        );
        m.set_open_gates(&ages);
        let text = m.render(&[]);
        assert!(text.contains("strands_gates_open{age=\"1h\"} 1"), "{text}");
        assert!(
            text.contains("strands_gates_open{age=\"older\"} 1"),
            "{text}"
        );
        assert!(text.contains("strands_gates_open{age=\"1d\"} 0"), "{text}");
        assert!(text.contains("strands_gates_overdue 1"), "{text}");
    }

    #[test]
    fn the_queue_room_is_absent_until_it_is_configured() {
        let m = Metrics::new();
        let text = m.render(&[]);
        assert!(!text.contains("strands_amqp"), "{text}");
        // The room opened (Link::new says it is not connected yet).
        m.set_amqp_connected(false);
        assert!(
            text_has(&m, "strands_amqp_connected 0"),
            "{}",
            m.render(&[])
        );
        m.set_amqp_connected(true);
        m.amqp_message("taken");
        let text = m.render(&[]);
        assert!(text.contains("strands_amqp_connected 1"), "{text}");
        assert!(
            text.contains("strands_amqp_messages_total{outcome=\"taken\"} 1"),
            "{text}"
        );
    }

    #[test]
    fn renders_prometheus_text() {
        let m = Metrics::new();
        m.slack_call("chat.postMessage");
        m.slack_error("chat.postMessage");
        m.click_acked(0.004);
        m.gate_answered("approve");
        m.decided("web", "payout", Some(1), 90_000);
        m.decided("web", "payout", Some(1), 2_000);
        m.decided("slack", "deploy", None, 1_000);
        let labels = "door=\"web\",workflow=\"payout\",rule=\"1\"";
        assert!(
            text_has(&m, &format!("strands_decision_seconds_count{{{labels}}} 2")),
            "{}",
            m.render(&[])
        );
        assert!(
            text_has(
                &m,
                &format!("strands_decision_seconds_bucket{{le=\"10.0\",{labels}}} 1")
            ) || text_has(
                &m,
                &format!("strands_decision_seconds_bucket{{{labels},le=\"10.0\"}} 1")
            ),
            "{}",
            m.render(&[])
        );
        assert!(text_has(
            &m,
            &format!("strands_decision_seconds_sum{{{labels}}} 92.0")
        ));
        assert!(text_has(
            &m,
            "strands_decision_seconds_count{door=\"slack\",workflow=\"deploy\",rule=\"none\"} 1"
        ));
        let text = m.render(&[("paused", 3)]);
        assert!(
            text.contains("strands_sessions{status=\"paused\"} 3"),
            "{text}"
        );
        assert!(
            text.contains("strands_slack_api_calls_total{method=\"chat.postMessage\"} 1"),
            "{text}"
        );
        assert!(text.contains("strands_click_ack_seconds_count 1"), "{text}");
        assert!(
            text.contains("strands_gates_answered_total{decision=\"approve\"} 1"),
            "{text}"
        );
    }
}
