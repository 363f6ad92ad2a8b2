//! The agent's secrets: the environment variables commands never get (by
//! name, or a URL value with a password), and their values, kept out of
//! everything the model sees and everything stored (sessions, audit and
//! trace logs).
//!
//! Commands never get the secret variables ([`Policy::scrub_env`]), but a
//! value can still reach text: a file that holds it, a command that found
//! it somewhere. So every observation is redacted, and not only the literal
//! value: its reversed, base64 (at each of the three alignments, standard and
//! URL-safe), base32 (at each of five), hex, rot13 and spelled-out forms
//! too, the encodings a command reaches for first.
//! This is a last line, not the fence: commands cannot read the agent's own
//! environment at all (its `/proc` entry is not theirs to read).

use std::ffi::OsString;

use crate::Policy;

/// Environment variable names (globs, case-insensitive) never passed to
/// commands; `scrub_env` in policy.toml adds more.
pub const SECRET_ENV_PATTERNS: &[&str] = &[
    "*TOKEN*",
    "*SECRET*",
    "*PASS*",
    "*_PWD",
    "*KEY*",
    "*WEBHOOK*",
    "*COOKIE*",
    "*SIGNATURE*",
    "*DSN*",
    "*CREDENTIAL*",
    "*_AUTH",
    "*SESSION_ID*",
    "AWS_*",
    "AZURE_*",
    "GITHUB_*",
    "GH_*",
    "GITLAB_*",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "OPENAI_*",
    "ANTHROPIC_*",
    "HF_*",
    "HUGGING_FACE_*",
    "NPM_CONFIG__AUTH*",
    "DATABASE_URL",
    "SSH_AUTH_SOCK",
];

/// What a redacted value is replaced by.
pub const REDACTED: &str = "[redacted]";

/// Shorter values ("1", "true") would redact ordinary output.
const MIN_SECRET_LEN: usize = 8;

/// Secret values and the forms they are found in.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    /// Longest first, so a value is replaced before any part of it.
    needles: Vec<String>,
}

impl Redactor {
    /// A redactor for `values` (shorter ones are ignored).
    pub fn new<I, S>(values: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut needles = Vec::new();
        for value in values {
            let value = value.as_ref();
            if value.len() < MIN_SECRET_LEN {
                continue;
            }
            needles.push(value.to_string());
            needles.push(value.chars().rev().collect());
            needles.push(hex_lower(value.as_bytes()));
            needles.push(hex_lower(value.as_bytes()).to_ascii_uppercase());
            for alphabet in [STANDARD, URL_SAFE] {
                needles.extend(base64_forms(value.as_bytes(), alphabet));
            }
            needles.extend(base32_forms(value.as_bytes()));
            needles.push(rot13(value));
            // Spelled out: `sed 's/./& /g'`, and `od -c`'s three spaces.
            for gap in [" ", "   "] {
                let spaced: Vec<String> = value.chars().map(String::from).collect();
                needles.push(spaced.join(gap));
            }
        }
        needles.retain(|n| n.len() >= MIN_SECRET_LEN);
        needles.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        needles.dedup();
        Self { needles }
    }

    pub fn is_empty(&self) -> bool {
        self.needles.is_empty()
    }

    /// `text` with every form of every value replaced by [`REDACTED`].
    pub fn redact(&self, text: &str) -> String {
        let mut out = None::<String>;
        for needle in &self.needles {
            let current = out.as_deref().unwrap_or(text);
            if current.contains(needle.as_str()) {
                out = Some(current.replace(needle.as_str(), REDACTED));
            }
        }
        out.unwrap_or_else(|| text.to_string())
    }
}

const STANDARD: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const URL_SAFE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// The base64 characters that `bytes` alone decide, wherever they sit in an
/// encoded stream: one form per alignment (0, 1 or 2 bytes before them).
fn base64_forms(bytes: &[u8], alphabet: &[u8; 64]) -> Vec<String> {
    (0..3)
        .map(|offset| {
            let mut stream = vec![0u8; offset];
            stream.extend_from_slice(bytes);
            let encoded = base64(&stream, alphabet);
            // Characters whose six bits all come from `bytes`.
            let first = (8 * offset).div_ceil(6);
            let last = (8 * (offset + bytes.len())) / 6;
            encoded[first..last.min(encoded.len())].to_string()
        })
        .collect()
}

/// Base64 without padding (a hand-written dozen lines: the redactor needs
/// the unpadded stream at each alignment, not a codec).
fn base64(bytes: &[u8], alphabet: &[u8; 64]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().fold(0u32, |acc, &b| (acc << 8) | b as u32) << (8 * (3 - chunk.len()));
        for i in 0..=chunk.len() {
            out.push(alphabet[(n >> (18 - 6 * i)) as usize & 63] as char);
        }
    }
    out
}

/// Base32 (RFC 4648) of `bytes` wherever they sit in an encoded stream:
/// the characters their bits alone decide, at each of the five alignments.
fn base32_forms(bytes: &[u8]) -> Vec<String> {
    const ALPHABET: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    (0..5)
        .map(|offset| {
            let mut stream = vec![0u8; offset];
            stream.extend_from_slice(bytes);
            let mut encoded = String::new();
            let (mut buffer, mut bits) = (0u64, 0);
            for &b in &stream {
                buffer = (buffer << 8) | b as u64;
                bits += 8;
                while bits >= 5 {
                    bits -= 5;
                    encoded.push(ALPHABET[((buffer >> bits) & 31) as usize] as char);
                }
            }
            let first = (8 * offset).div_ceil(5);
            let last = (8 * (offset + bytes.len())) / 5;
            encoded[first.min(encoded.len())..last.min(encoded.len())].to_string()
        })
        .collect()
}

/// `tr 'A-Za-z' 'N-ZA-Mn-za-m'`.
fn rot13(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            'a'..='z' => (((c as u8 - b'a' + 13) % 26) + b'a') as char,
            'A'..='Z' => (((c as u8 - b'A' + 13) % 26) + b'A') as char,
            _ => c,
        })
        .collect()
}

fn hex_lower(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl Policy {
    /// Whether an environment variable is kept from commands.
    pub fn is_secret_env(&self, name: &str) -> bool {
        let upper = name.to_ascii_uppercase();
        SECRET_ENV_PATTERNS
            .iter()
            .copied()
            .chain(self.scrub_env.iter().map(String::as_str))
            .any(|p| glob_match(&p.to_ascii_uppercase(), &upper))
    }

    /// `vars` without the secrets (by name, or a URL value with a password
    /// such as `redis://:pw@host`): the environment `run_cmd` gives a command.
    pub fn scrub_env<I>(&self, vars: I) -> Vec<(OsString, OsString)>
    where
        I: IntoIterator<Item = (OsString, OsString)>,
    {
        vars.into_iter()
            .filter(|(k, v)| {
                !self.is_secret_env(&k.to_string_lossy())
                    && !has_url_credentials(&v.to_string_lossy())
            })
            .collect()
    }

    /// The values of this process's secret variables (by name, or URLs
    /// with a password), in every form [`Redactor`] knows.
    pub fn redactor(&self) -> Redactor {
        Redactor::new(std::env::vars_os().filter_map(|(k, v)| {
            let v = v.to_string_lossy().into_owned();
            (self.is_secret_env(&k.to_string_lossy()) || has_url_credentials(&v)).then_some(v)
        }))
    }

    /// `text` with the values of this process's secret variables replaced
    /// by `[redacted]`: a command can still print one it found (in a file,
    /// encoded), and what the model sees is logged and stored.
    pub fn redact(&self, text: &str) -> String {
        self.redactor().redact(text)
    }

    /// This process's environment as a command gets it: only the variables
    /// of [`ENV_PASS`] and policy.toml's `env_pass`, and of those none that
    /// holds a secret. A token under a name no pattern knows stays behind.
    pub fn command_env(&self) -> Vec<(OsString, OsString)> {
        self.scrub_env(std::env::vars_os().filter(|(k, _)| self.passes_env(&k.to_string_lossy())))
    }

    /// Whether a variable of the agent's environment may be handed on.
    pub fn passes_env(&self, name: &str) -> bool {
        ENV_PASS
            .iter()
            .copied()
            .chain(self.env_pass.iter().map(String::as_str))
            .any(|p| glob_match(p, name))
    }
}

/// What a command gets of the agent's environment (names, `*` globs): the
/// shell's own, and what compilers, interpreters and package managers read
/// to find themselves and their caches. Nothing that carries a credential
/// by design (`npm_config_*`, `*_TOKEN`, cloud keys). Not `CARGO_TARGET_DIR`
/// either: a folder outside the workspace is one a command cannot write,
/// so its cargo builds in the workspace's own `target/` instead of failing.
pub const ENV_PASS: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "LC_*",
    "TERM",
    "COLORTERM",
    "TZ",
    "TMPDIR",
    "XDG_CONFIG_HOME",
    "XDG_CACHE_HOME",
    "XDG_DATA_HOME",
    "XDG_STATE_HOME",
    "CARGO_HOME",
    "RUSTUP_HOME",
    "RUSTUP_TOOLCHAIN",
    "RUSTFLAGS",
    "RUSTDOCFLAGS",
    "CARGO_BUILD_*",
    "CARGO_INCREMENTAL",
    "RUST_BACKTRACE",
    "RUST_LOG",
    "RUST_MIN_STACK",
    "CC",
    "CXX",
    "AR",
    "LD",
    "CFLAGS",
    "CXXFLAGS",
    "CPPFLAGS",
    "LDFLAGS",
    "MAKEFLAGS",
    "PKG_CONFIG_PATH",
    "CMAKE_PREFIX_PATH",
    "LIBRARY_PATH",
    "LD_LIBRARY_PATH",
    "CPATH",
    "LIBCLANG_PATH",
    "GOPATH",
    "GOROOT",
    "GOCACHE",
    "GOMODCACHE",
    "GOFLAGS",
    "GOTOOLCHAIN",
    "GO111MODULE",
    "GOPROXY",
    "GONOSUMDB",
    "GOPRIVATE",
    "JAVA_HOME",
    "GRADLE_USER_HOME",
    "MAVEN_OPTS",
    "NODE_PATH",
    "NODE_OPTIONS",
    "NVM_DIR",
    "NVM_BIN",
    "VOLTA_HOME",
    "DENO_DIR",
    "BUN_INSTALL",
    "PYENV_ROOT",
    "PYENV_VERSION",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "CONDA_DEFAULT_ENV",
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONDONTWRITEBYTECODE",
    "PIP_INDEX_URL",
    "PIP_EXTRA_INDEX_URL",
    "PIP_NO_INDEX",
    "PIP_FIND_LINKS",
    "UV_CACHE_DIR",
    "UV_PYTHON",
    "POETRY_HOME",
    "GEM_HOME",
    "GEM_PATH",
    "BUNDLE_PATH",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
    "CI",
];

/// `scheme://user:password@host` (the user may be empty).
fn has_url_credentials(value: &str) -> bool {
    let Some((_, rest)) = value.split_once("://") else {
        return false;
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    authority.rsplit_once('@').is_some_and(|(userinfo, _)| {
        userinfo
            .split_once(':')
            .is_some_and(|(_, pw)| !pw.is_empty())
    })
}

/// `*` (any run) and `?` (one char) glob over a whole string.
pub(crate) fn glob_match(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Mode;

    const SECRET: &str = "sk-live-4f9a8b7c6d5e";

    #[test]
    fn literal_reversed_hex_and_base64_forms_are_redacted() {
        let r = Redactor::new([SECRET]);
        let reversed: String = SECRET.chars().rev().collect();
        assert_eq!(r.redact(&format!("token={SECRET}")), "token=[redacted]");
        assert_eq!(r.redact(&format!("x {reversed} y")), "x [redacted] y");
        assert!(!r.redact(&hex_lower(SECRET.as_bytes())).contains("6c697665"));
        // `base64` of the secret inside a longer text, at every alignment.
        for prefix in ["", "a", "ab", "MY_TOKEN="] {
            let encoded = base64(format!("{prefix}{SECRET}\n").as_bytes(), STANDARD);
            let redacted = r.redact(&encoded);
            assert!(
                redacted.contains(REDACTED),
                "{prefix:?}: {encoded} -> {redacted}"
            );
        }
        let url_safe = base64(format!("~{SECRET}").as_bytes(), URL_SAFE);
        assert!(r.redact(&url_safe).contains(REDACTED));
    }

    #[test]
    fn commands_get_an_allowlist_of_the_environment_and_env_pass_adds_to_it() {
        let mut p = Policy::builtin(Mode::Yolo);
        // Issue 50: a token under a name no secret pattern knows.
        for (name, passes) in [
            ("PATH", true),
            ("LC_ALL", true),
            ("CARGO_HOME", true),
            ("CARGO_TARGET_DIR", false),
            ("DEPLOY_PHRASE", false),
            ("npm_config__authToken", false),
            ("MY_TOOL_MODE", false),
        ] {
            assert_eq!(p.passes_env(name), passes, "{name}");
        }
        p.apply_toml(
            "env_pass = [\"MY_TOOL_*\"]\n",
            std::path::Path::new("p.toml"),
        )
        .unwrap();
        assert!(p.passes_env("MY_TOOL_MODE") && !p.passes_env("DEPLOY_PHRASE"));
        let held =
            Policy::loosening("env_pass = [\"*\"]\n", std::path::Path::new("p.toml")).unwrap();
        assert_eq!(
            held,
            ["env_pass = \"*\""],
            "a repository's env_pass waits for trust"
        );
    }

    #[test]
    fn rot13_base32_and_spelled_out_forms_are_redacted_too() {
        let r = Redactor::new([SECRET]);
        for form in [
            rot13(SECRET),
            SECRET
                .chars()
                .map(String::from)
                .collect::<Vec<_>>()
                .join(" "),
        ] {
            assert_eq!(r.redact(&format!("x {form} y")), "x [redacted] y", "{form}");
        }
        // `base32` of the secret inside a longer text, at every alignment.
        for prefix in ["", "a", "ab", "abc", "abcd", "MY_TOKEN="] {
            let stream = format!("{prefix}{SECRET}\n");
            let encoded = base32_forms(stream.as_bytes())[0].clone();
            assert!(
                r.redact(&encoded).contains(REDACTED),
                "{prefix:?}: {encoded}"
            );
        }
        // "foobar" is MZXW6YTBOI; its last character holds padding bits.
        assert_eq!(base32_forms(b"foobar")[0], "MZXW6YTBO");
    }

    #[test]
    fn base64_matches_the_standard_encoding() {
        assert_eq!(base64(b"hello world", STANDARD), "aGVsbG8gd29ybGQ");
        assert_eq!(base64(b"\xfb\xff", URL_SAFE), "-_8");
    }

    #[test]
    fn short_values_and_ordinary_text_are_left_alone() {
        let r = Redactor::new(["true", "12345"]);
        assert!(r.is_empty());
        let r = Redactor::new([SECRET]);
        assert_eq!(r.redact("nothing secret here"), "nothing secret here");
    }

    #[test]
    fn secrets_are_scrubbed_from_the_environment() {
        let p = Policy::builtin(Mode::Confirm);
        let vars = [
            "PATH",
            "HOME",
            "FOO_TOKEN",
            "GITHUB_TOKEN",
            "AWS_REGION",
            "MY_API_KEY",
            "DB_PASSWORD",
            "SIGNING_KEY",
            "GH_HOST",
            "LANG",
            "CARGO_TARGET_DIR",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "DB_PASS",
            "MYSQL_PWD",
            "SLACK_WEBHOOK_URL",
            "PWD",
            "OLDPWD",
        ]
        .map(|k| (OsString::from(k), OsString::from("v")));
        let kept: Vec<String> = p
            .scrub_env(vars)
            .into_iter()
            .map(|(k, _)| k.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            kept,
            ["PATH", "HOME", "LANG", "CARGO_TARGET_DIR", "PWD", "OLDPWD"]
        );
        // A URL with a password is a secret whatever its name.
        let vars = [
            ("REDIS_URL", "redis://:hunter2@cache:6379/0"),
            ("DB", "postgres://app:s3cret@db/app"),
            ("HOMEPAGE", "https://example.com/a@b"),
            ("MIRROR", "https://user@mirror.example.com/"),
        ]
        .map(|(k, v)| (OsString::from(k), OsString::from(v)));
        let kept: Vec<String> = p
            .scrub_env(vars)
            .into_iter()
            .map(|(k, _)| k.to_string_lossy().into_owned())
            .collect();
        assert_eq!(kept, ["HOMEPAGE", "MIRROR"]);
    }

    #[test]
    fn glob_matching() {
        assert!(glob_match("*TOKEN*", "FOO_TOKEN"));
        assert!(glob_match("AWS_*", "AWS_X"));
        assert!(!glob_match("AWS_*", "XAWS_X"));
        assert!(glob_match("*_KEY", "A_KEY"));
        assert!(!glob_match("*_KEY", "A_KEYS"));
        assert!(glob_match("A?C", "ABC"));
    }
}
