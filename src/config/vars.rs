//! Every variable strands reads, in one table: its name, type, default,
//! meaning, whether it is a secret, and the section of the settings it
//! belongs to. The environment is read from this table only
//! ([`super::env::Env`]), `strands config` prints it with the effective
//! values, and the settings tables of the README and of the book
//! (`docs/src/`) are rendered from it ([`markdown`]), so a variable cannot be read, shown or documented in one
//! place and forgotten in another.
//!
//! What this module does not do: parse values. Each section's builder
//! (`config::Settings`, `serve::Config`, `slack::config`, …) parses its
//! own, with errors naming the variable; the table only describes them.

use std::fmt::Write as _;

/// A part of the settings tree: what a variable configures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Section {
    /// The settings file itself.
    File,
    /// Where sessions are kept (a directory, or a database URL).
    Store,
    /// PostgreSQL, when the store is a `postgres://` URL.
    Postgres,
    /// Leases on driving a run, shared stores.
    Lease,
    /// What runs are configured with: approvers, timeouts, retries.
    Engine,
    /// The tools' network and search endpoints.
    Tools,
    /// Model providers' keys and endpoints (strands-cli's names).
    Providers,
    /// `strands serve`: where it listens, what it may run.
    Serve,
    /// The web inbox.
    Web,
    /// The HTTP API's limits.
    Api,
    /// The Slack room.
    Slack,
    /// Asking again, at start-up, where a room never asked.
    Repost,
    /// The Microsoft Teams room.
    Teams,
    /// Outbound webhooks.
    Webhook,
    /// The e-mail room.
    Email,
    /// The queue room (RabbitMQ, AMQP 0-9-1).
    Amqp,
    /// The CLI as a client of a server.
    Client,
    /// Logs.
    Log,
}

impl Section {
    /// Every section, in the order they are shown.
    pub const ALL: [Section; 18] = [
        Section::File,
        Section::Store,
        Section::Postgres,
        Section::Lease,
        Section::Engine,
        Section::Tools,
        Section::Providers,
        Section::Serve,
        Section::Web,
        Section::Api,
        Section::Slack,
        Section::Repost,
        Section::Teams,
        Section::Webhook,
        Section::Email,
        Section::Amqp,
        Section::Client,
        Section::Log,
    ];

    /// The section's name, as `strands config` and the docs' markers
    /// write it.
    pub fn name(self) -> &'static str {
        match self {
            Section::File => "file",
            Section::Store => "store",
            Section::Postgres => "postgres",
            Section::Lease => "lease",
            Section::Engine => "engine",
            Section::Tools => "tools",
            Section::Providers => "providers",
            Section::Serve => "serve",
            Section::Web => "web",
            Section::Api => "api",
            Section::Slack => "slack",
            Section::Repost => "repost",
            Section::Teams => "teams",
            Section::Webhook => "webhook",
            Section::Email => "email",
            Section::Amqp => "amqp",
            Section::Client => "client",
            Section::Log => "log",
        }
    }

    /// The section named `name`.
    pub fn parse(name: &str) -> Option<Section> {
        Section::ALL.into_iter().find(|s| s.name() == name.trim())
    }
}

/// What kind of value a variable takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Free text.
    Text,
    /// A whole number.
    Integer,
    /// A number, fractions allowed.
    Number,
    /// `1`, `true` or `yes` turns it on.
    Flag,
    /// Comma-separated values.
    List,
    /// An http(s) URL (or a list of them).
    Url,
    /// A file or directory.
    Path,
    /// A socket address, `IP:PORT`.
    Address,
    /// A duration with a unit: `30s`, `10m`, `24h`, `3d`.
    Duration,
}

impl Kind {
    /// The kind's name in the docs and `strands config`.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Text => "text",
            Kind::Integer => "integer",
            Kind::Number => "number",
            Kind::Flag => "flag",
            Kind::List => "list",
            Kind::Url => "URL",
            Kind::Path => "path",
            Kind::Address => "address",
            Kind::Duration => "duration",
        }
    }
}

/// How a value is shown when it must not be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Secret {
    /// Shown as it is.
    No,
    /// Never shown: a recognised prefix (`xoxb-`, `whsec_`…) and `…(set)`.
    Yes,
    /// A URL whose password, if it has one, is never shown.
    Password,
}

/// One variable.
#[derive(Debug, Clone, Copy)]
pub struct Var {
    pub name: &'static str,
    pub section: Section,
    pub kind: Kind,
    /// The value used when unset, as shown; `None`: unset means off or
    /// nothing (the meaning says which).
    pub default: Option<&'static str>,
    /// The command-line flag that overrides it, if any.
    pub flag: Option<&'static str>,
    pub secret: Secret,
    /// What it does, in the docs' words (Markdown; relative links from the
    /// repository's root).
    pub meaning: &'static str,
}

const fn var(
    name: &'static str,
    section: Section,
    kind: Kind,
    default: Option<&'static str>,
    meaning: &'static str,
) -> Var {
    Var {
        name,
        section,
        kind,
        default,
        flag: None,
        secret: Secret::No,
        meaning,
    }
}

const fn secret(name: &'static str, section: Section, meaning: &'static str) -> Var {
    Var {
        name,
        section,
        kind: Kind::Text,
        default: None,
        flag: None,
        secret: Secret::Yes,
        meaning,
    }
}

const fn with_flag(v: Var, flag: &'static str) -> Var {
    Var {
        flag: Some(flag),
        ..v
    }
}

const fn password(v: Var) -> Var {
    Var {
        secret: Secret::Password,
        ..v
    }
}

use Kind::*;
use Section::*;

/// Every variable strands reads. Add one here before reading it: the
/// environment is read from this table only, and a name missing from it is
/// a bug caught in tests ([`super::env::Env::get`]).
pub const VARS: &[Var] = &[
    // file
    var(
        "STRANDS_CONFIG",
        File,
        Path,
        Some("`strands.toml` in the current directory, if there is one"),
        "a TOML file of these variables (`STRANDS_BIND = \"0.0.0.0:3000\"`), read before the environment, which wins",
    ),
    // store
    password(with_flag(
        var(
            "STRANDS_STORE",
            Store,
            Path,
            Some("the platform's data directory + `strands/store`"),
            "the session store: a directory (sled), or a `postgres://` URL (its password is never shown)",
        ),
        "--store",
    )),
    var(
        "STRANDS_STORE_CACHE_MB",
        Store,
        Integer,
        Some("64"),
        "sled's page cache, in MB",
    ),
    // postgres
    var(
        "STRANDS_PG_POOL_SIZE",
        Postgres,
        Integer,
        Some("16"),
        "connections per process (keep replicas × pool below the server's `max_connections`)",
    ),
    var(
        "STRANDS_PG_STATEMENT_TIMEOUT_MS",
        Postgres,
        Integer,
        Some("30000"),
        "per statement, set on each connection",
    ),
    var(
        "STRANDS_PG_CONNECT_TIMEOUT_SECS",
        Postgres,
        Integer,
        Some("10"),
        "connecting, and waiting for a pooled connection",
    ),
    var(
        "STRANDS_PG_EVENTS_POLL_SECS",
        Postgres,
        Integer,
        Some("5"),
        "how often a replica also reads the event head, in case a `NOTIFY` was missed (a dropped listening connection)",
    ),
    var(
        "STRANDS_PG_CA_FILE",
        Postgres,
        Path,
        None,
        "PEM file of CA certificates to trust besides the system's; TLS is asked for in the URL (`sslmode=require`)",
    ),
    // lease
    var(
        "STRANDS_LEASE_SECS",
        Lease,
        Integer,
        Some("30"),
        "how long a run's lease lasts unrenewed",
    ),
    var(
        "STRANDS_DRIVES",
        Lease,
        Integer,
        Some("32 per core"),
        "runs `serve` drives at once (started, answered, left running at start-up, taken over); the rest wait their turn, oldest first, taking no memory",
    ),
    // engine
    var(
        "STRANDS_ADMINS",
        Engine,
        List,
        None,
        "identities that may answer any gate",
    ),
    var(
        "STRANDS_APPROVERS",
        Engine,
        List,
        None,
        "identities that answer gates naming nobody (the bot; unset: anyone)",
    ),
    var(
        "STRANDS_LLM_TIMEOUT_SECS",
        Engine,
        Integer,
        Some("120"),
        "the time limit of one model call",
    ),
    var(
        "STRANDS_MAX_RETRIES",
        Engine,
        Integer,
        Some("3"),
        "retries of a failed model or Slack call",
    ),
    var(
        "STRANDS_RETRY_BASE_MS",
        Engine,
        Integer,
        Some("500"),
        "the first retry's backoff, doubled each time",
    ),
    var(
        "STRANDS_MAX_TIMEOUT_DAYS",
        Engine,
        Integer,
        Some("7"),
        "the longest gate timeout a spec may set",
    ),
    var(
        "STRANDS_DEFAULT_TIMEOUT_MINUTES",
        Engine,
        Number,
        None,
        "timeout of gates that set none, in the bot (their fallback applies); unset: none",
    ),
    var(
        "STRANDS_REMIND_BEFORE_MINUTES",
        Engine,
        Number,
        None,
        "one last reminder this long before a timeout, for gates without `remind_before`",
    ),
    var(
        "STRANDS_SERVICE_FILE",
        Engine,
        Path,
        None,
        "the service file: business-hours calendars and named approval policies",
    ),
    var(
        "STRANDS_CALENDARS",
        Engine,
        Text,
        None,
        "business-hours calendars (a path, or YAML), replacing the service file's",
    ),
    // tools
    var(
        "STRANDS_NETWORK_ALLOW",
        Tools,
        List,
        None,
        "hosts and networks HTTP tools may reach although internal (installation-wide egress allow-list)",
    ),
    var(
        "STRANDS_DUCKDUCKGO_URL",
        Tools,
        Url,
        Some("`https://html.duckduckgo.com`"),
        "where `duckduckgo_search` goes",
    ),
    var(
        "STRANDS_TAVILY_URL",
        Tools,
        Url,
        Some("`https://api.tavily.com`"),
        "where `tavily_search` goes",
    ),
    secret("TAVILY_API_KEY", Tools, "`tavily_search`'s key (strands-cli's name)"),
    // providers
    secret("OPENAI_API_KEY", Providers, "`provider: openai`'s key"),
    var(
        "OPENAI_BASE_URL",
        Providers,
        Url,
        Some("`https://api.openai.com/v1`"),
        "`provider: openai`'s endpoint when the spec's `host` is unset",
    ),
    secret("ANTHROPIC_API_KEY", Providers, "`provider: anthropic`'s key"),
    var(
        "ANTHROPIC_BASE_URL",
        Providers,
        Url,
        Some("`https://api.anthropic.com`"),
        "`provider: anthropic`'s endpoint when the spec's `host` is unset",
    ),
    secret(
        "GOOGLE_API_KEY",
        Providers,
        "`provider: gemini`'s key (before `GEMINI_API_KEY`)",
    ),
    secret("GEMINI_API_KEY", Providers, "`provider: gemini`'s key"),
    var(
        "GEMINI_BASE_URL",
        Providers,
        Url,
        Some("`https://generativelanguage.googleapis.com`"),
        "`provider: gemini`'s endpoint when the spec's `host` is unset",
    ),
    secret("AZURE_OPENAI_API_KEY", Providers, "`provider: azure_openai`'s key"),
    var(
        "AZURE_OPENAI_ENDPOINT",
        Providers,
        Url,
        None,
        "`provider: azure_openai`'s resource endpoint when the spec's `host` is unset",
    ),
    var(
        "AZURE_OPENAI_API_VERSION",
        Providers,
        Text,
        Some("`2024-10-21`"),
        "`provider: azure_openai`'s API version",
    ),
    var(
        "AWS_ENDPOINT_URL_BEDROCK_RUNTIME",
        Providers,
        Url,
        None,
        "`provider: bedrock`'s endpoint when the spec's `host` is unset (then `AWS_ENDPOINT_URL`); credentials and region come from the AWS SDK's own chain",
    ),
    var(
        "AWS_ENDPOINT_URL",
        Providers,
        Url,
        None,
        "`provider: bedrock`'s endpoint, after `AWS_ENDPOINT_URL_BEDROCK_RUNTIME`",
    ),
    var(
        "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS",
        Providers,
        Flag,
        None,
        "`true`: `provider: bedrock` ignores the two endpoint variables",
    ),
    var(
        "OLLAMA_HOST",
        Providers,
        Url,
        Some("`http://localhost:11434`"),
        "where `strands doctor` looks for Ollama",
    ),
    // serve
    with_flag(
        var(
            "STRANDS_BIND",
            Serve,
            Address,
            Some("`127.0.0.1:3000`"),
            "where `strands serve` listens",
        ),
        "--bind",
    ),
    with_flag(
        var(
            "STRANDS_WORKFLOWS",
            Serve,
            Path,
            None,
            "specs runs may start (`POST /runs`, `/strands run`)",
        ),
        "--workflows",
    ),
    var(
        "STRANDS_PUBLIC_URL",
        Serve,
        Url,
        Some("`http://` + the bind address"),
        "how others reach the server: webhook payloads', mails' and one-tap links' base; `https://` makes the cookie `Secure`",
    ),
    var(
        "STRANDS_MAX_BODY_BYTES",
        Serve,
        Integer,
        Some("262144 (256 KiB)"),
        "request body limit, every route",
    ),
    // web
    var(
        "STRANDS_WEB_TEMPLATES",
        Web,
        Path,
        None,
        "directory of web inbox templates replacing the built-in ones",
    ),
    var(
        "STRANDS_WEB_LOGIN_HOURS",
        Web,
        Integer,
        Some("12"),
        "how long a web sign-in lasts",
    ),
    var(
        "STRANDS_OIDC_ISSUER",
        Web,
        Url,
        None,
        "the identity provider's issuer URL: the web inbox offers sign-in through it (OpenID Connect, authorization code + PKCE); its discovery is fetched when `serve` starts. Register the redirect URI `{STRANDS_PUBLIC_URL}/auth/oidc/callback`",
    ),
    var(
        "STRANDS_OIDC_CLIENT_ID",
        Web,
        Text,
        None,
        "the client id strands has at the identity provider (needed with the issuer)",
    ),
    secret(
        "STRANDS_OIDC_CLIENT_SECRET",
        Web,
        "the client's secret at the identity provider (needed with the issuer); never logged",
    ),
    var(
        "STRANDS_OIDC_SCOPES",
        Web,
        Text,
        Some("`openid email profile`"),
        "the scopes asked for, space-separated (`openid` is always asked)",
    ),
    var(
        "STRANDS_OIDC_NAME_CLAIM",
        Web,
        Text,
        Some("`email`"),
        "the ID token's claim naming the person (`email`, `preferred_username`, `oid`, `sub`, any claim): matched to the people directory's `oidc` or `email`",
    ),
    var(
        "STRANDS_OIDC_GROUPS_CLAIM",
        Web,
        Text,
        Some("`groups`"),
        "the ID token's claim listing the person's groups; they count for `group:NAME` approvers",
    ),
    var(
        "STRANDS_OIDC_ADMIN_GROUP",
        Web,
        Text,
        None,
        "members of this identity provider group sign in with role admin",
    ),
    var(
        "STRANDS_OIDC_OPERATOR_GROUP",
        Web,
        Text,
        None,
        "members of this identity provider group sign in with role operator (others: approver)",
    ),
    // api
    var(
        "STRANDS_API_RATE_PER_SEC",
        Api,
        Integer,
        Some("20"),
        "per-token rate limit, requests a second",
    ),
    var(
        "STRANDS_API_BURST",
        Api,
        Integer,
        Some("40"),
        "per-token rate limit, burst",
    ),
    var(
        "STRANDS_MCP_PROGRESS_SECONDS",
        Api,
        Integer,
        Some("10"),
        "how often a waiting MCP tool (`request_approval`, `approve_tool_call`) reports progress",
    ),
    // slack
    secret(
        "SLACK_BOT_TOKEN",
        Slack,
        "`xoxb-…`: turns Slack on (with one or both of the next two); never logged",
    ),
    secret(
        "SLACK_APP_TOKEN",
        Slack,
        "`xapp-…` (scope `connections:write`): Socket Mode, no public URL; never logged",
    ),
    secret(
        "SLACK_SIGNING_SECRET",
        Slack,
        "request URLs: mounts and verifies `/slack/*`; never logged",
    ),
    var(
        "SLACK_API_URL",
        Slack,
        Url,
        Some("`https://slack.com/api`"),
        "Slack's Web API (tests point it at a fake)",
    ),
    with_flag(
        var(
            "STRANDS_APPROVAL_CHANNEL",
            Slack,
            Text,
            None,
            "where approval messages go unless `/strands run … --channel C` names one; without both, the channel the command came from",
        ),
        "--approval-channel",
    ),
    with_flag(
        var(
            "STRANDS_TEMPLATES",
            Slack,
            Path,
            None,
            "a directory whose `approval.json.j2`, `decided.json.j2`, `form.json.j2`, `modal.json.j2`, `output.json.j2`, `progress.json.j2`, `tool_approval.json.j2` replace the built-ins in [`templates/`](templates/)",
        ),
        "--templates",
    ),
    // repost
    var(
        "STRANDS_REPOST_CONCURRENCY",
        Repost,
        Integer,
        Some("4"),
        "approval messages never posted that start-up posts at once, at most",
    ),
    var(
        "STRANDS_REPOST_INTERVAL_MS",
        Repost,
        Integer,
        Some("1000"),
        "the least time between two of those posts starting (Slack's one message a second per channel)",
    ),
    // teams
    var(
        "TEAMS_APP_ID",
        Teams,
        Text,
        None,
        "the bot's Entra app (application ID); with `TEAMS_APP_PASSWORD`, turns the room on; also `strands teams package`'s default app ID",
    ),
    secret(
        "TEAMS_APP_PASSWORD",
        Teams,
        "the Entra app's client secret value; never logged",
    ),
    var(
        "TEAMS_TENANT_ID",
        Teams,
        Text,
        None,
        "a single-tenant bot's tenant: its token URL, and only activities from it are taken",
    ),
    var(
        "TEAMS_ACCEPT_TENANT_ISSUER",
        Teams,
        Flag,
        None,
        "`1`: also accept Entra tokens issued by that tenant",
    ),
    var(
        "TEAMS_OPENID_METADATA_URL",
        Teams,
        Url,
        Some("`https://login.botframework.com/v1/.well-known/openidconfiguration`"),
        "where signing keys are found",
    ),
    var(
        "TEAMS_TOKEN_URL",
        Teams,
        Url,
        Some("`https://login.microsoftonline.com/<tenant or botframework.com>/oauth2/v2.0/token`"),
        "the client-credentials token endpoint",
    ),
    var(
        "TEAMS_SERVICE_URL_HOSTS",
        Teams,
        List,
        Some("`smba.trafficmanager.net`"),
        "hosts a `serviceUrl` may name",
    ),
    var(
        "TEAMS_ALLOW_HTTP_LOOPBACK",
        Teams,
        Flag,
        None,
        "`1`: also plain-HTTP loopback service URLs (tests only)",
    ),
    var(
        "TEAMS_MAX_ATTEMPTS",
        Teams,
        Integer,
        Some("4"),
        "Connector attempts per call",
    ),
    var(
        "TEAMS_RETRY_BASE_MS",
        Teams,
        Integer,
        Some("500"),
        "the Connector's first retry's backoff",
    ),
    var(
        "TEAMS_LOCAL_PLAYGROUND",
        Teams,
        Flag,
        None,
        "`1`: the room without an app or tokens, for Microsoft's Agents Playground on this machine only",
    ),
    var(
        "TEAMS_APPROVALS_CONVERSATION",
        Teams,
        Text,
        None,
        "the conversation id (`19:…@thread.tacv2`, as `strands teams conversations` lists it; a `teams:` prefix is accepted) where runs started outside Teams get their approval cards; unset: only Teams-started runs are asked in Teams",
    ),
    // webhook
    password(var(
        "STRANDS_WEBHOOK_URL",
        Webhook,
        Url,
        None,
        "one or more http(s) URLs, comma-separated; unset: no webhooks",
    )),
    secret(
        "STRANDS_WEBHOOK_SECRET",
        Webhook,
        "`whsec_` + base64 (e.g. `echo whsec_$(head -c 32 /dev/urandom \\| base64)`); required with URLs; never logged",
    ),
    var(
        "STRANDS_WEBHOOK_GIVE_UP",
        Webhook,
        Duration,
        Some("`24h`"),
        "how long an event is retried: `30s`, `10m`, `24h`, `3d`",
    ),
    // email
    password(var(
        "STRANDS_SMTP_URL",
        Email,
        Url,
        None,
        "`smtp://user:pass@host:587` — STARTTLS, required; `smtps://user:pass@host:465` — TLS from the start; `smtp://127.0.0.1:2525?tls=none` — no TLS, loopback only (tests). User and password percent-encoded; the password is never logged. Unset: no mail",
    )),
    var(
        "STRANDS_EMAIL_FROM",
        Email,
        Text,
        None,
        "the sender, `Name <address>`; its domain ends every Message-ID. Required with the URL (one without the other stops `serve`, exit 2)",
    ),
    var(
        "STRANDS_EMAIL_MAX_ATTEMPTS",
        Email,
        Integer,
        Some("8"),
        "attempts per mail before it is given up",
    ),
    var(
        "STRANDS_EMAIL_RETRY_BASE_MS",
        Email,
        Integer,
        Some("2000"),
        "the first retry's backoff",
    ),
    // amqp
    password(var(
        "STRANDS_AMQP_URL",
        Amqp,
        Text,
        None,
        "the broker, `amqp://user:pass@host:5672/vhost` or `amqps://…` (TLS, the platform's roots); its password is never shown. Unset: no queue room",
    )),
    var(
        "STRANDS_AMQP_EXCHANGE",
        Amqp,
        Text,
        Some("`strands.events`"),
        "the durable topic exchange every event is published to, routing key = the event's type",
    ),
    var(
        "STRANDS_AMQP_QUEUE",
        Amqp,
        Text,
        Some("`strands.requests`"),
        "the durable queue approval requests and answers are taken from",
    ),
    var(
        "STRANDS_AMQP_DEAD_LETTER",
        Amqp,
        Text,
        Some("`strands.dead`"),
        "the dead-letter exchange (and the queue bound to it) refused messages go to, with the reason in `x-strands-reason`",
    ),
    var(
        "STRANDS_AMQP_PREFETCH",
        Amqp,
        Integer,
        Some("32"),
        "messages taken from the queue at once, unacknowledged, per replica",
    ),
    var(
        "STRANDS_AMQP_MAX_DELIVERIES",
        Amqp,
        Integer,
        Some("5"),
        "failed attempts at a message (the store did not answer) before it is dead-lettered with the last error, not tried again",
    ),
    var(
        "STRANDS_AMQP_GIVE_UP",
        Amqp,
        Duration,
        Some("`24h`"),
        "how long an event is retried while the broker is down before it is listed by `strands webhooks failed`",
    ),
    // client
    var(
        "STRANDS_SERVER",
        Client,
        Url,
        None,
        "the server the CLI goes through (with `STRANDS_TOKEN`); unset: the one holding the store, if any",
    ),
    secret(
        "STRANDS_TOKEN",
        Client,
        "the API token the CLI sends to `STRANDS_SERVER`",
    ),
    // log
    var(
        "STRANDS_LOG",
        Log,
        Text,
        Some("`warn`"),
        "log filter (`info`, `debug`, `strands=debug`…); `--verbose`, `--debug`, `--trace` override it",
    ),
    var(
        "STRANDS_LOG_FORMAT",
        Log,
        Text,
        None,
        "`json`: JSON logs",
    ),
];

/// The variable named `name`, if strands reads it.
pub fn find(name: &str) -> Option<&'static Var> {
    VARS.iter().find(|v| v.name == name)
}

/// The docs' table of `sections`' variables: variable (and flag), type,
/// default, meaning.
pub fn markdown(sections: &[Section]) -> String {
    table(sections, false)
}

/// [`markdown`] with a first column naming each variable's section: the
/// book's reference of every setting (`docs/src/settings.md`).
pub fn markdown_all(sections: &[Section]) -> String {
    table(sections, true)
}

fn table(sections: &[Section], with_section: bool) -> String {
    let mut out = String::new();
    if with_section {
        out.push_str("| section | variable | type | default | meaning |\n|---|---|---|---|---|\n");
    } else {
        out.push_str("| variable | type | default | meaning |\n|---|---|---|---|\n");
    }
    // In the order of `sections`, then the table's.
    for section in sections {
        for v in VARS.iter().filter(|v| v.section == *section) {
            let name = match v.flag {
                Some(flag) => format!("`{}` (`{flag}`)", v.name),
                None => format!("`{}`", v.name),
            };
            let kind = match v.secret {
                Secret::Yes => "secret",
                _ => v.kind.name(),
            };
            if with_section {
                let _ = write!(out, "| {} ", section.name());
            }
            let _ = writeln!(
                out,
                "| {name} | {kind} | {} | {} |",
                v.default.unwrap_or("—"),
                v.meaning
            );
        }
    }
    out
}

#[cfg(test)]
mod tests;
