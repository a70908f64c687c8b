//! `declaration_source()` documents exactly the native helpers, with their parameters in
//! order.

use starlark::docs::{DocItem, DocMember, DocModule};
use starlark::environment::GlobalsBuilder;

use crate::helpers::{attr_namespace, declaration_globals};

/// `name(p1, p2, *, n1)` for every native helper, from starlark's own signature docs.
fn native_signatures() -> Vec<String> {
    let mut builder = GlobalsBuilder::new();
    declaration_globals(&mut builder);
    builder.namespace("attr", attr_namespace);
    builder.namespace("actions", crate::plan::actions_namespace);
    let mut out = Vec::new();
    collect("", &builder.build().documentation(), &mut out);
    out.sort();
    out
}

fn collect(prefix: &str, module: &DocModule, out: &mut Vec<String>) {
    for (name, item) in &module.members {
        match item {
            DocItem::Module(inner) => collect(&format!("{prefix}{name}."), inner, out),
            DocItem::Member(DocMember::Function(function)) => {
                let params = &function.params;
                let mut names: Vec<String> =
                    params.pos_or_named.iter().map(|p| p.name.clone()).collect();
                if !params.named_only.is_empty() {
                    names.push("*".to_owned());
                    names.extend(params.named_only.iter().map(|p| p.name.clone()));
                }
                out.push(format!("{prefix}{name}({})", names.join(", ")));
            }
            _ => {}
        }
    }
}

/// The same shape, read from the `def` stubs of `declarations.star`.
fn documented_signatures() -> Vec<String> {
    let text = crate::declaration_source();
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("\ndef ") {
        rest = &rest[start + 5..];
        let Some(open) = rest.find('(') else { break };
        let name = &rest[..open];
        let close = rest.find(") ->").unwrap_or(rest.len());
        let mut params = Vec::new();
        let mut depth = 0usize;
        let mut current = String::new();
        for c in rest[open + 1..close].chars() {
            match c {
                '[' | '(' | '{' => depth += 1,
                ']' | ')' | '}' => depth = depth.saturating_sub(1),
                ',' if depth == 0 => {
                    params.push(std::mem::take(&mut current));
                    continue;
                }
                _ => {}
            }
            current.push(c);
        }
        params.push(current);
        let names: Vec<String> = params
            .iter()
            .map(|p| p.split([':', '=']).next().unwrap_or("").trim().to_owned())
            .filter(|p| !p.is_empty())
            .collect();
        out.push(format!("{name}({})", names.join(", ")));
    }
    out.sort();
    out
}

#[test]
fn declaration_source_matches_native_helpers() {
    let native = native_signatures();
    // 6 globals, 11 `attr.*` constructors and 6 `actions.*` primitives.
    assert_eq!(native.len(), 23, "{native:#?}");
    assert!(
        native.contains(
            &"attr.of(type, docs, *, required, default, configurable, values)".to_owned()
        ),
        "{native:#?}"
    );
    assert_eq!(documented_signatures(), native);
}
