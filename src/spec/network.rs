//! `tools.network.allow` entries: hosts, `*.domain` wildcards, IP
//! addresses and CIDRs, as the spec and `STRANDS_NETWORK_ALLOW` write
//! them. Parsing only; what they allow is `crate::tools::egress`.

use std::fmt;
use std::net::IpAddr;

use ipnet::IpNet;

/// One allow-list entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rule {
    /// An exact host name, lowercase, without a trailing dot.
    Host(String),
    /// `*.example.com`: any name under `example.com` (not the apex).
    Domain(String),
    /// An address or a network.
    Net(IpNet),
}

impl Rule {
    /// Parses `api.internal`, `*.corp.example`, `10.0.0.0/8`, `192.168.1.5`,
    /// `::1` or `[fd00::1]`. The error says what the entry should look like.
    pub fn parse(entry: &str) -> Result<Rule, String> {
        let e = entry.trim();
        let bad = || {
            format!(
                "`{e}` is not a host, a `*.domain` wildcard, an IP address or a CIDR (no scheme, port or path)"
            )
        };
        if e.is_empty() {
            return Err("an empty entry allows nothing".into());
        }
        let unbracketed = e
            .strip_prefix('[')
            .and_then(|s| s.strip_suffix(']'))
            .unwrap_or(e);
        if let Ok(ip) = unbracketed.parse::<IpAddr>() {
            return Ok(Rule::Net(IpNet::from(canonical(ip))));
        }
        if let Ok(net) = e.parse::<IpNet>() {
            return Ok(Rule::Net(net.trunc()));
        }
        if e.contains("://") || e.contains('/') || e.contains(':') || e.contains('@') {
            return Err(bad());
        }
        let lower = e.trim_end_matches('.').to_ascii_lowercase();
        let (wild, name) = match lower.strip_prefix("*.") {
            Some(rest) => (true, rest.to_string()),
            None => (false, lower),
        };
        let label_ok = |l: &str| {
            !l.is_empty()
                && l.len() <= 63
                && l.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        };
        if name.is_empty() || !name.split('.').all(label_ok) {
            return Err(bad());
        }
        Ok(if wild {
            Rule::Domain(name)
        } else {
            Rule::Host(name)
        })
    }

    pub fn matches_name(&self, host: &str) -> bool {
        match self {
            Rule::Host(h) => h == host,
            Rule::Domain(d) => host
                .strip_suffix(d.as_str())
                .is_some_and(|rest| rest.ends_with('.') && rest.len() > 1),
            Rule::Net(_) => false,
        }
    }

    pub fn matches_ip(&self, ip: IpAddr) -> bool {
        match self {
            Rule::Net(n) => n.contains(&ip),
            _ => false,
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rule::Host(h) => f.write_str(h),
            Rule::Domain(d) => write!(f, "*.{d}"),
            Rule::Net(n) => write!(f, "{n}"),
        }
    }
}

/// An IPv6 address that embeds an IPv4 one (mapped `::ffff:a.b.c.d`) as
/// that IPv4 address; others unchanged.
pub fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(a) => match a.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => ip,
        },
        v4 => v4,
    }
}
