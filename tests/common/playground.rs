//! Microsoft 365 Agents Playground (npm `@microsoft/m365agentsplayground`,
//! pinned in `tests/teams-playground/package.json`) as a Teams client for
//! the tests: Microsoft's emulated Teams and its mocked Bot Framework
//! connector, started on 127.0.0.1 against a real `strands serve` in the
//! local Playground mode. Tests act as its users over its HTTP API and read
//! what the bot posted from its conversation stream (a websocket), as
//! `../shared/docs/TEAMS-PLAYGROUND.md` describes (facts read off 0.2.28).
//!
//! Installed by `npm ci` in `tests/teams-playground` (`.ci/run` does it).
//! Without it, a test using the Playground prints a notice and passes
//! without checking anything — unless `STRANDS_REQUIRE_PLAYGROUND=1` (CI),
//! where a missing Playground fails the test.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::{json, Value};

use super::service::{http, HttpReply};

const WAIT: Duration = Duration::from_secs(20);

/// The folder holding the pinned Playground.
pub fn folder() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/teams-playground")
}

fn cli() -> PathBuf {
    folder().join("node_modules/@microsoft/m365agentsplayground/cli.js")
}

/// A user of the Playground's test tenant.
#[derive(Debug, Clone)]
pub struct User {
    /// `user-id-N`.
    pub id: String,
    pub name: String,
    pub aad: String,
}

/// A running Playground; killed when dropped.
pub struct Playground {
    child: Child,
    pub url: String,
    config: Value,
    stream: Arc<Mutex<Vec<Value>>>,
    log: Arc<Mutex<String>>,
    /// Cards the bot answered invokes with.
    answered: Mutex<Vec<(String, Value)>>,
    _dir: tempfile::TempDir,
}

impl Playground {
    /// The Playground pointed at the bot's `messages` URL, or `None` (the
    /// notice printed) when it is not installed and not required.
    pub fn start(messages: &str) -> Option<Playground> {
        let required = std::env::var("STRANDS_REQUIRE_PLAYGROUND").is_ok_and(|v| v == "1");
        if !cli().exists() {
            let why = format!(
                "the Agents Playground is not installed ({} is missing): run `npm ci` in {}",
                cli().display(),
                folder().display()
            );
            assert!(!required, "STRANDS_REQUIRE_PLAYGROUND=1: {why}");
            eprintln!("skipped: {why}");
            return None;
        }
        // A fresh folder: it reads `.m365agentsplayground.yml` from its own.
        let dir = tempfile::tempdir().expect("a temp dir");
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
            l.local_addr().expect("addr").port()
        };
        let mut child = Command::new("node")
            .arg(cli())
            .args(["start", "-e", messages, "-c", "msteams", "--dt", "-p"])
            .arg(port.to_string())
            .current_dir(dir.path())
            .env("TEAMSAPPTESTER_BROWSER", "none")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("node runs the Playground");
        let log = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = std::sync::mpsc::channel::<u16>();
        let stdout = child.stdout.take().expect("stdout");
        let stderr = child.stderr.take().expect("stderr");
        {
            let log = log.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                    if let Some(p) = line.trim().strip_prefix("Listening on ") {
                        if let Ok(p) = p.trim().parse() {
                            let _ = tx.send(p);
                        }
                    }
                    log.lock().expect("log").push_str(&format!("{line}\n"));
                }
            });
        }
        {
            let log = log.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                    log.lock().expect("log").push_str(&format!("{line}\n"));
                }
            });
        }
        // A taken port makes it pick another silently: read the line.
        let port = rx.recv_timeout(WAIT).unwrap_or_else(|_| {
            let _ = child.kill();
            panic!(
                "the Playground did not say `Listening on` within {WAIT:?}:\n{}",
                log.lock().expect("log")
            )
        });
        let url = format!("http://127.0.0.1:{port}");
        let until = Instant::now() + WAIT;
        while !http("GET", &format!("{url}/_debug/ping"), &[], b"").is_ok_and(|r| r.body == "pong")
        {
            assert!(Instant::now() < until, "the Playground never answered ping");
            std::thread::sleep(Duration::from_millis(100));
        }
        // The stream buffers until its first client: connect at once.
        let stream = Arc::new(Mutex::new(Vec::new()));
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<()>();
        {
            let stream = stream.clone();
            let ws = format!("ws://127.0.0.1:{port}/_ws_conversation/v1/conversations/stream");
            std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("a runtime");
                rt.block_on(async move {
                    let Ok((mut socket, _)) = tokio_tungstenite::connect_async(ws).await else {
                        return;
                    };
                    let _ = ready_tx.send(());
                    while let Some(Ok(msg)) = socket.next().await {
                        if let Ok(text) = msg.to_text() {
                            if let Ok(v) = serde_json::from_str::<Value>(text) {
                                stream.lock().expect("stream").push(v);
                            }
                        }
                    }
                });
            });
        }
        ready_rx
            .recv_timeout(WAIT)
            .expect("connected to the Playground's conversation stream");
        let config = http("GET", &format!("{url}/_internal/v1/testConfig"), &[], b"")
            .expect("GET testConfig")
            .json()["config"]
            .clone();
        Some(Playground {
            child,
            url,
            config,
            stream,
            log,
            answered: Mutex::new(Vec::new()),
            _dir: dir,
        })
    }

    /// What the Playground printed.
    pub fn log(&self) -> String {
        self.log.lock().expect("log").clone()
    }

    /// The emulated bot's id.
    pub fn bot_id(&self) -> String {
        self.config["bot"]["id"]
            .as_str()
            .expect("bot id")
            .to_string()
    }

    /// The current user (`user-id-0`) when `n` is 0, else `user-id-n`.
    pub fn user(&self, n: usize) -> User {
        let u = if n == 0 {
            &self.config["currentUser"]
        } else {
            &self.config["users"][n - 1]
        };
        User {
            id: u["id"].as_str().expect("user id").to_string(),
            name: u["name"].as_str().expect("user name").to_string(),
            aad: u["aadObjectId"].as_str().expect("aad").to_string(),
        }
    }

    /// The personal chat's id.
    pub fn personal_chat(&self) -> String {
        self.config["personalChat"]["id"]
            .as_str()
            .expect("personal chat")
            .to_string()
    }

    /// The team's General channel.
    pub fn channel(&self) -> String {
        "team-id".to_string()
    }

    fn post(&self, path: &str, body: &Value) -> HttpReply {
        let headers = [("Content-Type".to_string(), "application/json".to_string())];
        http(
            "POST",
            &format!("{}{path}", self.url),
            &headers,
            body.to_string().as_bytes(),
        )
        .unwrap_or_else(|e| panic!("POST {path}: {e}"))
    }

    /// `user` says `text` in `conversation`, @mentioning the bot when
    /// `mention`; the new message's id (a channel post starts a thread
    /// `<channel>;messageid=<id>`).
    pub fn say(&self, conversation: &str, user: &User, text: &str, mention: bool) -> String {
        let mut body = json!({"from": {"id": user.id}, "text": text, "textFormat": "plain"});
        if mention {
            let at = "<at>Test Bot</at>";
            body["text"] = json!(format!("{at} {text}"));
            body["mentions"] =
                json!([{"mentioned": {"id": self.bot_id(), "name": "Test Bot"}, "text": at}]);
        }
        let r = self.post(
            &format!("/_conversation/v1/conversations/{conversation}/messages"),
            &body,
        );
        assert_eq!(r.status, 200, "say: {} {}", r.status, r.body);
        r.json()["messageId"]
            .as_str()
            .expect("a messageId")
            .to_string()
    }

    /// `user` clicks an `Action.Execute` with `verb` and `data` on the card
    /// `card_id` in `conversation`; the Playground's answer (the bot's
    /// invoke response, `{type, value}`).
    pub fn execute(
        &self,
        conversation: &str,
        card_id: &str,
        user: &User,
        verb: &str,
        data: &Value,
    ) -> HttpReply {
        let r = self.post(
            "/_conversation/v1/invoke",
            &json!({
                "name": "adaptiveCard/action",
                "value": {"action": {"type": "Action.Execute", "title": verb, "verb": verb, "data": data}},
                "from": {"id": user.id},
                "conversation": {"id": conversation},
                "replyToId": card_id,
            }),
        );
        let answer = r.json();
        if answer["type"] == "application/vnd.microsoft.card.adaptive" {
            self.answered.lock().expect("answered").push((
                format!("invoke {verb} on {card_id}"),
                answer["value"].clone(),
            ));
        }
        r
    }

    /// Every card the bot posted, updated or answered an invoke with passes
    /// Microsoft's Adaptive Cards parser ([`super::card_schema`]).
    #[track_caller]
    pub fn assert_cards_valid(&self) {
        let mut cards: Vec<(String, Value)> = self
            .events()
            .into_iter()
            .filter(|e| is_card(&e["message"]))
            .flat_map(|e| {
                let label = format!(
                    "{} {}",
                    e["action"].as_str().unwrap_or("?"),
                    e["message"]["messageId"].as_str().unwrap_or("?")
                );
                e["message"]["attachments"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|a| a["contentType"] == "application/vnd.microsoft.card.adaptive")
                    .map(move |a| (label.clone(), a["content"].clone()))
            })
            .collect();
        cards.extend(self.answered.lock().expect("answered").iter().cloned());
        assert!(!cards.is_empty(), "no card to check");
        super::card_schema::assert_valid(&cards);
    }

    /// Everything the conversation stream carried so far.
    pub fn events(&self) -> Vec<Value> {
        self.stream.lock().expect("stream").clone()
    }

    /// Waits for a stream event that `pred` accepts; it.
    pub fn wait_for(&self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        let until = Instant::now() + WAIT;
        loop {
            if let Some(e) = self.events().into_iter().find(|e| pred(e)) {
                return e;
            }
            assert!(
                Instant::now() < until,
                "no {what} on the Playground's stream within {WAIT:?}: {:#?}\n--- playground\n{}",
                self.events(),
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits for the `n`th card the bot posted (1-based), anywhere; the
    /// event's message.
    pub fn card(&self, n: usize) -> Value {
        let until = Instant::now() + WAIT;
        loop {
            let cards: Vec<Value> = self
                .events()
                .into_iter()
                .filter(|e| e["action"] == "createMessage" && is_card(&e["message"]))
                .collect();
            if cards.len() >= n {
                return cards[n - 1].clone();
            }
            assert!(
                Instant::now() < until,
                "{} cards on the Playground's stream, wanted {n}: {:#?}\n--- playground\n{}",
                cards.len(),
                self.events(),
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Whether a streamed message carries an Adaptive Card.
pub fn is_card(message: &Value) -> bool {
    message["attachments"].as_array().is_some_and(|a| {
        a.iter()
            .any(|x| x["contentType"] == "application/vnd.microsoft.card.adaptive")
    })
}

impl Drop for Playground {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
