//! Reading tool arguments: lenient where harmless (`"12"` for 12, `"true"`
//! for true, a number for a string), strict where it matters, and every
//! error says exactly what to send instead.

use serde_json::{Map, Value};

use super::{ErrorClass, ToolOutput};

pub(crate) struct Args<'a> {
    obj: Option<&'a Map<String, Value>>,
    tool: &'a str,
    /// An example call, e.g. `{"path": "src/main.rs"}`.
    example: &'a str,
}

pub(crate) type ArgResult<T> = Result<T, ToolOutput>;

impl<'a> Args<'a> {
    /// `null` counts as `{}`; anything but an object is an error.
    pub(crate) fn new(value: &'a Value, tool: &'a str, example: &'a str) -> ArgResult<Self> {
        let obj = match value {
            Value::Object(m) => Some(m),
            Value::Null => None,
            other => {
                return Err(ToolOutput::error(
                    ErrorClass::InvalidArgs,
                    format!(
                        "{tool} takes a JSON object of arguments, not {}; send e.g. {example}",
                        kind(other)
                    ),
                ))
            }
        };
        Ok(Self { obj, tool, example })
    }

    fn get(&self, key: &str) -> Option<&'a Value> {
        self.obj.and_then(|m| m.get(key)).filter(|v| !v.is_null())
    }

    pub(crate) fn error(&self, msg: impl std::fmt::Display) -> ToolOutput {
        ToolOutput::error(
            ErrorClass::InvalidArgs,
            format!("{}: {msg}. Send e.g. {}", self.tool, self.example),
        )
    }

    fn missing(&self, key: &str, ty: &str) -> ToolOutput {
        let got: Vec<&str> = self
            .obj
            .map(|m| m.keys().map(String::as_str).collect())
            .unwrap_or_default();
        let got = if got.is_empty() {
            String::new()
        } else {
            format!(" (got: {})", got.join(", "))
        };
        self.error(format_args!(
            "missing required argument `{key}` ({ty}){got}"
        ))
    }

    pub(crate) fn req_str(&self, key: &str) -> ArgResult<String> {
        self.opt_str(key)?
            .ok_or_else(|| self.missing(key, "string"))
    }

    /// A string; numbers and booleans are taken as their text.
    pub(crate) fn opt_str(&self, key: &str) -> ArgResult<Option<String>> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(v @ (Value::Number(_) | Value::Bool(_))) => Ok(Some(v.to_string())),
            Some(v) => Err(self.error(format_args!("`{key}` must be a string, not {}", kind(v)))),
        }
    }

    /// An integer; `"12"` and `12.0` are accepted.
    pub(crate) fn opt_int(&self, key: &str) -> ArgResult<Option<i64>> {
        let bad = |v: &Value| {
            self.error(format_args!(
                "`{key}` must be an integer like 12, not {}",
                short(v)
            ))
        };
        match self.get(key) {
            None => Ok(None),
            Some(v @ Value::Number(n)) => match n.as_i64() {
                Some(i) => Ok(Some(i)),
                None => match n.as_f64() {
                    Some(f) if f.fract() == 0.0 && f.abs() < 1e15 => Ok(Some(f as i64)),
                    _ => Err(bad(v)),
                },
            },
            Some(v @ Value::String(s)) => {
                if s.trim().is_empty() {
                    return Ok(None);
                }
                s.trim().parse::<i64>().map(Some).map_err(|_| bad(v))
            }
            Some(v) => Err(bad(v)),
        }
    }

    /// A boolean; `"true"`/`"false"`/`"yes"`/`"no"`, 1 and 0 are accepted.
    pub(crate) fn opt_bool(&self, key: &str) -> ArgResult<Option<bool>> {
        let bad = |v: &Value| {
            self.error(format_args!(
                "`{key}` must be true or false, not {}",
                short(v)
            ))
        };
        match self.get(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(v @ Value::String(s)) => match s.trim().to_ascii_lowercase().as_str() {
                "true" | "yes" | "1" => Ok(Some(true)),
                "false" | "no" | "0" => Ok(Some(false)),
                "" => Ok(None),
                _ => Err(bad(v)),
            },
            Some(v @ Value::Number(n)) => match n.as_i64() {
                Some(1) => Ok(Some(true)),
                Some(0) => Ok(Some(false)),
                _ => Err(bad(v)),
            },
            Some(v) => Err(bad(v)),
        }
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 40 {
        format!("{}…", &s[..s.floor_char_boundary(40)])
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lenient_types_and_helpful_errors() {
        let v = json!({"a": "12", "b": 3.0, "c": "yes", "d": 5, "e": [1], "n": null});
        let args = Args::new(&v, "t", "{\"a\": 1}").unwrap();
        assert_eq!(args.opt_int("a").unwrap(), Some(12));
        assert_eq!(args.opt_int("b").unwrap(), Some(3));
        assert_eq!(args.opt_bool("c").unwrap(), Some(true));
        assert_eq!(args.opt_str("d").unwrap().as_deref(), Some("5"));
        assert_eq!(args.opt_str("n").unwrap(), None);
        let e = args.opt_str("e").unwrap_err();
        assert_eq!(e.error, Some(ErrorClass::InvalidArgs));
        assert!(e.content.contains("must be a string"), "{}", e.content);
        let e = args.req_str("path").unwrap_err();
        assert!(e.content.contains("missing required argument `path`"));
        assert!(e.content.contains("got: a, b"), "{}", e.content);
        assert!(Args::new(&json!("x"), "t", "{}").is_err());
        assert!(Args::new(&Value::Null, "t", "{}").is_ok());
    }
}
