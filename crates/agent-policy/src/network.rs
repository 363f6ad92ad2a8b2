//! The network allowlist's rules: `allow_network = ["host:port", ...]`.
//!
//! A rule is `host:port` (an exact host name, case-insensitive, a trailing
//! dot ignored) or `*.suffix:port` (every name under `suffix`, at any depth,
//! not `suffix` itself), always with one exact port. An IP literal
//! (`10.0.0.5:8080`, `[fd00::1]:443`) is a rule of its own and matches only
//! a client that asked for that address; a wildcard never matches an
//! address. Rules are matched against the host name the command asked the
//! proxy for, and the agent resolves that name itself: a rule is never
//! matched against a resolved address, so DNS cannot widen a rule, though
//! whoever controls a listed name's DNS decides where it points.

use std::net::IpAddr;

/// One parsed rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostRule {
    /// Lower-cased; for a wildcard, the suffix without `*.`.
    host: String,
    wildcard: bool,
    port: u16,
}

impl HostRule {
    /// Parses `host:port` or `*.suffix:port`; the error says what is wrong.
    pub fn parse(text: &str) -> Result<Self, String> {
        let bad = |why: &str| {
            format!("{text:?} is not a network rule: {why} (host:port or *.domain:port)")
        };
        let (host, port) = if let Some(rest) = text.strip_prefix('[') {
            let (host, after) = rest.split_once(']').ok_or_else(|| bad("an unclosed ["))?;
            let port = after.strip_prefix(':').ok_or_else(|| bad("no port"))?;
            host.parse::<std::net::Ipv6Addr>()
                .map_err(|_| bad("brackets hold an IPv6 address"))?;
            (host, port)
        } else {
            text.rsplit_once(':').ok_or_else(|| bad("no port"))?
        };
        let port: u16 = port
            .parse()
            .ok()
            .filter(|p| *p != 0)
            .ok_or_else(|| bad("the port is a number from 1 to 65535"))?;
        let (wildcard, name) = match host.strip_prefix("*.") {
            Some(rest) => (true, rest),
            None => (false, host),
        };
        let name = normal(name);
        if name.parse::<IpAddr>().is_ok() {
            if wildcard {
                return Err(bad("a wildcard matches names, not addresses"));
            }
            return Ok(Self {
                host: canonical_ip(&name),
                wildcard,
                port,
            });
        }
        let label_ok = |l: &str| {
            !l.is_empty()
                && l.len() <= 63
                && l.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        };
        if name.is_empty() || !name.split('.').all(label_ok) {
            return Err(bad("a host name is letters, digits, '-' and dots"));
        }
        if numeric_tail(&name) {
            return Err(bad(
                "an address is written as an IP literal, without a wildcard",
            ));
        }
        Ok(Self {
            host: name,
            wildcard,
            port,
        })
    }

    /// Whether a connection to `host` (as the client named it) and `port`
    /// is allowed by this rule.
    pub fn matches(&self, host: &str, port: u16) -> bool {
        if port != self.port {
            return false;
        }
        let host = normal(host);
        if host.parse::<IpAddr>().is_ok() {
            return !self.wildcard && canonical_ip(&host) == self.host;
        }
        // `127.1` or `1.0x2` is no name: the resolver would read an address.
        if numeric_tail(&host) {
            return false;
        }
        if self.wildcard {
            host.strip_suffix(self.host.as_str())
                .is_some_and(|head| head.len() > 1 && head.ends_with('.'))
        } else {
            host == self.host
        }
    }

    /// Whether everything this rule allows, `other` allows too.
    fn within(&self, other: &Self) -> bool {
        if self.port != other.port {
            return false;
        }
        match (self.wildcard, other.wildcard) {
            (false, _) => other.matches(&self.host, self.port),
            (true, true) => self.host == other.host || other.matches(&self.host, self.port),
            (true, false) => false,
        }
    }
}

impl std::fmt::Display for HostRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let star = if self.wildcard { "*." } else { "" };
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{star}{}:{}", self.host, self.port)
        }
    }
}

/// Whether a name's last label is a number (decimal, or hex as `0x..`),
/// which resolvers read as an address, as no top-level domain is one.
fn numeric_tail(name: &str) -> bool {
    let last = name.rsplit('.').next().unwrap_or_default();
    let hex = last
        .strip_prefix("0x")
        .is_some_and(|h| h.chars().all(|c| c.is_ascii_hexdigit()));
    hex || (!last.is_empty() && last.chars().all(|c| c.is_ascii_digit()))
}

fn normal(host: &str) -> String {
    host.trim_end_matches('.').to_ascii_lowercase()
}

/// One spelling per address (`::0:1` and `::1` alike).
fn canonical_ip(host: &str) -> String {
    host.parse::<IpAddr>()
        .map_or_else(|_| host.to_string(), |ip| ip.to_string())
}

/// Checks every rule of a list (for a policy file), in the form written.
pub fn check(rules: &[String]) -> Result<(), String> {
    rules
        .iter()
        .try_for_each(|r| HostRule::parse(r).map(|_| ()))
}

/// The rule of `rules` that allows `host:port`, as written; None when none
/// does. Rules that do not parse allow nothing.
pub fn allowed_by(rules: &[String], host: &str, port: u16) -> Option<String> {
    rules
        .iter()
        .find(|r| HostRule::parse(r).is_ok_and(|rule| rule.matches(host, port)))
        .cloned()
}

/// What both lists allow: for each pair of rules on one port where one
/// lies within the other, the narrower (the administrator's list bounds a
/// workspace's). Empty when they share nothing.
pub fn intersect(a: &[String], b: &[String]) -> Vec<String> {
    let parse = |list: &[String]| -> Vec<HostRule> {
        list.iter()
            .filter_map(|r| HostRule::parse(r).ok())
            .collect()
    };
    let (a, b) = (parse(a), parse(b));
    let mut out: Vec<String> = Vec::new();
    for x in &a {
        for y in &b {
            let narrower = if x.within(y) {
                x
            } else if y.within(x) {
                y
            } else {
                continue;
            };
            let text = narrower.to_string();
            if !out.contains(&text) {
                out.push(text);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(s: &str) -> HostRule {
        HostRule::parse(s).unwrap()
    }

    #[test]
    fn exact_rules_match_one_host_and_one_port() {
        let r = rule("PyPI.corp.example:443");
        assert!(r.matches("pypi.corp.example", 443));
        assert!(r.matches("PYPI.Corp.Example.", 443));
        assert!(!r.matches("pypi.corp.example", 80));
        assert!(!r.matches("evil.pypi.corp.example", 443));
        assert!(!r.matches("pypi.corp.example.evil", 443));
        assert!(!r.matches("xpypi.corp.example", 443));
    }

    #[test]
    fn wildcards_match_names_below_the_suffix_only() {
        let r = rule("*.internal:8080");
        assert!(r.matches("a.internal", 8080));
        assert!(r.matches("a.b.internal", 8080));
        assert!(!r.matches("internal", 8080));
        assert!(!r.matches("evilinternal", 8080));
        assert!(!r.matches("a.internal.evil", 8080));
        assert!(!r.matches("a.internal", 8081));
        assert!(!r.matches(".internal", 8080));
    }

    #[test]
    fn ip_literals_match_only_the_same_address_and_never_a_wildcard() {
        let r = rule("10.0.0.5:8080");
        assert!(r.matches("10.0.0.5", 8080));
        assert!(!r.matches("10.0.0.50", 8080));
        let v6 = rule("[FD00::1]:443");
        assert!(v6.matches("fd00:0::1", 443));
        assert_eq!(v6.to_string(), "[fd00::1]:443");
        assert!(!rule("*.example:443").matches("1.2.3.4", 443));
        assert!(HostRule::parse("*.10.0.0.5:80").is_err());
        // Spellings a resolver reads as addresses are neither rules nor names.
        assert!(HostRule::parse("*.0.2:80").is_err());
        assert!(HostRule::parse("127.000.000.002:80").is_err());
        assert!(numeric_tail("a.0x7f") && numeric_tail("127.1") && !numeric_tail("a.b2"));
    }

    #[test]
    fn malformed_rules_are_errors() {
        for bad in [
            "example.com",
            "example.com:0",
            "example.com:70000",
            "example.com:http",
            "*:443",
            "*.:443",
            "exa mple.com:443",
            "a..b:443",
            "http://example.com:443",
            "[::1:443",
            "[example.com]:443",
            ":443",
        ] {
            assert!(HostRule::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_first_matching_rule_is_named() {
        let rules = vec!["a.example:443".to_string(), "*.example:443".to_string()];
        assert_eq!(
            allowed_by(&rules, "b.example", 443).as_deref(),
            Some("*.example:443")
        );
        assert_eq!(
            allowed_by(&rules, "a.example", 443).as_deref(),
            Some("a.example:443")
        );
        assert_eq!(allowed_by(&rules, "example", 443), None);
    }

    #[test]
    fn an_intersection_keeps_the_narrower_of_overlapping_rules() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let managed = s(&["*.corp.example:443", "files.internal:8080"]);
        let workspace = s(&[
            "pypi.corp.example:443",
            "*.internal:8080",
            "evil.example:443",
            "*.example:443",
            "pypi.corp.example:80",
        ]);
        assert_eq!(
            intersect(&workspace, &managed),
            s(&[
                "pypi.corp.example:443",
                "files.internal:8080",
                "*.corp.example:443"
            ])
        );
        assert!(intersect(&s(&["a.b:1"]), &s(&["c.d:1"])).is_empty());
    }
}
