//! `strands answer ID… --approve | --reject [--reason R]`: one decision for
//! several paused runs ([`crate::hub::batch`]), each gate answered and
//! audited on its own; a gate that needs more than one answer (a quorum
//! still to gather, a passkey, a form) is left out, saying why. On the
//! store, the answered runs go on in this process, one after another;
//! through a server (`POST /api/v1/answers`), the server drives them.
//!
//! Exit 0 when every gate was answered; 17 (session) when any was left
//! out or refused — each line says which and why.

use clap::Args;

use super::resume::{Answering, To};
use crate::error::{exit, Error, Result};
use crate::hub::batch::{self, Fate, Item, Outcome};
use crate::hub::door::{Door, DoorAnswer};
use crate::model::Decision;

#[derive(Args, Debug)]
#[command(group(clap::ArgGroup::new("decision").args(["approve", "reject"]).required(true)))]
pub struct AnswerArgs {
    /// Session ids (or unique prefixes), one gate each.
    #[arg(required = true, num_args = 1..)]
    pub ids: Vec<String>,
    /// Which open gate of each, when several are open: its handle `id#n`
    /// or its id.
    #[arg(long)]
    pub gate: Option<String>,
    #[arg(long)]
    pub approve: bool,
    #[arg(long)]
    pub reject: bool,
    /// Why (with --reject): recorded with every rejection.
    #[arg(long, requires = "reject")]
    pub reason: Option<String>,
    #[arg(long)]
    pub json: bool,
}

pub(super) async fn answer(door: &Answering<'_>, args: AnswerArgs) -> Result<u8> {
    if args.ids.len() > crate::api::batch::MAX {
        return Err(Error::Usage(format!(
            "{} sessions; one batch takes up to {}",
            args.ids.len(),
            crate::api::batch::MAX
        )));
    }
    let decision = if args.approve {
        Decision::Approve
    } else {
        Decision::Reject {
            reason: args.reason.clone(),
        }
    };
    let items: Vec<Item> = args
        .ids
        .iter()
        .map(|id| Item {
            session: id.clone(),
            gate: args.gate.clone(),
        })
        .collect();
    let outcomes = match &door.to {
        To::Server(remote) => {
            super::remote::answer_many(remote, &decision, args.reason.as_deref(), &items).await?
        }
        To::Here(hub) => {
            let how = DoorAnswer::new("", &door.who, Door::Cli, decision);
            let mut outcomes = batch::decide(hub, &how, &items, false).await?;
            // The runs answered go on here, each to its next stop.
            for o in outcomes.iter_mut().filter(|o| o.recorded()) {
                let mut channel = super::asking::cli_channel(false, false, &door.who, &hub.clock);
                match hub.continue_here(&o.session, &mut channel, false).await {
                    Ok(s) => o.message = format!("{}; the run is {}", o.message, s.status),
                    Err(e) => o.message = format!("{}; continuing it failed: {e}", o.message),
                }
            }
            outcomes
        }
    };
    print(&outcomes, args.json)?;
    Ok(if outcomes.iter().all(Outcome::recorded) {
        exit::OK
    } else {
        exit::SESSION
    })
}

fn print(outcomes: &[Outcome], json: bool) -> Result<()> {
    let count = |f: Fate| outcomes.iter().filter(|o| o.result == f).count();
    if json {
        outln!(
            "{}",
            serde_json::json!({
                "outcomes": outcomes,
                "recorded": count(Fate::Recorded),
                "left_out": count(Fate::LeftOut),
                "refused": count(Fate::Refused),
            })
        )?;
        return Ok(());
    }
    for o in outcomes {
        let mark = match o.result {
            Fate::Recorded => "ok",
            Fate::LeftOut => "left out",
            Fate::Refused => "refused",
        };
        outln!(
            "{} {}: {mark}: {}",
            o.session,
            o.gate.as_deref().unwrap_or("-"),
            o.message
        )?;
    }
    outln!(
        "{} answered, {} left out, {} refused",
        count(Fate::Recorded),
        count(Fate::LeftOut),
        count(Fate::Refused)
    )?;
    Ok(())
}
