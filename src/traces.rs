//! Traces: where the time of a run went, as OpenTelemetry spans exported
//! over OTLP/HTTP (protobuf) to whatever collector
//! `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`)
//! names. Unset, nothing is installed and a span costs what a disabled
//! `tracing` span costs.
//!
//! The spans are ordinary `tracing` spans made by the code that does the
//! work (this module only names them): `run` (one process driving a run),
//! `step`, `model.call`, `tool.call`, `gate` (a gate opening), `answer`
//! (with the channel it came through) and `store.<write>` (a write through
//! the store's seam, inside one of the others). [`layer`] turns them into
//! OpenTelemetry spans with `tracing-opentelemetry`; the SDK reads the
//! standard `OTEL_*` variables itself (`OTEL_SERVICE_NAME`,
//! `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_EXPORTER_OTLP_HEADERS`,
//! `OTEL_TRACES_SAMPLER`, `OTEL_BSP_*`, …).
//!
//! A run outlives processes: it pauses in one and is answered and resumed
//! in another. Its first `run` span's ids are kept on the session
//! ([`TraceRef`]), and every later `run` or `answer` span of that session
//! is made its child, so one run is one trace however many processes
//! drove it. The trace id also goes into the run's audit entries and
//! events (hence webhook payloads), so a trail entry leads to its trace.
//!
//! Not here: metrics (Prometheus, `hub::metrics`), logs over OTLP, and
//! propagating the trace into outgoing HTTP requests.

use opentelemetry::trace::{
    SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState, TracerProvider as _,
};
use opentelemetry_sdk::trace::SdkTracerProvider;
use opentelemetry_sdk::Resource;
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt;

use crate::model::{Answer, Session, TraceRef};

/// The service name when neither `OTEL_SERVICE_NAME` nor
/// `OTEL_RESOURCE_ATTRIBUTES` gives one.
const SERVICE: &str = "strands";

/// How long exiting waits for the last spans to reach the collector.
const FLUSH: std::time::Duration = std::time::Duration::from_secs(5);

/// Whether the environment asks for traces: an OTLP endpoint is set, and
/// neither `OTEL_SDK_DISABLED=true` nor `OTEL_TRACES_EXPORTER=none`.
pub fn wanted(env: impl Fn(&str) -> Option<String>) -> bool {
    let set = |k: &str| env(k).is_some_and(|v| !v.trim().is_empty());
    let endpoint = set("OTEL_EXPORTER_OTLP_ENDPOINT") || set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
    let disabled = env("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
        || env("OTEL_TRACES_EXPORTER").is_some_and(|v| v.trim().eq_ignore_ascii_case("none"));
    endpoint && !disabled
}

/// The exporter of this process; dropping it sends what is left.
#[derive(Default)]
pub struct Exporter {
    provider: Option<SdkTracerProvider>,
}

impl Exporter {
    /// Sends the spans still queued and stops the exporter (at most
    /// [`FLUSH`]: a collector that does not answer does not hold the exit).
    pub fn shutdown(&mut self) {
        if let Some(p) = self.provider.take() {
            if let Err(e) = p.shutdown_with_timeout(FLUSH) {
                eprintln!("warning: traces: the last spans may be lost ({e})");
            }
        }
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// The OpenTelemetry layer (strands' own spans at info and above, no
/// events), and the exporter to shut down at exit; `None` when `wanted`
/// is false. Building the exporter fails only on a malformed endpoint,
/// which is then reported on stderr and traces stay off.
pub fn layer<S>(
    wanted: bool,
) -> (
    Option<impl tracing_subscriber::Layer<S> + 'static>,
    Exporter,
)
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    use tracing_subscriber::Layer as _;
    if !wanted {
        return (None, Exporter::default());
    }
    let exporter = match opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .build()
    {
        Ok(e) => e,
        Err(e) => {
            eprintln!("warning: traces are off: cannot set up the OTLP exporter ({e})");
            return (None, Exporter::default());
        }
    };
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource())
        .build();
    let tracer = provider.tracer(SERVICE);
    let only_spans = tracing_subscriber::filter::filter_fn(|meta| {
        meta.is_span()
            && meta.target().starts_with("strands")
            && *meta.level() <= tracing::Level::INFO
    });
    let layer = tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_filter(only_spans);
    (
        Some(layer),
        Exporter {
            provider: Some(provider),
        },
    )
}

/// The resource the SDK detects from the environment, named `strands`
/// unless the environment names it.
fn resource() -> Resource {
    let detected = Resource::builder().build();
    let named = detected
        .get(&opentelemetry::Key::from_static_str("service.name"))
        .is_some_and(|v| !v.as_str().starts_with("unknown_service"));
    if named {
        detected
    } else {
        Resource::builder().with_service_name(SERVICE).build()
    }
}

/// The trace of the current span, when traces are on and it has one.
pub fn current() -> Option<TraceRef> {
    let cx = Span::current().context();
    let span = cx.span();
    let sc = span.span_context();
    sc.is_valid().then(|| TraceRef {
        trace_id: sc.trace_id().to_string(),
        span_id: sc.span_id().to_string(),
        sampled: sc.is_sampled(),
    })
}

/// Makes `span` (not yet entered) part of the run traced as `trace`: a
/// child of its first `run` span, unless the current span is in that
/// trace already (then it stays the current span's child).
pub fn join(span: &Span, trace: Option<&TraceRef>) {
    let Some(t) = trace else {
        return;
    };
    if current().is_some_and(|c| c.trace_id == t.trace_id) {
        return;
    }
    let (Ok(trace_id), Ok(span_id)) =
        (TraceId::from_hex(&t.trace_id), SpanId::from_hex(&t.span_id))
    else {
        return;
    };
    let flags = if t.sampled {
        TraceFlags::SAMPLED
    } else {
        TraceFlags::default()
    };
    let parent = SpanContext::new(trace_id, span_id, flags, true, TraceState::default());
    let _ = span.set_parent(opentelemetry::Context::new().with_remote_span_context(parent));
}

/// The span of one process driving a run (the spec's name and pattern;
/// `session.id` recorded once the session exists).
pub fn run_span(workflow: &str, pattern: &str, session: Option<&Session>) -> Span {
    let span = tracing::info_span!(
        "run",
        session.id = tracing::field::Empty,
        workflow = %workflow,
        pattern = %pattern,
    );
    if let Some(s) = session {
        span.record("session.id", s.id.as_str());
        join(&span, s.trace.as_ref());
    }
    span
}

/// The span of an answer reaching a session: the channel it came through
/// (`terminal`, `cli`, `slack`, `teams`, `web`, `api`, `email`, `timeout`,
/// …) and the decision, never its free text.
pub fn answer_span(session: &Session, gate: Option<&str>, answer: &Answer) -> Span {
    let span = tracing::info_span!(
        "answer",
        session.id = %session.id,
        gate = gate.unwrap_or(""),
        channel = %answer.via,
        decision = answer.decision.verb(),
    );
    join(&span, session.trace.as_ref());
    span
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn traces_are_off_unless_an_endpoint_is_set() {
        assert!(!wanted(env(&[])));
        assert!(!wanted(env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", " ")])));
        assert!(wanted(env(&[(
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "http://127.0.0.1:4318"
        )])));
        assert!(wanted(env(&[(
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            "http://127.0.0.1:4318/v1/traces"
        )])));
        assert!(!wanted(env(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"),
            ("OTEL_SDK_DISABLED", "TRUE"),
        ])));
        assert!(!wanted(env(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"),
            ("OTEL_TRACES_EXPORTER", "none"),
        ])));
    }

    /// What a later process does with a stored trace, with an SDK that
    /// exports nowhere.
    #[test]
    fn a_span_joined_to_a_stored_trace_continues_it() {
        use tracing_subscriber::layer::SubscriberExt as _;
        let provider = SdkTracerProvider::builder().build();
        let subscriber = tracing_subscriber::registry()
            .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("test")));
        tracing::subscriber::with_default(subscriber, || {
            let stored = TraceRef {
                trace_id: "4bf92f3577b34da6a3ce929d0e0e4736".into(),
                span_id: "00f067aa0ba902b7".into(),
                sampled: true,
            };
            let span = tracing::info_span!("run");
            join(&span, Some(&stored));
            let here = span.in_scope(current).expect("a trace");
            assert_eq!(here.trace_id, stored.trace_id);
            assert_ne!(here.span_id, stored.span_id);
            assert!(here.sampled);

            // Inside that trace already: stays the current span's child.
            let inner = span.in_scope(|| {
                let answer = tracing::info_span!("answer");
                join(&answer, Some(&stored));
                answer.context().span().span_context().clone()
            });
            assert_eq!(inner.trace_id().to_string(), stored.trace_id);

            // A trace its first process did not sample stays unsampled.
            let unsampled = TraceRef {
                sampled: false,
                ..stored.clone()
            };
            let span = tracing::info_span!("run");
            join(&span, Some(&unsampled));
            let here = span.in_scope(current).expect("a trace");
            assert_eq!(here.trace_id, stored.trace_id);
            assert!(!here.sampled);

            // No stored trace: a new one.
            let root = tracing::info_span!("run");
            join(&root, None);
            let fresh = root.in_scope(current).expect("a trace");
            assert_ne!(fresh.trace_id, stored.trace_id);
        });
    }

    #[test]
    fn without_the_layer_there_is_no_trace() {
        let span = tracing::info_span!("run");
        let _in = span.enter();
        assert_eq!(current(), None);
    }
}
