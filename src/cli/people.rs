//! `strands people add|list|show|edit|remove|import`: the people directory
//! (`crate::hub::people`), on the store or, when a server holds it (or
//! `STRANDS_SERVER` is set), through `/api/v1/people` (admins). `import`
//! reads the file here and sends its rows with their lines, so a bad row
//! is named `FILE:LINE` either way; nothing is half-imported.
//! `delegate|delegations|undelegate` set who stands in for whom
//! (`crate::hub::people::delegations`; through a server:
//! `/api/v1/people/{name}/delegations`, a person their own, admins
//! anyone's).

use reqwest::Method;
use serde_json::json;

use std::path::PathBuf;

use clap::{Args, Subcommand};
use serde_json::Value;

use super::Ctx;
use crate::error::{exit, Error, Result};
use crate::hub::people::delegations::{self, DelegateRequest, DelegationView};
use crate::hub::people::PersonPatch;
use crate::model::person::{Person, PersonError};

/// The identity flags of `add` and `edit`.
#[derive(Args, Debug, Default)]
pub struct PersonFlags {
    /// Slack user id (U… or W…).
    #[arg(long, value_name = "ID")]
    slack: Option<String>,
    /// Teams: the AAD (Entra) object id (`teams:` optional).
    #[arg(long, value_name = "AAD")]
    teams: Option<String>,
    #[arg(long, value_name = "ADDRESS")]
    email: Option<String>,
    /// An API token name this person uses (repeat for several).
    #[arg(long = "token", value_name = "NAME")]
    tokens: Vec<String>,
    /// Unix user (the CLI's identity).
    #[arg(long, value_name = "USER")]
    unix: Option<String>,
    /// The identity provider's name for them (the web inbox's OpenID
    /// Connect sign-in: the value of STRANDS_OIDC_NAME_CLAIM).
    #[arg(long, value_name = "NAME")]
    oidc: Option<String>,
    /// The RabbitMQ user their queue messages carry as `user_id`.
    #[arg(long, value_name = "USER")]
    amqp: Option<String>,
    /// A group (`approvers: [group:NAME]`; repeat for several).
    #[arg(long = "group", value_name = "NAME")]
    groups: Vec<String>,
}

#[derive(Subcommand, Debug)]
pub enum PeopleCommand {
    /// Add a person: `strands people add alice --slack U04ALICE --email alice@corp.example --group finance`.
    Add {
        name: String,
        #[command(flatten)]
        flags: PersonFlags,
        #[arg(long)]
        json: bool,
    },
    /// Every person, by name.
    List {
        #[arg(long)]
        json: bool,
    },
    /// One person.
    Show {
        name: String,
        #[arg(long)]
        json: bool,
    },
    /// Change a person: each flag given replaces that field (`--slack ''` clears it;
    /// `--token`/`--group` replace the list).
    Edit {
        name: String,
        #[command(flatten)]
        flags: PersonFlags,
        /// Remove every token name.
        #[arg(long, conflicts_with = "tokens")]
        no_tokens: bool,
        /// Remove every group.
        #[arg(long, conflicts_with = "groups")]
        no_groups: bool,
        #[arg(long)]
        json: bool,
    },
    /// Remove a person (their channel identities are judged alone again).
    Remove { name: String },
    /// Add or replace the people of a YAML list or a CSV table; all or nothing,
    /// the same file twice changes nothing.
    Import {
        file: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// While PERSON is away, TO answers their gates and gets their messages:
    /// `strands people delegate alice --to bob --from 2026-12-20 --until 2027-01-03`
    /// (days in UTC, both included).
    Delegate {
        person: String,
        #[arg(long, value_name = "PERSON")]
        to: String,
        #[arg(long, value_name = "YYYY-MM-DD")]
        from: String,
        #[arg(long, value_name = "YYYY-MM-DD")]
        until: String,
        #[arg(long, value_name = "TEXT")]
        reason: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Delegations not over yet (from or to PERSON, when given).
    Delegations {
        person: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// PERSON's passkeys (registered on the web inbox); `--remove ID`
    /// removes one (admins). A removed passkey confirms nothing more, and
    /// stays on record so the approvals it signed can still be verified.
    Passkeys {
        person: String,
        #[arg(long, value_name = "ID")]
        remove: Option<String>,
        /// Also list removed passkeys.
        #[arg(long)]
        all: bool,
        #[arg(long)]
        json: bool,
    },
    /// Remove PERSON's delegations (only the one to `--to`, when given).
    Undelegate {
        person: String,
        #[arg(long, value_name = "PERSON")]
        to: Option<String>,
    },
}

impl PeopleCommand {
    pub(super) fn json(&self) -> bool {
        match self {
            PeopleCommand::Add { json, .. }
            | PeopleCommand::List { json }
            | PeopleCommand::Show { json, .. }
            | PeopleCommand::Edit { json, .. }
            | PeopleCommand::Import { json, .. }
            | PeopleCommand::Delegate { json, .. }
            | PeopleCommand::Delegations { json, .. }
            | PeopleCommand::Passkeys { json, .. } => *json,
            PeopleCommand::Remove { .. } | PeopleCommand::Undelegate { .. } => false,
        }
    }
}

fn person(v: Value) -> Result<Person> {
    serde_json::from_value(v).map_err(|e| {
        Error::Runtime(format!(
            "the server sent a person this CLI cannot read: {e}"
        ))
    })
}

fn show(p: &Person, json: bool) -> Result<()> {
    if json {
        outln!("{}", json!(p))?;
        return Ok(());
    }
    let one = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".into());
    let many = |v: &[String]| {
        if v.is_empty() {
            "-".to_string()
        } else {
            v.join(", ")
        }
    };
    outln!("name:    {}", p.name)?;
    outln!("slack:   {}", one(&p.slack))?;
    outln!("teams:   {}", one(&p.teams))?;
    outln!("email:   {}", one(&p.email))?;
    outln!("tokens:  {}", many(&p.tokens))?;
    outln!("unix:    {}", one(&p.unix))?;
    outln!("oidc:    {}", one(&p.oidc))?;
    outln!("amqp:    {}", one(&p.amqp))?;
    outln!("groups:  {}", many(&p.groups))?;
    for d in &p.delegations {
        outln!("delegates to {d} (UTC)")?;
    }
    Ok(())
}

fn path(name: &str) -> String {
    format!(
        "/people/{}",
        url::form_urlencoded::byte_serialize(name.as_bytes()).collect::<String>()
    )
}

pub(super) async fn people(ctx: &Ctx, cmd: PeopleCommand) -> Result<u8> {
    use super::remote::call;
    match cmd {
        PeopleCommand::Add { name, flags, json } => {
            let p = Person {
                name,
                slack: flags.slack,
                teams: flags.teams,
                email: flags.email,
                tokens: flags.tokens,
                unix: flags.unix,
                oidc: flags.oidc,
                amqp: flags.amqp,
                groups: flags.groups,
                delegations: Vec::new(),
                passkeys: Vec::new(),
            };
            let added = match &ctx.remote {
                Some(r) => person(call(r, Method::POST, "/people", Some(&json!(p))).await?)?,
                None => crate::hub::people::add(&ctx.open().await?, p, &ctx.who, "cli").await?,
            };
            if json {
                show(&added, true)?;
            } else {
                eprintln!("added `{}`", added.name);
            }
        }
        PeopleCommand::List { json } => {
            let all: Vec<Person> = match &ctx.remote {
                Some(r) => {
                    let v = call(r, Method::GET, "/people", None).await?;
                    v["people"]
                        .as_array()
                        .cloned()
                        .unwrap_or_default()
                        .into_iter()
                        .map(person)
                        .collect::<Result<_>>()?
                }
                None => ctx.open().await?.people().await?,
            };
            if json {
                outln!("{}", json!({ "count": all.len(), "people": all }))?;
            } else if all.is_empty() {
                eprintln!(
                    "nobody yet; add someone with `strands people add NAME --slack U… --email …`"
                );
            } else {
                outln!(
                    "{:<16}  {:<12}  {:<28}  {:<12}  {:<20}  TEAMS",
                    "NAME",
                    "SLACK",
                    "EMAIL",
                    "UNIX",
                    "GROUPS"
                )?;
                for p in &all {
                    let d = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".into());
                    outln!(
                        "{:<16}  {:<12}  {:<28}  {:<12}  {:<20}  {}",
                        p.name,
                        d(&p.slack),
                        d(&p.email),
                        d(&p.unix),
                        if p.groups.is_empty() {
                            "-".into()
                        } else {
                            p.groups.join(",")
                        },
                        d(&p.teams)
                    )?;
                }
            }
        }
        PeopleCommand::Show { name, json } => {
            let p = match &ctx.remote {
                Some(r) => person(call(r, Method::GET, &path(&name), None).await?)?,
                None => ctx
                    .open()
                    .await?
                    .people()
                    .await?
                    .into_iter()
                    .find(|p| p.name == name)
                    .ok_or(crate::model::person::PersonError::Unknown(name))?,
            };
            show(&p, json)?;
        }
        PeopleCommand::Edit {
            name,
            flags,
            no_tokens,
            no_groups,
            json,
        } => {
            let patch = PersonPatch {
                slack: flags.slack,
                teams: flags.teams,
                email: flags.email,
                unix: flags.unix,
                oidc: flags.oidc,
                amqp: flags.amqp,
                tokens: (no_tokens || !flags.tokens.is_empty()).then_some(flags.tokens),
                groups: (no_groups || !flags.groups.is_empty()).then_some(flags.groups),
            };
            let p = match &ctx.remote {
                Some(r) => {
                    person(call(r, Method::PATCH, &path(&name), Some(&json!(patch))).await?)?
                }
                None => {
                    crate::hub::people::edit(&ctx.open().await?, &name, &patch, &ctx.who, "cli")
                        .await?
                }
            };
            if json {
                show(&p, true)?;
            } else {
                eprintln!("changed `{}`", p.name);
            }
        }
        PeopleCommand::Remove { name } => {
            match &ctx.remote {
                Some(r) => {
                    call(r, Method::DELETE, &path(&name), None).await?;
                }
                None => {
                    crate::hub::people::remove(&ctx.open().await?, &name, &ctx.who, "cli").await?
                }
            }
            eprintln!("removed `{name}`");
        }
        PeopleCommand::Import { file, json } => {
            let source = file.display().to_string();
            let text = std::fs::read_to_string(&file)
                .map_err(|e| Error::io(format!("reading {source}"), e))?;
            let rows = crate::hub::people::parse(&source, &text)?;
            let done = match &ctx.remote {
                Some(r) => {
                    let body = json!({ "source": source, "rows": rows });
                    serde_json::from_value(
                        call(r, Method::POST, "/people/import", Some(&body)).await?,
                    )
                    .map_err(|e| {
                        Error::Runtime(format!("the server's answer is unreadable: {e}"))
                    })?
                }
                None => {
                    crate::hub::people::import(&ctx.open().await?, &source, rows, &ctx.who, "cli")
                        .await?
                }
            };
            if json {
                outln!("{}", json!(done))?;
            } else {
                eprintln!(
                    "imported {source}: {} added, {} changed, {} unchanged",
                    done.added, done.changed, done.unchanged
                );
            }
        }
        PeopleCommand::Delegate {
            person,
            to,
            from,
            until,
            reason,
            json,
        } => {
            let req = DelegateRequest {
                to,
                from,
                until,
                reason,
            };
            let view: DelegationView = match &ctx.remote {
                Some(r) => from_server(
                    call(
                        r,
                        Method::POST,
                        &format!("{}/delegations", path(&person)),
                        Some(&json!(req)),
                    )
                    .await?,
                )?,
                None => {
                    let store = ctx.open().await?;
                    let by = (ctx.who.as_str(), true, "cli");
                    delegations::delegate(&store, &person, &req, by, ctx.now()).await?
                }
            };
            if json {
                outln!("{}", json!(view))?;
            } else {
                eprintln!(
                    "{} answers for {} from {} until {} (UTC, both days included)",
                    view.to, view.person, view.from, view.until
                );
            }
        }
        PeopleCommand::Passkeys {
            person: name,
            remove,
            all,
            json,
        } => {
            if let Some(id) = &remove {
                match &ctx.remote {
                    Some(r) => {
                        let id_part: String =
                            url::form_urlencoded::byte_serialize(id.as_bytes()).collect();
                        let at = format!("{}/passkeys/{id_part}", path(&name));
                        call(r, Method::DELETE, &at, None).await?;
                    }
                    None => {
                        crate::hub::people::passkeys::remove(
                            &ctx.open().await?,
                            &name,
                            id,
                            &ctx.who,
                            "cli",
                        )
                        .await?
                    }
                }
                eprintln!("removed passkey {id} of `{name}`");
                return Ok(exit::OK);
            }
            let p = match &ctx.remote {
                Some(r) => person(call(r, Method::GET, &path(&name), None).await?)?,
                None => ctx
                    .open()
                    .await?
                    .directory()
                    .await?
                    .get(&name)
                    .cloned()
                    .ok_or_else(|| Error::from(PersonError::Unknown(name.clone())))?,
            };
            let keys: Vec<_> = p.passkeys.iter().filter(|k| all || k.current()).collect();
            if json {
                let list: Vec<Value> = keys
                    .iter()
                    .map(|k| json!({"id": k.id, "label": k.label, "added_at": k.added_at, "removed_at": k.removed_at}))
                    .collect();
                outln!("{}", json!({ "person": p.name, "passkeys": list }))?;
            } else if keys.is_empty() {
                eprintln!(
                    "`{}` has no passkeys (registered on the web inbox's Passkeys page)",
                    p.name
                );
            } else {
                for k in keys {
                    let removed = k
                        .removed_at
                        .map(|t| format!("  removed {}", t.format("%Y-%m-%d %H:%M")))
                        .unwrap_or_default();
                    outln!(
                        "{}  {}  added {}{removed}",
                        k.id,
                        k.label,
                        k.added_at.format("%Y-%m-%d %H:%M")
                    )?;
                }
            }
        }
        PeopleCommand::Delegations { person, json } => {
            let list: Vec<DelegationView> = match &ctx.remote {
                Some(r) => {
                    let at = match &person {
                        Some(p) => format!("{}/delegations", path(p)),
                        None => "/people/delegations".to_string(),
                    };
                    let v = call(r, Method::GET, &at, None).await?;
                    from_server(v["delegations"].clone())?
                }
                None => {
                    let people = ctx.open().await?.directory().await?;
                    delegations::list(&people, person.as_deref(), ctx.now())?
                }
            };
            if json {
                outln!("{}", json!({ "count": list.len(), "delegations": list }))?;
            } else if list.is_empty() {
                eprintln!("no delegations; set one with `strands people delegate NAME --to NAME --from DAY --until DAY`");
            } else {
                outln!(
                    "{:<16}  {:<16}  {:<10}  {:<10}  {:<6}  REASON",
                    "PERSON",
                    "TO",
                    "FROM",
                    "UNTIL",
                    "NOW"
                )?;
                for d in &list {
                    outln!(
                        "{:<16}  {:<16}  {:<10}  {:<10}  {:<6}  {}",
                        d.person,
                        d.to,
                        d.from,
                        d.until,
                        if d.active { "yes" } else { "-" },
                        d.reason.as_deref().unwrap_or("-")
                    )?;
                }
            }
        }
        PeopleCommand::Undelegate { person, to } => {
            match &ctx.remote {
                Some(r) => {
                    let mut at = format!("{}/delegations", path(&person));
                    if let Some(t) = &to {
                        at.push_str("?to=");
                        at.extend(url::form_urlencoded::byte_serialize(t.as_bytes()));
                    }
                    call(r, Method::DELETE, &at, None).await?;
                }
                None => {
                    let store = ctx.open().await?;
                    let by = (ctx.who.as_str(), true, "cli");
                    delegations::undelegate(&store, &person, to.as_deref(), by).await?;
                }
            }
            match to {
                Some(t) => eprintln!("{t} no longer answers for {person}"),
                None => eprintln!("nobody answers for {person} any more"),
            }
        }
    }
    Ok(exit::OK)
}

fn from_server<T: serde::de::DeserializeOwned>(v: Value) -> Result<T> {
    serde_json::from_value(v).map_err(|e| {
        Error::Runtime(format!(
            "the server sent a delegation this CLI cannot read: {e}"
        ))
    })
}
