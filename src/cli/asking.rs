//! The channel a CLI process asks its gates in — a terminal
//! (`--interactive`), `--auto-approve`, or nobody (the run pauses) — and
//! what the CLI says when nobody could be asked or an artifact is in the
//! way. `run` and `resume` both drive runs here.

use std::io::IsTerminal;

use super::render::Words;
use crate::channel::terminal::Terminal;
use crate::channel::{AutoApprove, Detached, HumanChannel, WithProgress};
use crate::error::{Error, Result};
use crate::model::{Session, Status};

/// The channel that answers gates for one CLI invocation.
pub(super) enum CliChannel {
    Detached(Detached),
    Auto(AutoApprove),
    Terminal(Terminal<std::io::BufReader<std::io::Stdin>, std::io::Stderr>),
}

impl HumanChannel for CliChannel {
    async fn ask(&mut self, session: &Session) -> Result<crate::channel::Reply> {
        match self {
            CliChannel::Detached(c) => c.ask(session).await,
            CliChannel::Auto(c) => c.ask(session).await,
            CliChannel::Terminal(c) => c.ask(session).await,
        }
    }
}

pub(crate) fn cli_channel(
    interactive: bool,
    auto_approve: bool,
    who: &str,
    clock: &crate::clock::SharedClock,
) -> WithProgress<CliChannel> {
    let inner = if auto_approve {
        CliChannel::Auto(AutoApprove {
            by: who.to_string(),
            clock: std::sync::Arc::clone(clock),
        })
    } else if interactive {
        let stdin = std::io::BufReader::new(std::io::stdin());
        CliChannel::Terminal(Terminal::new(
            stdin,
            std::io::stderr(),
            who.to_string(),
            std::sync::Arc::clone(clock),
        ))
    } else {
        CliChannel::Detached(Detached)
    };
    WithProgress { inner }
}

/// `--interactive` whose input ended with the session still paused, when
/// stdin is not a terminal: nobody could be asked, which is an error, not
/// a deferral (a person at a terminal defers with `d` or Ctrl-D).
pub(super) fn nobody_to_ask(
    words: &Words,
    channel: &WithProgress<CliChannel>,
    s: &Session,
) -> Option<Error> {
    let CliChannel::Terminal(t) = &channel.inner else {
        return None;
    };
    if !t.input_ended() || s.status != Status::Paused || std::io::stdin().is_terminal() {
        return None;
    }
    let gate = s.first_gate().map(|g| g.id.clone()).unwrap_or_default();
    Some(Error::Usage(format!(
        "--interactive cannot ask: stdin is not a terminal and it ended before gate `{gate}` was answered. Session {} stays paused; answer it with `{}` (or --reject --reason R, --modify --feedback F, --response TEXT), or run it in a terminal",
        s.id,
        words.resume_cmd(&s.id, "--approve")
    )))
}

/// An artifact refusal names the exact command that finishes the run.
pub(super) fn with_resume(words: &Words, e: Error) -> Error {
    match e {
        Error::ArtifactExists {
            path,
            session: Some(id),
            ..
        } => Error::ArtifactExists {
            resume: Some(words.resume_cmd(&id, "--force")),
            path,
            session: Some(id),
        },
        other => other,
    }
}
