//! A fake mail server on 127.0.0.1 for the e-mail room's tests: enough
//! ESMTP for lettre without TLS — `EHLO`/`HELO`, `AUTH PLAIN` (and
//! `LOGIN`), `MAIL FROM`, `RCPT TO`, `DATA`, `RSET`, `NOOP`, `QUIT` — that
//! records every message it accepts and answers scripted failures on
//! demand: the next `MAIL FROM` gets a queued reply (`421 …`, `451 …`),
//! and a `RCPT TO` for a refused address gets `550`.
//!
//! It also reads what it records: [`Mail::part`] decodes a multipart
//! message's `text/plain` or `text/html` part (7bit, quoted-printable or
//! base64) and [`Mail::header`] unfolds a header.
//!
//! What it does not do: STARTTLS, size limits, pipelining.

use std::collections::{HashSet, VecDeque};
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine as _;

/// One accepted message.
#[derive(Debug, Clone)]
pub struct Mail {
    pub from: String,
    pub to: Vec<String>,
    /// The message as sent (dot-unstuffed), headers and body.
    pub raw: String,
    /// `AUTH` credentials given on its connection, `user:pass`.
    pub auth: Option<String>,
}

impl Mail {
    /// Header `name`'s value, unfolded (the first one).
    pub fn header(&self, name: &str) -> Option<String> {
        header_in(head_of(&self.raw), name)
    }

    /// The decoded `text/plain` or `text/html` part.
    pub fn part(&self, kind: &str) -> Option<String> {
        let ct = self.header("Content-Type")?;
        let boundary = ct
            .split(';')
            .find_map(|p| p.trim().strip_prefix("boundary="))?
            .trim_matches('"')
            .to_string();
        let body = body_of(&self.raw);
        for chunk in body.split(&format!("--{boundary}")) {
            let chunk = chunk.trim_start_matches("\r\n");
            let head = head_of(chunk);
            let ctype = header_in(head, "Content-Type").unwrap_or_default();
            if !ctype.to_ascii_lowercase().starts_with(kind) {
                continue;
            }
            let enc = header_in(head, "Content-Transfer-Encoding")
                .unwrap_or_default()
                .to_ascii_lowercase();
            let content = body_of(chunk);
            return Some(match enc.as_str() {
                "base64" => {
                    let clean: String = content.chars().filter(|c| !c.is_whitespace()).collect();
                    String::from_utf8_lossy(
                        &base64::engine::general_purpose::STANDARD
                            .decode(clean)
                            .expect("base64 part"),
                    )
                    .into_owned()
                }
                "quoted-printable" => quoted_printable(content),
                _ => content.to_string(),
            });
        }
        None
    }

    /// The `/l/…` paths of the links in the text part, with their labels
    /// (`Approve: https://…/l/TOKEN`).
    pub fn links(&self) -> Vec<(String, String)> {
        let text = self.part("text/plain").expect("a text part");
        text.lines()
            .filter_map(|l| {
                let (label, url) = l.split_once(": ")?;
                let at = url.find("/l/")?;
                Some((label.to_string(), url[at..].trim().to_string()))
            })
            .collect()
    }

    /// The path of the link labelled `label`.
    #[track_caller]
    pub fn link(&self, label: &str) -> String {
        self.links()
            .into_iter()
            .find(|(l, _)| l == label)
            .unwrap_or_else(|| panic!("no `{label}` link in {:?}", self.links()))
            .1
    }
}

fn head_of(s: &str) -> &str {
    s.split_once("\r\n\r\n").map_or(s, |(h, _)| h)
}

fn body_of(s: &str) -> &str {
    s.split_once("\r\n\r\n").map_or("", |(_, b)| b)
}

fn header_in(head: &str, name: &str) -> Option<String> {
    let mut out: Option<String> = None;
    for line in head.split("\r\n") {
        if line.starts_with(' ') || line.starts_with('\t') {
            if let Some(v) = out.as_mut() {
                v.push(' ');
                v.push_str(line.trim());
            }
            continue;
        }
        if out.is_some() {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            if k.eq_ignore_ascii_case(name) {
                out = Some(v.trim().to_string());
            }
        }
    }
    out
}

fn quoted_printable(s: &str) -> String {
    let mut bytes = Vec::new();
    let raw = s.replace("=\r\n", "");
    let b = raw.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'=' && i + 2 < b.len() {
            if let Ok(v) = u8::from_str_radix(&raw[i + 1..i + 3], 16) {
                bytes.push(v);
                i += 3;
                continue;
            }
        }
        bytes.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

#[derive(Default)]
struct State {
    mails: Vec<Mail>,
    /// Replies the next `MAIL FROM` commands get instead of 250.
    faults: VecDeque<String>,
    /// Addresses `RCPT TO` refuses with 550.
    refused: HashSet<String>,
    /// `MAIL FROM` commands seen (attempts).
    attempts: usize,
}

/// The fake server; stops with the test process.
pub struct FakeSmtp {
    pub port: u16,
    state: Arc<Mutex<State>>,
}

impl FakeSmtp {
    pub fn start() -> FakeSmtp {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let port = listener.local_addr().expect("addr").port();
        let state = Arc::new(Mutex::new(State::default()));
        let shared = Arc::clone(&state);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let state = Arc::clone(&shared);
                std::thread::spawn(move || {
                    let _ = serve(stream, &state);
                });
            }
        });
        FakeSmtp { port, state }
    }

    /// `smtp://127.0.0.1:PORT?tls=none` (with `user:pass@` when given).
    pub fn url(&self, auth: Option<&str>) -> String {
        let auth = auth.map(|a| format!("{a}@")).unwrap_or_default();
        format!("smtp://{auth}127.0.0.1:{}?tls=none", self.port)
    }

    /// The next `MAIL FROM` is answered `reply` (e.g. `421 4.3.2 busy`).
    pub fn fail_next(&self, reply: &str) {
        self.state
            .lock()
            .expect("lock")
            .faults
            .push_back(reply.to_string());
    }

    /// `RCPT TO:<addr>` is refused with `550`.
    pub fn refuse(&self, addr: &str) {
        self.state
            .lock()
            .expect("lock")
            .refused
            .insert(addr.to_ascii_lowercase());
    }

    pub fn mails(&self) -> Vec<Mail> {
        self.state.lock().expect("lock").mails.clone()
    }

    /// `MAIL FROM` commands seen, refused ones included.
    pub fn attempts(&self) -> usize {
        self.state.lock().expect("lock").attempts
    }

    /// The mails to `to` whose subject contains `subject`.
    pub fn to(&self, to: &str, subject: &str) -> Vec<Mail> {
        self.mails()
            .into_iter()
            .filter(|m| m.to.iter().any(|t| t.eq_ignore_ascii_case(to)))
            .filter(|m| m.header("Subject").unwrap_or_default().contains(subject))
            .collect()
    }

    /// Waits until `pred` holds of the accepted mails; they.
    #[track_caller]
    pub fn wait(&self, what: &str, pred: impl Fn(&[Mail]) -> bool) -> Vec<Mail> {
        let until = Instant::now() + Duration::from_secs(20);
        loop {
            let mails = self.mails();
            if pred(&mails) {
                return mails;
            }
            assert!(
                Instant::now() < until,
                "never {what}; mails: {:#?}",
                mails
                    .iter()
                    .map(|m| (m.to.clone(), m.header("Subject")))
                    .collect::<Vec<_>>()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

fn serve(stream: TcpStream, state: &Mutex<State>) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut out = stream.try_clone()?;
    let mut reader = BufReader::new(stream);
    let say = |out: &mut TcpStream, s: &str| out.write_all(format!("{s}\r\n").as_bytes());
    say(&mut out, "220 fake.smtp.test ESMTP")?;
    let (mut from, mut to, mut auth) = (String::new(), Vec::new(), None);
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let cmd = line.trim_end().to_string();
        let upper = cmd.to_ascii_uppercase();
        if upper.starts_with("EHLO") {
            out.write_all(
                b"250-fake.smtp.test\r\n250-AUTH PLAIN LOGIN\r\n250-8BITMIME\r\n250 SMTPUTF8\r\n",
            )?;
        } else if upper.starts_with("HELO") {
            say(&mut out, "250 fake.smtp.test")?;
        } else if upper.starts_with("AUTH PLAIN") {
            let arg = cmd[10..].trim().to_string();
            let arg = if arg.is_empty() {
                say(&mut out, "334 ")?;
                line.clear();
                reader.read_line(&mut line)?;
                line.trim().to_string()
            } else {
                arg
            };
            let raw = base64::engine::general_purpose::STANDARD
                .decode(arg)
                .unwrap_or_default();
            let parts: Vec<String> = raw
                .split(|b| *b == 0)
                .map(|p| String::from_utf8_lossy(p).into_owned())
                .collect();
            auth = Some(format!(
                "{}:{}",
                parts.get(1).cloned().unwrap_or_default(),
                parts.get(2).cloned().unwrap_or_default()
            ));
            say(&mut out, "235 2.7.0 ok")?;
        } else if upper.starts_with("AUTH LOGIN") {
            let mut got = Vec::new();
            for prompt in ["334 VXNlcm5hbWU6", "334 UGFzc3dvcmQ6"] {
                say(&mut out, prompt)?;
                line.clear();
                reader.read_line(&mut line)?;
                let v = base64::engine::general_purpose::STANDARD
                    .decode(line.trim())
                    .unwrap_or_default();
                got.push(String::from_utf8_lossy(&v).into_owned());
            }
            auth = Some(got.join(":"));
            say(&mut out, "235 2.7.0 ok")?;
        } else if upper.starts_with("MAIL FROM:") {
            let fault = {
                let mut s = state.lock().expect("lock");
                s.attempts += 1;
                s.faults.pop_front()
            };
            match fault {
                Some(reply) => say(&mut out, &reply)?,
                None => {
                    from = addr_of(&cmd[10..]);
                    to.clear();
                    say(&mut out, "250 2.1.0 ok")?;
                }
            }
        } else if upper.starts_with("RCPT TO:") {
            let addr = addr_of(&cmd[8..]);
            if state
                .lock()
                .expect("lock")
                .refused
                .contains(&addr.to_ascii_lowercase())
            {
                say(&mut out, "550 5.1.1 no such user")?;
            } else {
                to.push(addr);
                say(&mut out, "250 2.1.5 ok")?;
            }
        } else if upper == "DATA" {
            say(&mut out, "354 go ahead")?;
            let mut raw = String::new();
            loop {
                line.clear();
                if reader.read_line(&mut line)? == 0 {
                    return Ok(());
                }
                if line == ".\r\n" || line == ".\n" {
                    break;
                }
                let l = line.strip_prefix('.').unwrap_or(&line);
                raw.push_str(l);
            }
            state.lock().expect("lock").mails.push(Mail {
                from: from.clone(),
                to: std::mem::take(&mut to),
                raw,
                auth: auth.clone(),
            });
            say(&mut out, "250 2.0.0 queued")?;
        } else if upper.starts_with("RSET") {
            to.clear();
            say(&mut out, "250 ok")?;
        } else if upper.starts_with("NOOP") {
            say(&mut out, "250 ok")?;
        } else if upper.starts_with("QUIT") {
            say(&mut out, "221 bye")?;
            return Ok(());
        } else {
            say(&mut out, "502 5.5.2 not implemented")?;
        }
    }
}

fn addr_of(arg: &str) -> String {
    let a = arg.trim();
    let a = a.split_whitespace().next().unwrap_or(a);
    a.trim_start_matches('<').trim_end_matches('>').to_string()
}
