//! A JSON Schema checker for the keywords Suricata's EVE schema (`suricata-eve/schema.json`) uses: `type` (one or a
//! list), `properties`, `additionalProperties` (a boolean or a schema), `required`, `items`, `minItems`, `$ref`
//! (`#/$defs/...`), `const`, `enum`, `oneOf`, `minimum`, `minProperties` and `pattern`. Annotations
//! (`description`, `title`, `$comment`, Suricata's own `suricata`/`keywords`/`optional`) are ignored. Any other
//! keyword is refused when the schema is loaded, so a schema that grows a keyword this checker does not know fails
//! the test instead of being half-checked.

use std::collections::HashMap;

use regex_automata::meta::Regex;
use serde_json::Value;

/// Keywords that say nothing about validity.
const ANNOTATIONS: &[&str] = &[
    "description",
    "desription",
    "title",
    "$comment",
    "suricata",
    "keywords",
    "optional",
    "$defs",
];

/// Keywords this checker enforces.
const CHECKED: &[&str] = &[
    "type",
    "properties",
    "additionalProperties",
    "required",
    "items",
    "minItems",
    "$ref",
    "const",
    "enum",
    "oneOf",
    "minimum",
    "minProperties",
    "pattern",
];

/// A loaded schema.
pub struct Schema {
    root: Value,
    patterns: HashMap<String, Regex>,
}

impl Schema {
    /// Reads a schema file; refuses keywords the checker does not enforce and patterns it cannot compile.
    pub fn load(path: &std::path::Path) -> Result<Schema, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let root: Value =
            serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut patterns = HashMap::new();
        survey(&root, "#", &mut patterns)?;
        Ok(Schema { root, patterns })
    }

    /// Every way `v` breaks the schema, one line each (`/path: reason`); empty when it validates.
    pub fn errors(&self, v: &Value) -> Vec<String> {
        let mut out = Vec::new();
        self.check(&self.root, v, "", &mut out);
        out
    }

    fn resolve<'a>(&'a self, r: &str) -> Option<&'a Value> {
        let path = r.strip_prefix("#/")?;
        let mut node = &self.root;
        for part in path.split('/') {
            node = node.get(part)?;
        }
        Some(node)
    }

    fn check(&self, s: &Value, v: &Value, at: &str, out: &mut Vec<String>) {
        let Some(s) = s.as_object() else {
            if s == &Value::Bool(false) {
                out.push(format!("{at}: not allowed"));
            }
            return;
        };
        if let Some(r) = s.get("$ref").and_then(Value::as_str) {
            match self.resolve(r) {
                Some(target) => self.check(target, v, at, out),
                None => out.push(format!("{at}: unresolved $ref {r}")),
            }
        }
        if let Some(t) = s.get("type") {
            let ok = match t {
                Value::String(name) => has_type(v, name),
                Value::Array(names) => names
                    .iter()
                    .any(|n| n.as_str().is_some_and(|n| has_type(v, n))),
                _ => false,
            };
            if !ok {
                out.push(format!("{at}: {} is not of type {t}", brief(v)));
                return;
            }
        }
        if let Some(c) = s.get("const")
            && c != v
        {
            out.push(format!("{at}: {} is not {c}", brief(v)));
        }
        if let Some(Value::Array(allowed)) = s.get("enum")
            && !allowed.contains(v)
        {
            out.push(format!("{at}: {} is not one of {}", brief(v), s["enum"]));
        }
        if let Some(Value::Array(alts)) = s.get("oneOf") {
            let passing = alts
                .iter()
                .filter(|alt| {
                    let mut e = Vec::new();
                    self.check(alt, v, at, &mut e);
                    e.is_empty()
                })
                .count();
            if passing != 1 {
                out.push(format!(
                    "{at}: {} matches {passing} of oneOf's {} alternatives",
                    brief(v),
                    alts.len()
                ));
            }
        }
        if let (Some(min), Some(x)) = (s.get("minimum").and_then(Value::as_f64), v.as_f64())
            && x < min
        {
            out.push(format!("{at}: {x} is below the minimum {min}"));
        }
        if let (Some(p), Some(text)) = (s.get("pattern").and_then(Value::as_str), v.as_str())
            && let Some(re) = self.patterns.get(p)
            && !re.is_match(text)
        {
            out.push(format!("{at}: {text:?} does not match {p}"));
        }
        match v {
            Value::Object(map) => {
                if let Some(min) = s.get("minProperties").and_then(Value::as_u64)
                    && (map.len() as u64) < min
                {
                    out.push(format!("{at}: fewer than {min} properties"));
                }
                if let Some(Value::Array(req)) = s.get("required") {
                    for r in req.iter().filter_map(Value::as_str) {
                        if !map.contains_key(r) {
                            out.push(format!("{at}: required property {r:?} missing"));
                        }
                    }
                }
                let props = s.get("properties").and_then(Value::as_object);
                for (k, val) in map {
                    let here = format!("{at}/{k}");
                    match props.and_then(|p| p.get(k)) {
                        Some(ps) => self.check(ps, val, &here, out),
                        None => match s.get("additionalProperties") {
                            Some(Value::Bool(false)) => {
                                out.push(format!("{here}: property not in the schema"))
                            }
                            Some(extra @ Value::Object(_)) => self.check(extra, val, &here, out),
                            _ => {}
                        },
                    }
                }
            }
            Value::Array(items) => {
                if let Some(min) = s.get("minItems").and_then(Value::as_u64)
                    && (items.len() as u64) < min
                {
                    out.push(format!("{at}: fewer than {min} items"));
                }
                if let Some(is) = s.get("items") {
                    for (i, item) in items.iter().enumerate() {
                        self.check(is, item, &format!("{at}/{i}"), out);
                    }
                }
            }
            _ => {}
        }
    }
}

fn has_type(v: &Value, name: &str) -> bool {
    match name {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "boolean" => v.is_boolean(),
        "null" => v.is_null(),
        "number" => v.is_number(),
        "integer" => v.is_i64() || v.is_u64(),
        _ => false,
    }
}

/// A value shortened for an error line.
fn brief(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 60 {
        format!("{}...", s.chars().take(60).collect::<String>())
    } else {
        s
    }
}

/// Walks every subschema: refuses unknown keywords, compiles the patterns.
fn survey(s: &Value, at: &str, patterns: &mut HashMap<String, Regex>) -> Result<(), String> {
    let Some(obj) = s.as_object() else {
        return match s {
            Value::Bool(_) => Ok(()),
            _ => Err(format!("{at}: a schema must be an object or a boolean")),
        };
    };
    for (k, v) in obj {
        let here = format!("{at}/{k}");
        if ANNOTATIONS.contains(&k.as_str()) {
            if k == "$defs"
                && let Some(defs) = v.as_object()
            {
                for (name, d) in defs {
                    survey(d, &format!("{here}/{name}"), patterns)?;
                }
            }
            continue;
        }
        if !CHECKED.contains(&k.as_str()) {
            return Err(format!(
                "{here}: keyword {k:?} is not checked by this checker"
            ));
        }
        match k.as_str() {
            "properties" => {
                for (name, p) in v.as_object().into_iter().flatten() {
                    survey(p, &format!("{here}/{name}"), patterns)?;
                }
            }
            "items" | "additionalProperties" => survey(v, &here, patterns)?,
            "oneOf" => {
                for (i, alt) in v.as_array().into_iter().flatten().enumerate() {
                    survey(alt, &format!("{here}/{i}"), patterns)?;
                }
            }
            "pattern" => {
                let p = v.as_str().ok_or_else(|| format!("{here}: not a string"))?;
                let re = Regex::new(p).map_err(|e| format!("{here}: {e}"))?;
                patterns.insert(p.to_string(), re);
            }
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema(v: Value) -> Schema {
        let mut patterns = HashMap::new();
        survey(&v, "#", &mut patterns).unwrap();
        Schema { root: v, patterns }
    }

    #[test]
    fn refuses_what_the_schema_refuses() {
        let s = schema(serde_json::json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["a"],
            "properties": {
                "a": {"type": "integer", "minimum": 1},
                "b": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/s"}},
                "t": {"type": "string", "pattern": "^\\d{4}$"},
                "e": {"enum": ["x", "y"]}
            },
            "$defs": {"s": {"type": "string"}}
        }));
        assert!(
            s.errors(&serde_json::json!({"a": 1, "b": ["z"], "t": "2024", "e": "x"}))
                .is_empty()
        );
        let bad = s.errors(&serde_json::json!({"a": 0, "b": [], "t": "20x4", "e": "q", "c": 1}));
        assert_eq!(bad.len(), 5, "{bad:?}");
        assert_eq!(s.errors(&serde_json::json!({"b": [3]})).len(), 2);
    }

    #[test]
    fn refuses_a_keyword_it_does_not_check() {
        let v = serde_json::json!({"type": "object", "patternProperties": {}});
        assert!(survey(&v, "#", &mut HashMap::new()).is_err());
    }
}
