//! The prelude's kind catalog computed ahead of time: the [`KindSchema`]s that evaluating
//! `prelude/*.star` yields, serialised by `cargo run -p xtask -- codegen` into the
//! checked-in `src/prelude_catalog.json` and read back here without evaluating Starlark.
//!
//! The file names the digest of the prelude files it was generated from
//! ([`PRELUDE_DIGEST`], computed by `build.rs`); when that differs from the embedded
//! prelude's, or the file does not decode, [`load`] answers `None` and the caller
//! evaluates the prelude instead. A test keeps the file equal to the evaluation, so a
//! change to the declaration helpers' Rust code is caught too.
//!
//! Example files whose contents are an embedded prelude file are stored as a reference to
//! it (`"embedded"`), so the catalog does not repeat the starter trees.

use once_model::{
    AttrSpec, AttrType, AttrValue, Capability, DependencyRole, Example, ExampleFile, Float,
    KindOrigin, KindSchema, SourceReference, ToolSpec,
};
use serde_json::{Value, json};

include!(concat!(env!("OUT_DIR"), "/prelude_digest.rs"));

/// The checked-in catalog.
const CATALOG: &str = include_str!("prelude_catalog.json");

/// Where the catalog lives in the repository, for codegen.
pub const CATALOG_PATH: &str = "crates/once_starlark/src/prelude_catalog.json";

/// The checked-in catalog's kinds, when it was generated from the embedded prelude and
/// decodes; `None` otherwise.
pub(crate) fn load() -> Option<Vec<KindSchema>> {
    decode(CATALOG, PRELUDE_DIGEST, crate::prelude::embedded_files())
}

/// The catalog file for `kinds` (the evaluated prelude), as codegen writes it.
pub fn encode_prelude_catalog(kinds: &[KindSchema]) -> String {
    encode(kinds, PRELUDE_DIGEST, crate::prelude::embedded_files())
}

fn encode(kinds: &[KindSchema], digest: &str, embedded: &[(&str, &[u8])]) -> String {
    let kinds: Vec<Value> = kinds.iter().map(|k| kind_json(k, embedded)).collect();
    let document = json!({
        "@generated": format!("by {}; do not edit", "cargo run -p xtask -- codegen"),
        "prelude_digest": digest,
        "kinds": kinds,
    });
    let mut text = serde_json::to_string_pretty(&document).unwrap_or_default();
    text.push('\n');
    text
}

fn decode(text: &str, digest: &str, embedded: &[(&str, &[u8])]) -> Option<Vec<KindSchema>> {
    let document: Value = serde_json::from_str(text).ok()?;
    if document.get("prelude_digest")?.as_str()? != digest {
        return None;
    }
    document
        .get("kinds")?
        .as_array()?
        .iter()
        .map(|kind| kind_from(kind, embedded))
        .collect()
}

fn kind_json(kind: &KindSchema, embedded: &[(&str, &[u8])]) -> Value {
    let origin = match &kind.origin {
        KindOrigin::Prelude(path) => json!({ "prelude": path }),
        KindOrigin::Module(path) => json!({ "module": path }),
    };
    json!({
        "name": kind.name,
        "docs": kind.docs,
        "attrs": kind.attrs.iter().map(attr_json).collect::<Vec<_>>(),
        "dependencies": kind.dependencies.iter().map(|d| json!({
            "name": d.name,
            "docs": d.docs,
            "providers": d.providers,
            "min": d.min,
            "max": d.max,
        })).collect::<Vec<_>>(),
        "providers": kind.providers,
        "capabilities": kind.capabilities.iter().map(|c| json!({
            "name": c.name,
            "docs": c.docs,
            "output_groups": c.output_groups,
            "requires_outputs": c.requires_outputs,
            "runner": c.runner,
        })).collect::<Vec<_>>(),
        "tools": kind.tools.iter().map(|t| json!({ "name": t.name, "docs": t.docs })).collect::<Vec<_>>(),
        "source_references": kind.source_references.iter().map(|r| json!({
            "system": r.system,
            "symbol": r.symbol,
            "url": r.url,
            "use_when": r.use_when,
            "content_digest": r.content_digest,
        })).collect::<Vec<_>>(),
        "examples": kind.examples.iter().map(|e| json!({
            "slug": e.slug,
            "name": e.name,
            "use_when": e.use_when,
            "files": e.files.iter().map(|f| file_json(f, embedded)).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "origin": origin,
    })
}

fn attr_json(attr: &AttrSpec) -> Value {
    json!({
        "name": attr.name,
        "type": attr.ty.to_string(),
        "required": attr.required,
        "default": attr.default.as_ref().map(value_json),
        "docs": attr.docs,
        "configurable": attr.configurable,
        "allowed_values": attr.allowed_values,
        "range": attr.range.map(|(minimum, maximum)| [minimum, maximum]),
    })
}

/// One attribute value, tagged by its type so that decoding is exact (floats by bits).
fn value_json(value: &AttrValue) -> Value {
    match value {
        AttrValue::String(s) => json!({ "string": s }),
        AttrValue::Int(i) => json!({ "int": i }),
        AttrValue::Float(f) => json!({ "float_bits": f.0.to_bits() }),
        AttrValue::Bool(b) => json!({ "bool": b }),
        AttrValue::Datetime(d) => json!({ "datetime": d }),
        AttrValue::List(items) => {
            json!({ "list": items.iter().map(value_json).collect::<Vec<_>>() })
        }
        AttrValue::Dict(entries) => json!({
            "dict": entries.iter().map(|(k, v)| json!([k, value_json(v)])).collect::<Vec<_>>()
        }),
    }
}

/// An example file: a reference to the embedded prelude file with the same bytes under
/// `examples/`, else its contents as text, else as a list of bytes.
fn file_json(file: &ExampleFile, embedded: &[(&str, &[u8])]) -> Value {
    let source = embedded.iter().find(|(path, contents)| {
        path.starts_with("examples/")
            && path.ends_with(&format!("/{}", file.path))
            && *contents == file.contents.as_slice()
    });
    if let Some((path, _)) = source {
        return json!({ "path": file.path, "embedded": path });
    }
    match std::str::from_utf8(&file.contents) {
        Ok(text) => json!({ "path": file.path, "text": text }),
        Err(_) => json!({ "path": file.path, "bytes": file.contents }),
    }
}

fn string(value: &Value, key: &str) -> Option<String> {
    Some(value.get(key)?.as_str()?.to_owned())
}

fn strings(value: &Value, key: &str) -> Option<Vec<String>> {
    value
        .get(key)?
        .as_array()?
        .iter()
        .map(|item| Some(item.as_str()?.to_owned()))
        .collect()
}

fn boolean(value: &Value, key: &str) -> Option<bool> {
    value.get(key)?.as_bool()
}

fn list<T>(value: &Value, key: &str, item: impl Fn(&Value) -> Option<T>) -> Option<Vec<T>> {
    value.get(key)?.as_array()?.iter().map(item).collect()
}

fn kind_from(value: &Value, embedded: &[(&str, &[u8])]) -> Option<KindSchema> {
    let origin = value.get("origin")?;
    let origin = if let Some(path) = origin.get("prelude") {
        KindOrigin::Prelude(path.as_str()?.to_owned())
    } else {
        KindOrigin::Module(origin.get("module")?.as_str()?.to_owned())
    };
    Some(KindSchema {
        name: string(value, "name")?,
        docs: string(value, "docs")?,
        attrs: list(value, "attrs", attr_from)?,
        dependencies: list(value, "dependencies", |d| {
            Some(DependencyRole {
                name: string(d, "name")?,
                docs: string(d, "docs")?,
                providers: strings(d, "providers")?,
                min: u32::try_from(d.get("min")?.as_u64()?).ok()?,
                max: match d.get("max")? {
                    Value::Null => None,
                    max => Some(u32::try_from(max.as_u64()?).ok()?),
                },
            })
        })?,
        providers: strings(value, "providers")?,
        capabilities: list(value, "capabilities", |c| {
            Some(Capability {
                name: string(c, "name")?,
                docs: string(c, "docs")?,
                output_groups: strings(c, "output_groups")?,
                requires_outputs: strings(c, "requires_outputs")?,
                runner: match c.get("runner")? {
                    Value::Null => None,
                    runner => Some(runner.as_str()?.to_owned()),
                },
            })
        })?,
        tools: list(value, "tools", |t| {
            Some(ToolSpec {
                name: string(t, "name")?,
                docs: string(t, "docs")?,
            })
        })?,
        source_references: list(value, "source_references", |r| {
            Some(SourceReference {
                system: string(r, "system")?,
                symbol: string(r, "symbol")?,
                url: string(r, "url")?,
                use_when: string(r, "use_when")?,
                content_digest: string(r, "content_digest")?,
            })
        })?,
        examples: list(value, "examples", |e| {
            Some(Example {
                slug: string(e, "slug")?,
                name: string(e, "name")?,
                use_when: string(e, "use_when")?,
                files: list(e, "files", |f| file_from(f, embedded))?,
            })
        })?,
        origin,
    })
}

fn attr_from(value: &Value) -> Option<AttrSpec> {
    Some(AttrSpec {
        name: string(value, "name")?,
        ty: AttrType::parse(value.get("type")?.as_str()?)?,
        required: boolean(value, "required")?,
        default: match value.get("default")? {
            Value::Null => None,
            default => Some(value_from(default)?),
        },
        docs: string(value, "docs")?,
        configurable: boolean(value, "configurable")?,
        allowed_values: strings(value, "allowed_values")?,
        range: match value.get("range")? {
            Value::Null => None,
            Value::Array(bounds) => match bounds.as_slice() {
                [minimum, maximum] => Some((minimum.as_i64()?, maximum.as_i64()?)),
                _ => return None,
            },
            _ => return None,
        },
    })
}

fn value_from(value: &Value) -> Option<AttrValue> {
    let (tag, inner) = value.as_object()?.iter().next()?;
    Some(match tag.as_str() {
        "string" => AttrValue::String(inner.as_str()?.to_owned()),
        "int" => AttrValue::Int(inner.as_i64()?),
        "float_bits" => AttrValue::Float(Float(f64::from_bits(inner.as_u64()?))),
        "bool" => AttrValue::Bool(inner.as_bool()?),
        "datetime" => AttrValue::Datetime(inner.as_str()?.to_owned()),
        "list" => AttrValue::List(
            inner
                .as_array()?
                .iter()
                .map(value_from)
                .collect::<Option<_>>()?,
        ),
        "dict" => AttrValue::Dict(
            inner
                .as_array()?
                .iter()
                .map(|entry| {
                    let [key, item] = entry.as_array()?.as_slice() else {
                        return None;
                    };
                    Some((key.as_str()?.to_owned(), value_from(item)?))
                })
                .collect::<Option<_>>()?,
        ),
        _ => return None,
    })
}

fn file_from(value: &Value, embedded: &[(&str, &[u8])]) -> Option<ExampleFile> {
    let path = string(value, "path")?;
    let contents = if let Some(source) = value.get("embedded") {
        let source = source.as_str()?;
        let index = embedded.binary_search_by(|(p, _)| (*p).cmp(source)).ok()?;
        embedded[index].1.to_vec()
    } else if let Some(text) = value.get("text") {
        text.as_str()?.as_bytes().to_vec()
    } else {
        value
            .get("bytes")?
            .as_array()?
            .iter()
            .map(|b| u8::try_from(b.as_u64()?).ok())
            .collect::<Option<_>>()?
    };
    Some(ExampleFile { path, contents })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_checked_in_catalog_equals_evaluating_the_prelude() {
        let evaluated = crate::prelude::evaluate_prelude().unwrap();
        let loaded = load().unwrap_or_else(|| {
            panic!(
                "`{CATALOG_PATH}` is stale or unreadable; regenerate it with \
                 `cargo run -p xtask -- codegen`"
            )
        });
        assert_eq!(loaded, evaluated);
        assert_eq!(encode_prelude_catalog(&evaluated), CATALOG);
    }

    #[test]
    fn a_catalog_of_another_prelude_or_garbage_is_not_loaded() {
        let embedded = crate::prelude::embedded_files();
        assert!(decode(CATALOG, "another digest", embedded).is_none());
        assert!(decode("{", PRELUDE_DIGEST, embedded).is_none());
        let mut document: Value = serde_json::from_str(CATALOG).unwrap();
        document["kinds"][0]["attrs"] = json!("not a list");
        assert!(decode(&document.to_string(), PRELUDE_DIGEST, embedded).is_none());
    }

    #[test]
    fn every_value_and_file_shape_round_trips() {
        let value = AttrValue::Dict(vec![
            ("s".into(), AttrValue::String("x".into())),
            ("i".into(), AttrValue::Int(-3)),
            ("f".into(), AttrValue::Float(Float(0.1))),
            ("b".into(), AttrValue::Bool(true)),
            ("d".into(), AttrValue::Datetime("1979-05-27".into())),
            ("l".into(), AttrValue::List(vec![AttrValue::Int(1)])),
        ]);
        assert_eq!(value_from(&value_json(&value)), Some(value));
        let embedded: &[(&str, &[u8])] = &[("examples/a/b.txt", b"embedded")];
        for (path, contents) in [
            ("b.txt", b"embedded".to_vec()),
            ("t.txt", b"text".to_vec()),
            ("x.bin", vec![0xff, 0]),
        ] {
            let file = ExampleFile {
                path: path.into(),
                contents,
            };
            assert_eq!(file_from(&file_json(&file, embedded), embedded), Some(file));
        }
        assert_eq!(
            file_json(
                &ExampleFile {
                    path: "b.txt".into(),
                    contents: b"embedded".to_vec()
                },
                embedded
            )["embedded"],
            json!("examples/a/b.txt")
        );
    }
}
