//! The `gemini`, `azure_openai` and `bedrock` providers, end to end: the
//! real `strands` binary runs a strands-cli style spec against a local fake
//! of each wire format (`tests/common/wire_fakes.rs`), through a rate limit
//! or an outage, a tool call and its result, to the final answer. The fakes
//! show what went over the wire: the key in the right header, the model or
//! deployment in the path, Bedrock's SigV4 signature. Missing settings are
//! refused naming the variable to set.

use crate::common::wire_fakes::{Wire, WireFake};
use crate::common::{session_id, Outcome, Sandbox};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// One agent that reads a note with `file_read` (allowed: no gate), as
/// strands-cli's single-agent chain examples are written; `$RUNTIME` is
/// the runtime section's provider settings, `$WS` the workspace.
const NOTE_CHAIN: &str = r#"
version: 0
name: provider-chain
runtime:
$RUNTIME
  budgets:
    max_tokens: 4000
  failure_policy:
    retries: 3
    backoff: exponential
inputs:
  values:
    topic: fruit
tools:
  workspace: $WS
agents:
  analyst:
    prompt: You are the ANALYST of {{ topic }}.
    tools: [file_read]
    allowed_tools: [file_read]
pattern:
  type: chain
  config:
    steps:
      - agent: analyst
        input: "Read note.txt about {{ topic }}"
outputs:
  artifacts:
    - path: ./analysis.md
      from: "{{ last_response }}"
"#;

/// A sandbox with `note.txt` in its workspace and the spec written.
fn setup(runtime: &str) -> (Sandbox, PathBuf) {
    let sandbox = Sandbox::new();
    let ws = sandbox.path().join("ws");
    std::fs::create_dir_all(&ws).expect("the workspace");
    std::fs::write(ws.join("note.txt"), "the secret fruit is PAPAYA").expect("note.txt");
    let yaml = NOTE_CHAIN
        .replace("$RUNTIME", runtime)
        .replace("$WS", &ws.display().to_string());
    let spec = sandbox.path().join("spec.yaml");
    std::fs::write(&spec, yaml).expect("the spec");
    (sandbox, spec)
}

/// `strands run SPEC --json --out OUT` with `env`.
fn run(sandbox: &Sandbox, spec: &Path, env: &[(&str, &str)]) -> Outcome {
    let out = sandbox.path().join("out").display().to_string();
    sandbox.strands_as(
        "tester",
        env,
        &[
            "run",
            spec.to_str().expect("utf-8"),
            "--json",
            "--out",
            &out,
        ],
    )
}

/// The three model calls of a tool round trip after one refused attempt:
/// the refused one, the call to `file_read`, the final answer that quotes
/// the tool's result; and the run's output.
fn assert_round_trip(fake: &WireFake, v: &Value, refused: u16) {
    let seen = fake.requests();
    let statuses: Vec<u16> = seen.iter().map(|r| r.status).collect();
    assert_eq!(statuses, [refused, 200, 200], "{seen:#?}");
    assert_eq!(v["status"], "completed", "{v:#}");
    let output = v["output"].as_str().expect("output");
    assert_eq!(output, "ANSWER 3: the secret fruit is PAPAYA", "{v:#}");
    assert_eq!(v["usage"]["total"]["calls"], 2, "{v:#}");
    assert_eq!(v["usage"]["total"]["input_tokens"], 22, "{v:#}");
    assert_eq!(v["usage"]["total"]["output_tokens"], 10, "{v:#}");
}

#[test]
fn gemini_runs_a_strands_cli_spec_through_a_429_and_a_tool_call() {
    let fake = WireFake::start(
        Wire::Gemini,
        &[429],
        Some(("file_read", json!({"path": "note.txt"}))),
    );
    // As strands-cli's Gemini example: no host; the base URL from the environment.
    let (sandbox, spec) = setup(
        "  provider: gemini\n  model_id: gemini-2.5-flash\n  temperature: 0.7\n  max_tokens: 2048\n  top_p: 0.9",
    );
    let out = run(
        &sandbox,
        &spec,
        &[
            ("GEMINI_BASE_URL", &fake.url),
            ("GOOGLE_API_KEY", "g-test-key"),
        ],
    );
    out.expect_code(0);
    let v = out.json();
    assert_round_trip(&fake, &v, 429);
    for r in fake.requests() {
        assert_eq!(r.method, "POST");
        assert_eq!(r.path, "/v1beta/models/gemini-2.5-flash:generateContent");
        assert_eq!(r.header("x-goog-api-key"), Some("g-test-key"));
        assert!(!r.path.contains("key="), "the key never goes in the URL");
    }
    let first = &fake.requests()[1].body;
    assert_eq!(
        first["systemInstruction"]["parts"][0]["text"],
        "You are the ANALYST of fruit."
    );
    assert_eq!(
        first["contents"][0]["parts"][0]["text"],
        "Read note.txt about fruit"
    );
    assert_eq!(
        first["generationConfig"],
        json!({"temperature": 0.7, "topP": 0.9, "maxOutputTokens": 2048})
    );
    assert_eq!(
        first["tools"][0]["functionDeclarations"][0]["name"],
        "file_read"
    );
    // The call came without an id: ours travels back with the result.
    let last = &fake.requests()[2].body;
    let call = &last["contents"][1]["parts"][0];
    assert_eq!(call["functionCall"]["name"], "file_read");
    let id = call["functionCall"]["id"].as_str().expect("an id");
    let response = &last["contents"][2]["parts"][0]["functionResponse"];
    assert_eq!(response["id"], id);
    assert_eq!(response["name"], "file_read");
    assert_eq!(response["response"]["output"], "the secret fruit is PAPAYA");
    let artifact =
        std::fs::read_to_string(sandbox.path().join("out/analysis.md")).expect("the artifact");
    assert!(artifact.contains("PAPAYA"), "{artifact}");
}

#[test]
fn azure_openai_calls_the_deployment_through_a_503_and_a_tool_call() {
    let fake = WireFake::start(
        Wire::Azure,
        &[503],
        Some(("file_read", json!({"path": "note.txt"}))),
    );
    let (sandbox, spec) =
        setup("  provider: azure_openai\n  model_id: prod-gpt4o\n  max_tokens: 500");
    let out = run(
        &sandbox,
        &spec,
        &[
            ("AZURE_OPENAI_ENDPOINT", &fake.url),
            ("AZURE_OPENAI_API_KEY", "az-test-key"),
        ],
    );
    out.expect_code(0);
    let v = out.json();
    assert_round_trip(&fake, &v, 503);
    for r in fake.requests() {
        assert_eq!(
            r.path,
            "/openai/deployments/prod-gpt4o/chat/completions?api-version=2024-10-21"
        );
        assert_eq!(r.header("api-key"), Some("az-test-key"));
        assert_eq!(r.header("authorization"), None);
    }
    let last = &fake.requests()[2].body;
    assert_eq!(
        last["messages"][0]["content"],
        "You are the ANALYST of fruit."
    );
    assert_eq!(last["max_tokens"], 500);
    assert_eq!(last["messages"][2]["tool_calls"][0]["id"], "call-2");
    assert_eq!(last["messages"][3]["tool_call_id"], "call-2");
}

#[test]
fn bedrock_signs_with_sigv4_through_a_throttle_and_a_tool_call() {
    let fake = WireFake::start(
        Wire::Bedrock,
        &[429],
        Some(("file_read", json!({"path": "note.txt"}))),
    );
    // As strands-cli's Bedrock example: region and model in the spec; the
    // endpoint from the variable the AWS SDKs read.
    let (sandbox, spec) = setup(
        "  provider: bedrock\n  model_id: us.anthropic.claude-3-sonnet-20240229-v1:0\n  region: us-east-1",
    );
    let out = run(
        &sandbox,
        &spec,
        &[
            ("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", &fake.url),
            ("AWS_ACCESS_KEY_ID", "AKIDSTRANDSTEST"),
            ("AWS_SECRET_ACCESS_KEY", "strands-test-secret"),
        ],
    );
    out.expect_code(0);
    let v = out.json();
    assert_round_trip(&fake, &v, 429);
    for r in fake.requests() {
        assert_eq!(
            r.path,
            "/model/us.anthropic.claude-3-sonnet-20240229-v1%3A0/converse"
        );
        let auth = r.header("authorization").expect("a signed request");
        assert!(
            auth.starts_with("AWS4-HMAC-SHA256 Credential=AKIDSTRANDSTEST/"),
            "{auth}"
        );
        assert!(auth.contains("/us-east-1/bedrock/aws4_request"), "{auth}");
        assert!(auth.contains("Signature="), "{auth}");
        assert!(r.header("x-amz-date").is_some());
    }
    let last = &fake.requests()[2].body;
    assert_eq!(
        last["system"],
        json!([{"text": "You are the ANALYST of fruit."}])
    );
    assert_eq!(
        last["messages"][1]["content"][0]["toolUse"],
        json!({"toolUseId": "call-2", "name": "file_read", "input": {"path": "note.txt"}})
    );
    assert_eq!(
        last["messages"][2]["content"][0]["toolResult"],
        json!({"toolUseId": "call-2", "content": [{"text": "the secret fruit is PAPAYA"}], "status": "success"})
    );
    assert_eq!(
        last["toolConfig"]["tools"][0]["toolSpec"]["name"],
        "file_read"
    );
    assert!(
        !out.stderr.contains("strands-test-secret"),
        "{}",
        out.stderr
    );
}

/// Three agents, three providers: the runtime's (gemini, with
/// `runtime.host`), and two agents that name their own.
const MIXED: &str = r#"
version: 0
name: mixed-providers
runtime:
  provider: gemini
  model_id: gemini-2.5-pro
  host: $GEMINI
  region: eu-central-1
agents:
  writer:
    prompt: You are the WRITER.
  critic:
    prompt: You are the CRITIC.
    provider: azure_openai
    model_id: critic-deployment
  judge:
    prompt: You are the JUDGE.
    provider: bedrock
    model_id: amazon.nova-pro-v1:0
pattern:
  type: chain
  config:
    steps:
      - agent: writer
        input: Write a haiku.
      - agent: critic
        input: "Critique: {{ last_response }}"
      - agent: judge
        input: "Judge: {{ last_response }}"
"#;

#[test]
fn agents_override_the_runtime_provider() {
    let gemini = WireFake::start(Wire::Gemini, &[], None);
    let azure = WireFake::start(Wire::Azure, &[], None);
    let bedrock = WireFake::start(Wire::Bedrock, &[], None);
    let sandbox = Sandbox::new();
    let spec = sandbox.path().join("mixed.yaml");
    std::fs::write(&spec, MIXED.replace("$GEMINI", &gemini.url)).expect("spec");
    let out = run(
        &sandbox,
        &spec,
        &[
            ("GEMINI_API_KEY", "g-key"),
            ("AZURE_OPENAI_ENDPOINT", &azure.url),
            ("AZURE_OPENAI_API_KEY", "az-key"),
            ("AZURE_OPENAI_API_VERSION", "2025-01-01-preview"),
            ("AWS_ENDPOINT_URL", &bedrock.url),
            ("AWS_ACCESS_KEY_ID", "AKIDMIXED"),
            ("AWS_SECRET_ACCESS_KEY", "mixed-secret"),
        ],
    );
    out.expect_code(0);
    let v = out.json();
    let (g, a, b) = (gemini.answered(), azure.answered(), bedrock.answered());
    assert_eq!((g.len(), a.len(), b.len()), (1, 1, 1), "{v:#}");
    assert_eq!(g[0].path, "/v1beta/models/gemini-2.5-pro:generateContent");
    assert_eq!(
        a[0].path,
        "/openai/deployments/critic-deployment/chat/completions?api-version=2025-01-01-preview"
    );
    assert_eq!(
        a[0].body["messages"][1]["content"],
        "Critique: ANSWER 1: Write a haiku."
    );
    // runtime.region reaches the agent that names bedrock.
    assert_eq!(b[0].path, "/model/amazon.nova-pro-v1%3A0/converse");
    let auth = b[0].header("authorization").expect("signed");
    assert!(
        auth.contains("/eu-central-1/bedrock/aws4_request"),
        "{auth}"
    );
    assert_eq!(
        v["output"], "ANSWER 1: Judge: ANSWER 1: Critique: ANSWER 1: Write a haiku.",
        "{v:#}"
    );
}

/// `strands run` of a one-step spec with `runtime`, expecting exit 2 and
/// `needle` in the error, both in `--json` and on stderr.
#[track_caller]
fn refused(runtime: &str, env: &[(&str, &str)], needle: &str) -> Outcome {
    let (sandbox, spec) = setup(runtime);
    let out = run(&sandbox, &spec, env);
    out.expect_code(2);
    let v = out.json();
    let message = v["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(needle), "{v:#}");
    assert!(out.stderr.contains(needle), "{}", out.stderr);
    out
}

#[test]
fn missing_settings_are_refused_naming_the_variable() {
    // Keys and endpoints are checked before a session exists.
    for (runtime, env, needle) in [
        (
            "  provider: gemini",
            vec![],
            "GOOGLE_API_KEY (or GEMINI_API_KEY)",
        ),
        (
            "  provider: azure_openai",
            vec![("AZURE_OPENAI_API_KEY", "k")],
            "AZURE_OPENAI_ENDPOINT",
        ),
        (
            "  provider: azure_openai",
            vec![("AZURE_OPENAI_ENDPOINT", "https://r.openai.azure.com")],
            "AZURE_OPENAI_API_KEY",
        ),
        (
            "  provider: bedrock\n  region: us-east-1",
            vec![("AWS_ENDPOINT_URL", "bedrock.local")],
            "AWS_ENDPOINT_URL",
        ),
    ] {
        let out = refused(runtime, &env, needle);
        assert!(out.json()["session_id"].is_null(), "{}", out.stdout);
    }
}

#[test]
fn bedrock_without_region_or_credentials_fails_naming_what_to_set() {
    let fake = WireFake::start(Wire::Bedrock, &[], None);
    let endpoint = [("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", fake.url.as_str())];
    // Both are resolved by the AWS SDK's chains at the first call.
    let out = refused(
        "  provider: bedrock",
        &[
            endpoint[0],
            ("AWS_ACCESS_KEY_ID", "AKID"),
            ("AWS_SECRET_ACCESS_KEY", "s"),
        ],
        "runtime.region",
    );
    assert!(out.stderr.contains("AWS_REGION"), "{}", out.stderr);
    let out = refused(
        "  provider: bedrock\n  region: us-west-2",
        &endpoint,
        "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY",
    );
    let v = out.json();
    assert_eq!(v["status"], "failed", "{v:#}");
    assert!(!session_id(&v).is_empty());
    assert!(fake.requests().is_empty(), "nothing was sent");
}
