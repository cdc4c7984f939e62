//! A local OpenTelemetry collector for the trace tests: an OTLP/HTTP
//! receiver on 127.0.0.1 (`POST /v1/traces`, protobuf, what `strands`
//! exports) that keeps every span it is sent, flattened to what a test
//! asserts on: ids, parent, name, attributes and the service that sent it.
//!
//! Point a `strands` at it with `OTEL_EXPORTER_OTLP_ENDPOINT` set to
//! [`Collector::endpoint`].

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::post;
use axum::Router;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::common::v1::KeyValue;
use prost::Message as _;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One span as received.
#[derive(Debug, Clone)]
pub struct Span {
    /// 32 hex digits.
    pub trace_id: String,
    /// 16 hex digits.
    pub span_id: String,
    /// Empty for a root span.
    pub parent: String,
    pub name: String,
    /// Every attribute, its value as text.
    pub attrs: BTreeMap<String, String>,
    /// The resource's `service.name`.
    pub service: String,
}

impl Span {
    /// The attribute `key`, or "" when absent.
    pub fn attr(&self, key: &str) -> &str {
        self.attrs.get(key).map(String::as_str).unwrap_or("")
    }
}

/// A running receiver; it lives until the test process exits.
pub struct Collector {
    /// `http://127.0.0.1:PORT`, for `OTEL_EXPORTER_OTLP_ENDPOINT`.
    pub endpoint: String,
    spans: Arc<Mutex<Vec<Span>>>,
}

impl Collector {
    pub fn start() -> Collector {
        let spans = Arc::new(Mutex::new(Vec::new()));
        let app = Router::new()
            .route("/v1/traces", post(receive))
            .with_state(Arc::clone(&spans));
        let port = super::serve_in_background(app);
        Collector {
            endpoint: format!("http://127.0.0.1:{port}"),
            spans,
        }
    }

    /// Every span received so far.
    pub fn spans(&self) -> Vec<Span> {
        self.spans.lock().expect("the spans").clone()
    }

    /// The spans once `done` holds for them, or a panic after `within`
    /// listing what arrived (the exporter sends before its process exits,
    /// so this rarely waits).
    #[track_caller]
    pub fn wait_until(&self, within: Duration, done: impl Fn(&[Span]) -> bool) -> Vec<Span> {
        let deadline = Instant::now() + within;
        loop {
            let spans = self.spans();
            if done(&spans) {
                return spans;
            }
            if Instant::now() > deadline {
                panic!("the collector never got what was expected; it has:\n{spans:#?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

async fn receive(State(spans): State<Arc<Mutex<Vec<Span>>>>, body: Bytes) -> impl IntoResponse {
    let Ok(req) = ExportTraceServiceRequest::decode(body) else {
        return (StatusCode::BAD_REQUEST, "not an OTLP trace export").into_response();
    };
    let mut got = Vec::new();
    for rs in req.resource_spans {
        let service = rs
            .resource
            .as_ref()
            .map(|r| attrs(&r.attributes))
            .and_then(|a| a.get("service.name").cloned())
            .unwrap_or_default();
        for ss in rs.scope_spans {
            for s in ss.spans {
                got.push(Span {
                    trace_id: hex(&s.trace_id),
                    span_id: hex(&s.span_id),
                    parent: hex(&s.parent_span_id),
                    name: s.name,
                    attrs: attrs(&s.attributes),
                    service: service.clone(),
                });
            }
        }
    }
    spans.lock().expect("the spans").extend(got);
    // An empty ExportTraceServiceResponse: everything accepted.
    (
        [(header::CONTENT_TYPE, "application/x-protobuf")],
        Vec::<u8>::new(),
    )
        .into_response()
}

fn attrs(kvs: &[KeyValue]) -> BTreeMap<String, String> {
    kvs.iter()
        .map(|kv| {
            let v = match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
                Some(Any::StringValue(s)) => s.clone(),
                Some(Any::BoolValue(b)) => b.to_string(),
                Some(Any::IntValue(i)) => i.to_string(),
                Some(Any::DoubleValue(d)) => d.to_string(),
                Some(other) => format!("{other:?}"),
                None => String::new(),
            };
            (kv.key.clone(), v)
        })
        .collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
