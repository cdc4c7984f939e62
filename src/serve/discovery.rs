//! How the CLI finds a running server on its store. sled lets one process
//! hold a store; while `strands serve` holds it, the CLI on the same
//! machine would otherwise exit 12. So serve leaves `serve.json` in the
//! store directory — its address and a fresh local admin token, readable
//! by the owner only — and the CLI, finding the store held, talks to the
//! server with it instead. The token may act for the person the CLI names
//! (`X-Strands-As`), as the CLI does offline with `--as`: whoever can read
//! the file could open the store itself. It is renewed at every start and
//! revoked at shutdown.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::hub::Hub;
use crate::model::token::Role;

/// The file's name in the store directory.
pub const FILE: &str = "serve.json";
/// The local token's name (its identity when it names nobody else).
pub const LOCAL_TOKEN: &str = "serve-local";

/// What serve leaves for the CLI.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Left {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    /// The local admin token (secret: the file is the owner's only).
    pub token: String,
    pub pid: u32,
}

fn path(store: &Path) -> PathBuf {
    store.join(FILE)
}

/// Where a client on this machine reaches `addr`.
fn local_url(addr: SocketAddr) -> String {
    let ip = match addr.ip() {
        std::net::IpAddr::V4(v4) if v4.is_unspecified() => {
            std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST)
        }
        std::net::IpAddr::V6(v6) if v6.is_unspecified() => {
            std::net::IpAddr::V6(std::net::Ipv6Addr::LOCALHOST)
        }
        ip => ip,
    };
    format!("http://{}", SocketAddr::new(ip, addr.port()))
}

/// Makes a new local token (revoking the last one) and writes the file,
/// owner-only, replacing any earlier one atomically.
pub async fn leave(hub: &Hub, store: &Path, addr: SocketAddr) -> Result<()> {
    crate::hub::tokens::revoke(&hub.store, LOCAL_TOKEN, "strands serve", "serve").await?;
    let new = match crate::hub::tokens::create(
        &hub.store,
        LOCAL_TOKEN,
        Role::Admin,
        None,
        true,
        "strands serve",
        "serve",
    )
    .await?
    {
        Ok(t) => t,
        Err(e) => return Err(Error::Internal(format!("the local token: {e}"))),
    };
    let left = Left {
        url: local_url(addr),
        token: new.token,
        pid: std::process::id(),
    };
    let text = serde_json::to_vec_pretty(&left)
        .map_err(|e| Error::Internal(format!("encode {FILE}: {e}")))?;
    let tmp = store.join(format!(".{FILE}.{}", std::process::id()));
    write_private(&tmp, &text)?;
    std::fs::rename(&tmp, path(store))
        .map_err(|e| Error::io(format!("cannot write {}", path(store).display()), e))
}

/// Removes the file and revokes its token (at shutdown).
pub async fn withdraw(hub: &Hub, store: &Path) {
    let _ = std::fs::remove_file(path(store));
    if let Err(e) =
        crate::hub::tokens::revoke(&hub.store, LOCAL_TOKEN, "strands serve", "serve").await
    {
        tracing::warn!("could not revoke the local token: {e}");
    }
}

fn write_private(p: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut f = options
        .open(p)
        .map_err(|e| Error::io(format!("cannot write {}", p.display()), e))?;
    f.write_all(bytes)
        .and_then(|()| f.sync_all())
        .map_err(|e| Error::io(format!("cannot write {}", p.display()), e))
}

/// What a running server left in `store`, if the file is there and private
/// to its owner (anything else is ignored; a private file this process can
/// read is its user's).
pub fn find(store: &Path) -> Option<Left> {
    let p = path(store);
    let meta = std::fs::metadata(&p).ok()?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if meta.mode() & 0o077 != 0 {
            tracing::warn!("ignoring {}: not private to this user", p.display());
            return None;
        }
    }
    #[cfg(not(unix))]
    let _ = meta;
    serde_json::from_slice(&std::fs::read(&p).ok()?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_is_private_and_names_a_local_address() {
        let dir = tempfile::tempdir().expect("tempdir");
        let left = Left {
            url: local_url("0.0.0.0:4000".parse().expect("addr")),
            token: "stk_a_b".into(),
            pid: 1,
        };
        assert_eq!(left.url, "http://127.0.0.1:4000");
        write_private(&path(dir.path()), &serde_json::to_vec(&left).expect("json")).expect("write");
        assert_eq!(find(dir.path()), Some(left));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(path(dir.path()), std::fs::Permissions::from_mode(0o644))
                .expect("chmod");
            assert_eq!(find(dir.path()), None, "readable by others: ignored");
        }
    }
}
