//! JSON text exactly as Python's `json.dumps` writes it, which is what Hugging
//! Face's `tojson` filter calls (`ensure_ascii=False` by default). Templates
//! print tool schemas and arguments with it, so its spacing (`", "`, `": "`),
//! its float spelling (`1.0`, `1e-05`) and its escapes are part of the prompt
//! a model was trained on. minijinja's own `tojson` writes compact,
//! HTML-escaped JSON instead.

use std::borrow::Cow;

use minijinja::value::ValueKind;
use minijinja::Value;

/// The options of `json.dumps` that templates use.
#[derive(Debug, Clone, Default)]
pub(crate) struct DumpOptions {
    /// `indent=`: a newline and this text per level between items.
    pub indent: Option<String>,
    /// `separators=(item, key)`; Python's defaults depend on `indent`.
    pub separators: Option<(String, String)>,
    pub sort_keys: bool,
    pub ensure_ascii: bool,
}

/// `json.dumps(value, ...)` for a template value. Sequences, tuples and other
/// iterables (a `map(...)` result) become lists; undefined becomes `null`.
pub(crate) fn dumps(value: &Value, options: &DumpOptions) -> String {
    let (item_sep, key_sep) = match &options.separators {
        Some((item, key)) => (item.clone(), key.clone()),
        None if options.indent.is_some() => (",".to_string(), ": ".to_string()),
        None => (", ".to_string(), ": ".to_string()),
    };
    let writer = Writer {
        options,
        item_sep,
        key_sep,
    };
    let mut out = String::new();
    writer.value(value, 0, &mut out);
    out
}

/// `json.dumps(value, ensure_ascii=False)` of a JSON value.
pub(crate) fn dumps_json(value: &serde_json::Value) -> String {
    dumps(&to_value(value), &DumpOptions::default())
}

/// A JSON value as a template value, keeping the key order of objects.
pub(crate) fn to_value(json: &serde_json::Value) -> Value {
    use serde_json::Value as Json;
    match json {
        Json::Null => Value::from(()),
        Json::Bool(b) => Value::from(*b),
        Json::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => Value::from(i),
            (_, Some(u)) => Value::from(u),
            _ => Value::from(n.as_f64().unwrap_or(f64::NAN)),
        },
        Json::String(s) => Value::from(s.as_str()),
        Json::Array(items) => items.iter().map(to_value).collect(),
        Json::Object(map) => Value::from_pairs(
            map.iter()
                .map(|(k, v)| (Value::from(k.as_str()), to_value(v))),
        ),
    }
}

struct Writer<'a> {
    options: &'a DumpOptions,
    item_sep: String,
    key_sep: String,
}

impl Writer<'_> {
    fn value(&self, value: &Value, depth: usize, out: &mut String) {
        match value.kind() {
            ValueKind::Undefined | ValueKind::None => out.push_str("null"),
            ValueKind::Bool => out.push_str(if value.is_true() { "true" } else { "false" }),
            ValueKind::Number => number(value, out),
            ValueKind::String => self.string(value.as_str().unwrap_or_default(), out),
            ValueKind::Bytes => self.string(
                &String::from_utf8_lossy(value.as_bytes().unwrap_or_default()),
                out,
            ),
            ValueKind::Map => self.map(value, depth, out),
            ValueKind::Seq | ValueKind::Iterable => match value.try_iter() {
                Ok(items) => self.list(items.collect(), depth, out),
                Err(_) => self.string(&value.to_string(), out),
            },
            _ => self.string(&value.to_string(), out),
        }
    }

    fn list(&self, items: Vec<Value>, depth: usize, out: &mut String) {
        if items.is_empty() {
            out.push_str("[]");
            return;
        }
        out.push('[');
        for (i, item) in items.iter().enumerate() {
            self.separate(i, depth + 1, out);
            self.value(item, depth + 1, out);
        }
        self.close(depth, out);
        out.push(']');
    }

    fn map(&self, value: &Value, depth: usize, out: &mut String) {
        let mut pairs: Vec<(Value, Value)> = value
            .as_object()
            .and_then(|o| o.try_iter_pairs())
            .map(|pairs| pairs.collect())
            .unwrap_or_default();
        if pairs.is_empty() {
            out.push_str("{}");
            return;
        }
        if self.options.sort_keys {
            pairs.sort_by_key(|(k, _)| key_text(k));
        }
        out.push('{');
        for (i, (key, item)) in pairs.iter().enumerate() {
            self.separate(i, depth + 1, out);
            self.string(&key_text(key), out);
            out.push_str(&self.key_sep);
            self.value(item, depth + 1, out);
        }
        self.close(depth, out);
        out.push('}');
    }

    /// What goes before item `i` of a container at `depth`.
    fn separate(&self, i: usize, depth: usize, out: &mut String) {
        if i > 0 {
            out.push_str(&self.item_sep);
        }
        if let Some(indent) = &self.options.indent {
            out.push('\n');
            out.push_str(&indent.repeat(depth));
        }
    }

    fn close(&self, depth: usize, out: &mut String) {
        if let Some(indent) = &self.options.indent {
            out.push('\n');
            out.push_str(&indent.repeat(depth));
        }
    }

    fn string(&self, text: &str, out: &mut String) {
        out.push('"');
        let mut plain = 0; // start of the run of characters written as they are
        for (i, c) in text.char_indices() {
            let escape = match c {
                '"' => Cow::Borrowed("\\\""),
                '\\' => Cow::Borrowed("\\\\"),
                '\n' => Cow::Borrowed("\\n"),
                '\r' => Cow::Borrowed("\\r"),
                '\t' => Cow::Borrowed("\\t"),
                '\u{8}' => Cow::Borrowed("\\b"),
                '\u{c}' => Cow::Borrowed("\\f"),
                c if (c as u32) < 0x20 => Cow::Owned(format!("\\u{:04x}", c as u32)),
                c if self.options.ensure_ascii && !(' '..='~').contains(&c) => {
                    let mut units = [0u16; 2];
                    Cow::Owned(
                        c.encode_utf16(&mut units)
                            .iter()
                            .map(|unit| format!("\\u{unit:04x}"))
                            .collect(),
                    )
                }
                _ => continue,
            };
            out.push_str(&text[plain..i]);
            out.push_str(&escape);
            plain = i + c.len_utf8();
        }
        out.push_str(&text[plain..]);
        out.push('"');
    }
}

/// Python turns non-string keys into strings: `1` → `"1"`, `True` → `"true"`.
fn key_text(key: &Value) -> String {
    match key.kind() {
        ValueKind::String => key.as_str().unwrap_or_default().to_string(),
        ValueKind::Bool => (if key.is_true() { "true" } else { "false" }).to_string(),
        ValueKind::None | ValueKind::Undefined => "null".to_string(),
        _ => key.to_string(),
    }
}

fn number(value: &Value, out: &mut String) {
    if value.is_integer() {
        out.push_str(&value.to_string());
    } else {
        out.push_str(&float_repr(
            f64::try_from(value.clone()).unwrap_or(f64::NAN),
        ));
    }
}

/// Python's `repr(float)`: the shortest digits that round-trip, positional
/// for decimal exponents in -4..16, else scientific with a signed two-digit
/// (or longer) exponent.
pub(crate) fn float_repr(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    // Rust's `{:e}` gives the shortest round-trip digits: "-1.2345e-7".
    let sci = format!("{f:e}");
    // `{:e}` always has an integer exponent; were it not so, Rust's text.
    let Some((mantissa, Ok(exponent))) = sci
        .split_once('e')
        .map(|(mantissa, exponent)| (mantissa, exponent.parse::<i32>()))
    else {
        return sci;
    };
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    if (-4..16).contains(&exponent) {
        let point = exponent + 1; // digits before the decimal point
        let text = if point <= 0 {
            format!("0.{}{digits}", "0".repeat((-point) as usize))
        } else if point as usize >= digits.len() {
            format!("{digits}{}.0", "0".repeat(point as usize - digits.len()))
        } else {
            format!(
                "{}.{}",
                &digits[..point as usize],
                &digits[point as usize..]
            )
        };
        format!("{sign}{text}")
    } else {
        let mantissa = if digits.len() > 1 {
            format!("{}.{}", &digits[..1], &digits[1..])
        } else {
            digits
        };
        let exp_sign = if exponent < 0 { '-' } else { '+' };
        format!("{sign}{mantissa}e{exp_sign}{:02}", exponent.abs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn floats_are_spelled_as_python_does() {
        let cases = [
            (1.0, "1.0"),
            (0.1, "0.1"),
            (-2.5, "-2.5"),
            (1e16, "1e+16"),
            (1.5e-5, "1.5e-05"),
            (0.0001, "0.0001"),
            (123456789.125, "123456789.125"),
            (1e22, "1e+22"),
            (9999999999999998.0, "9999999999999998.0"),
            (0.0, "0.0"),
        ];
        for (f, want) in cases {
            assert_eq!(float_repr(f), want, "{f}");
        }
    }

    #[test]
    fn objects_use_python_separators_and_keep_key_order() {
        // serde_json's maps keep insertion order (`preserve_order`, which
        // the workspace build has anyway), as Python dicts do, and so does
        // the template value made from one.
        let v = json!({"b": [1, 2.0, true, null], "a": {"x": "é\"\n\u{1}"}, "e": [], "f": {}});
        let want = r#"{"b": [1, 2.0, true, null], "a": {"x": "é\"\n\u0001"}, "e": [], "f": {}}"#;
        assert_eq!(dumps_json(&v), want);
        assert_eq!(dumps(&to_value(&v), &DumpOptions::default()), want);
        // A map a template builds keeps its own order (minijinja's
        // `preserve_order`), as a Python dict does.
        let built = Value::from_pairs([
            ("type", Value::from("function")),
            ("name", Value::from("f")),
        ]);
        assert_eq!(
            dumps(&built, &DumpOptions::default()),
            r#"{"type": "function", "name": "f"}"#
        );
    }

    #[test]
    fn indent_sort_keys_and_ensure_ascii() {
        let v = to_value(&json!({"b": 1, "a": ["é", {}]}));
        let options = DumpOptions {
            indent: Some("  ".into()),
            sort_keys: true,
            ensure_ascii: true,
            ..DumpOptions::default()
        };
        assert_eq!(
            dumps(&v, &options),
            "{\n  \"a\": [\n    \"\\u00e9\",\n    {}\n  ],\n  \"b\": 1\n}"
        );
    }
}
