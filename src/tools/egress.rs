//! The egress policy: which network addresses a tool may reach.
//!
//! A model reading untrusted text (a web page, an e-mail) can be steered
//! into asking a tool for `http://169.254.169.254/` or the host's own admin
//! port. So every tool that speaks HTTP (`http_request`, the HTTP
//! executors, MCP servers over HTTP) goes through one [`Egress`] that, by
//! default, refuses loopback, private (RFC 1918), shared (CGNAT),
//! link-local (cloud metadata), unique-local, unspecified, multicast and
//! reserved addresses — IPv4 and IPv6, with IPv4 embedded in IPv6 (mapped,
//! compatible, NAT64, 6to4) read as the IPv4 address it is.
//!
//! The check runs on the address actually connected to: the HTTP clients
//! resolve names through [`EgressResolver`], which hands the connector only
//! the addresses that pass, so a name that resolves to a public address when
//! checked and to `127.0.0.1` when connecting (DNS rebinding) cannot slip
//! through; URLs with an IP literal are checked before the request
//! ([`Egress::check_literal`]), and every redirect hop is a new request that
//! goes through both. Tool clients ignore `HTTP(S)_PROXY`: through a proxy
//! the address reached could not be checked.
//!
//! Exceptions are explicit: `tools.network.allow` in the spec and
//! `STRANDS_NETWORK_ALLOW` for the whole installation (hosts, `*.domain`
//! wildcards, IP addresses, CIDRs), plus the hosts the spec itself names as
//! destinations (an HTTP executor's `base_url`, an MCP server's `url`).
//! What this module does not do: decide whether a call needs a human — the
//! approval policy (`engine::tools`) asks for [`Egress::names`].

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use ipnet::IpNet;

pub use crate::spec::network::{canonical, Rule};

/// A refused destination, as the model and the audit trail read it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("blocked: {what}; allow it in tools.network.allow")]
pub struct Blocked {
    /// `127.0.0.1 is a loopback address`, or `localhost resolves to
    /// 127.0.0.1, a loopback address`.
    pub what: String,
}

impl crate::model::ToolResult {
    /// A destination the egress policy refused.
    pub fn blocked(b: Blocked) -> Self {
        let text = b.to_string();
        crate::model::ToolResult {
            content: text.clone(),
            is_error: true,
            blocked: Some(text),
        }
    }
}

/// Which destinations tools may reach.
#[derive(Debug, Clone, Default)]
pub struct Egress {
    /// `tools.network.allow`: reachable, and named by the spec.
    spec: Vec<Rule>,
    /// Hosts the spec names as destinations (executor `base_url`s, MCP
    /// `url`s): reachable, and named.
    destinations: Vec<Rule>,
    /// `STRANDS_NETWORK_ALLOW`: reachable, but not named by the spec.
    installation: Vec<Rule>,
}

impl Egress {
    /// The policy of one spec: its allow-list, the hosts it names as
    /// destinations, and the installation's list.
    pub fn new(spec: Vec<Rule>, destinations: &[String], installation: Vec<Rule>) -> Egress {
        let destinations = destinations
            .iter()
            .filter_map(|u| url::Url::parse(u).ok())
            .filter_map(|u| match u.host()? {
                url::Host::Domain(d) => Rule::parse(d).ok(),
                url::Host::Ipv4(a) => Some(Rule::Net(IpNet::from(IpAddr::V4(a)))),
                url::Host::Ipv6(a) => Some(Rule::Net(IpNet::from(canonical(IpAddr::V6(a))))),
            })
            .collect();
        Egress {
            spec,
            destinations,
            installation,
        }
    }

    fn all(&self) -> impl Iterator<Item = &Rule> {
        self.spec
            .iter()
            .chain(&self.destinations)
            .chain(&self.installation)
    }

    /// Whether the spec names `host` (a name or an IP literal, as in a URL)
    /// as a destination: in `tools.network.allow`, or as an executor's or
    /// MCP server's host. The installation's list does not count: it makes
    /// a host reachable, not chosen by the workflow's author.
    pub fn names(&self, host: &url::Host<&str>) -> bool {
        let named = self.spec.iter().chain(&self.destinations);
        match host {
            url::Host::Domain(d) => {
                let d = normal_name(d);
                named.into_iter().any(|r| r.matches_name(&d))
            }
            url::Host::Ipv4(a) => named.into_iter().any(|r| r.matches_ip(IpAddr::V4(*a))),
            url::Host::Ipv6(a) => {
                let ip = canonical(IpAddr::V6(*a));
                named.into_iter().any(|r| r.matches_ip(ip))
            }
        }
    }

    /// Whether a name is allowed as such (then every address it resolves
    /// to may be reached).
    fn name_allowed(&self, name: &str) -> bool {
        let n = normal_name(name);
        self.all().any(|r| r.matches_name(&n))
    }

    /// Checks one address; `name` is the host name it came from, if any.
    pub fn check(&self, name: Option<&str>, ip: IpAddr) -> Result<(), Blocked> {
        if name.is_some_and(|n| self.name_allowed(n)) {
            return Ok(());
        }
        let ip = canonical(ip);
        if self.all().any(|r| r.matches_ip(ip)) {
            return Ok(());
        }
        match forbidden(ip) {
            None => Ok(()),
            Some(kind) => Err(Blocked {
                what: match name {
                    Some(n) => format!("{n} resolves to {ip}, {kind}"),
                    None => format!("{ip} is {kind}"),
                },
            }),
        }
    }

    /// Checks a URL whose host is an IP literal (those are connected to
    /// without resolving); names are checked by [`EgressResolver`].
    pub fn check_literal(&self, url: &url::Url) -> Result<(), Blocked> {
        match url.host() {
            Some(url::Host::Ipv4(a)) => self.check(None, IpAddr::V4(a)),
            Some(url::Host::Ipv6(a)) => self.check(None, IpAddr::V6(a)),
            _ => Ok(()),
        }
    }
}

fn normal_name(name: &str) -> String {
    name.trim_end_matches('.').to_ascii_lowercase()
}

/// Why `ip` is refused by default, as "a … address"; `None` for public
/// unicast addresses.
pub fn forbidden(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(a) => forbidden_v4(a),
        IpAddr::V6(a) => forbidden_v6(a),
    }
}

fn forbidden_v4(a: Ipv4Addr) -> Option<&'static str> {
    let [o0, o1, o2, _] = a.octets();
    Some(if a.is_loopback() {
        "a loopback address"
    } else if a.is_unspecified() || o0 == 0 {
        "an unspecified (this-network) address"
    } else if a.is_private() {
        "a private (RFC 1918) address"
    } else if o0 == 100 && (o1 & 0xc0) == 64 {
        "a shared (CGNAT, RFC 6598) address"
    } else if a.is_link_local() {
        "a link-local address (where cloud metadata endpoints live)"
    } else if a.is_broadcast() {
        "a broadcast address"
    } else if a.is_multicast() {
        "a multicast address"
    } else if o0 >= 240 {
        "a reserved address"
    } else if o0 == 192 && o1 == 0 && o2 == 0 {
        "an IETF protocol address (192.0.0.0/24)"
    } else if o0 == 198 && (o1 & 0xfe) == 18 {
        "a benchmarking address (198.18.0.0/15)"
    } else {
        return None;
    })
}

fn forbidden_v6(a: Ipv6Addr) -> Option<&'static str> {
    let s = a.segments();
    if a.is_loopback() {
        return Some("a loopback address");
    }
    if a.is_unspecified() {
        return Some("an unspecified address");
    }
    if let Some(v4) = a.to_ipv4_mapped() {
        return forbidden_v4(v4);
    }
    let embedded = |hi: u16, lo: u16| Ipv4Addr::from(((hi as u32) << 16) | lo as u32);
    // IPv4-compatible (::a.b.c.d, deprecated) and NAT64 (64:ff9b::/96).
    if s[..6] == [0, 0, 0, 0, 0, 0] || s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return forbidden_v4(embedded(s[6], s[7])).or(if s[0] == 0 {
            Some("a deprecated IPv4-compatible address")
        } else {
            None
        });
    }
    // 6to4 (2002::/16) carries its IPv4 address in bits 16..48.
    if s[0] == 0x2002 {
        return forbidden_v4(embedded(s[1], s[2]));
    }
    Some(if (s[0] & 0xfe00) == 0xfc00 {
        "a unique-local address"
    } else if (s[0] & 0xffc0) == 0xfe80 {
        "a link-local address"
    } else if (s[0] & 0xffc0) == 0xfec0 {
        "a site-local address"
    } else if (s[0] & 0xff00) == 0xff00 {
        "a multicast address"
    } else if s[0] == 0x2001 && s[1] == 0 {
        "a Teredo tunnel address"
    } else {
        return None;
    })
}

/// The resolver of tool HTTP clients: resolves with the system resolver,
/// keeps only the addresses [`Egress::check`] passes, and fails with
/// [`Blocked`] when none is left.
#[derive(Debug, Clone)]
pub struct EgressResolver {
    pub egress: Arc<Egress>,
}

impl reqwest::dns::Resolve for EgressResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let egress = Arc::clone(&self.egress);
        let host = name.as_str().to_string();
        Box::pin(async move {
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let mut kept = Vec::new();
            let mut refused = None;
            for addr in found {
                match egress.check(Some(&host), addr.ip()) {
                    Ok(()) => kept.push(addr),
                    Err(b) => {
                        refused.get_or_insert(b);
                    }
                }
            }
            match (kept.is_empty(), refused) {
                (true, Some(b)) => Err(Box::new(b) as Box<dyn std::error::Error + Send + Sync>),
                _ => Ok(Box::new(kept.into_iter()) as reqwest::dns::Addrs),
            }
        })
    }
}

/// The [`Blocked`] refusal somewhere in an error's chain of causes (the
/// resolver's refusal reaches the caller wrapped in reqwest's and hyper's
/// errors).
pub fn blocked_in(err: &(dyn std::error::Error + 'static)) -> Option<Blocked> {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = cur {
        if let Some(b) = e.downcast_ref::<Blocked>() {
            return Some(b.clone());
        }
        cur = e.source();
    }
    None
}

/// An HTTP client for tools: rustls with ring, no automatic redirects (the
/// tools follow them hop by hop), no proxy, and names resolved through the
/// egress policy.
pub fn client(egress: &Arc<Egress>) -> Result<reqwest::Client, String> {
    crate::http::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .dns_resolver(Arc::new(EgressResolver {
            egress: Arc::clone(egress),
        }))
        .build()
        .map_err(|e| format!("could not set up the HTTP client: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("an address")
    }

    #[test]
    fn the_default_refuses_internal_addresses_of_both_families() {
        for (addr, kind) in [
            ("127.0.0.1", "loopback"),
            ("127.8.9.1", "loopback"),
            ("10.1.2.3", "private"),
            ("172.16.0.1", "private"),
            ("172.31.255.255", "private"),
            ("192.168.1.1", "private"),
            ("100.64.0.1", "shared"),
            ("100.127.255.254", "shared"),
            ("169.254.169.254", "link-local"),
            ("0.0.0.0", "unspecified"),
            ("0.1.2.3", "unspecified"),
            ("255.255.255.255", "broadcast"),
            ("224.0.0.1", "multicast"),
            ("240.0.0.1", "reserved"),
            ("::1", "loopback"),
            ("::", "unspecified"),
            ("::ffff:127.0.0.1", "loopback"),
            ("::ffff:169.254.169.254", "link-local"),
            ("::ffff:10.0.0.1", "private"),
            ("::127.0.0.1", "loopback"),
            ("64:ff9b::a9fe:a9fe", "link-local"),
            ("2002:7f00:1::", "loopback"),
            ("fd00:ec2::254", "unique-local"),
            ("fc00::1", "unique-local"),
            ("fe80::1", "link-local"),
            ("ff02::1", "multicast"),
            ("2001:0:4136:e378::1", "Teredo"),
        ] {
            let why = forbidden(ip(addr)).unwrap_or_else(|| panic!("{addr} must be refused"));
            assert!(why.contains(kind), "{addr}: {why}");
        }
    }

    #[test]
    fn public_addresses_pass() {
        for addr in [
            "93.184.216.34",
            "1.1.1.1",
            "100.128.0.1",
            "172.32.0.1",
            "2606:4700:4700::1111",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "2002:808:808::",
        ] {
            assert_eq!(forbidden(ip(addr)), None, "{addr}");
        }
    }

    #[test]
    fn allow_rules_parse_and_match() {
        assert_eq!(
            Rule::parse("API.Internal.").unwrap(),
            Rule::Host("api.internal".into())
        );
        assert_eq!(
            Rule::parse("*.corp.example").unwrap(),
            Rule::Domain("corp.example".into())
        );
        assert!(matches!(Rule::parse("10.0.0.0/8").unwrap(), Rule::Net(_)));
        assert!(matches!(Rule::parse("[::1]").unwrap(), Rule::Net(_)));
        assert!(matches!(Rule::parse("10.0.0.7").unwrap(), Rule::Net(_)));
        for bad in ["http://x", "x:80", "a/b", "", "*.", "bad host", "a..b"] {
            assert!(Rule::parse(bad).is_err(), "{bad:?}");
        }
        let d = Rule::parse("*.corp.example").unwrap();
        assert!(d.matches_name("a.corp.example"));
        assert!(d.matches_name("a.b.corp.example"));
        assert!(!d.matches_name("corp.example"));
        assert!(!d.matches_name("evilcorp.example"));
    }

    #[test]
    fn allow_lists_open_exactly_what_they_name() {
        let e = Egress::new(
            vec![
                Rule::parse("10.0.0.0/8").unwrap(),
                Rule::parse("wiki.corp").unwrap(),
            ],
            &["http://127.0.0.1:9/api".into()],
            vec![Rule::parse("*.svc.local").unwrap()],
        );
        assert!(e.check(None, ip("10.9.9.9")).is_ok());
        assert!(e.check(None, ip("::ffff:10.9.9.9")).is_ok());
        assert!(e.check(Some("wiki.corp"), ip("192.168.0.4")).is_ok());
        assert!(e.check(Some("db.svc.local"), ip("192.168.0.5")).is_ok());
        assert!(
            e.check(None, ip("127.0.0.1")).is_ok(),
            "the executor's host"
        );
        let refused = e.check(Some("other.corp"), ip("192.168.0.4")).unwrap_err();
        assert_eq!(
            refused.to_string(),
            "blocked: other.corp resolves to 192.168.0.4, a private (RFC 1918) address; allow it in tools.network.allow"
        );
        assert_eq!(
            e.check(None, ip("169.254.169.254")).unwrap_err().to_string(),
            "blocked: 169.254.169.254 is a link-local address (where cloud metadata endpoints live); allow it in tools.network.allow"
        );
        // Named by the spec: its allow-list and its destinations, not the installation's.
        assert!(e.names(&url::Host::Domain("wiki.corp")));
        assert!(e.names(&url::Host::Ipv4("127.0.0.1".parse().unwrap())));
        assert!(e.names(&url::Host::Ipv4("10.2.3.4".parse().unwrap())));
        assert!(!e.names(&url::Host::Domain("db.svc.local")));
        assert!(!e.names(&url::Host::Domain("example.com")));
    }
}
