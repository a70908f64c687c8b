//! The declaration helpers as data, for the module-authoring contract and `docs/modules.md`.
//!
//! Signatures and docs come from `declarations.star`, the reference stubs; the names come
//! from the globals actually registered. A test keeps the two equal, so the contract
//! cannot drift from what a module can call.

use starlark::environment::GlobalsBuilder;

use crate::helpers::{attr_namespace, declaration_globals};

/// One declaration helper.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct HelperDoc {
    /// `target_kind`, `attr.string`, …
    pub name: String,
    /// The full Starlark signature, `name(param: type = default, …) -> type`.
    pub signature: String,
    /// What it declares and the rules it enforces.
    pub docs: String,
}

/// Every declaration helper, in the order `declarations.star` documents them.
pub fn helpers() -> Vec<HelperDoc> {
    let source = crate::declaration_source();
    let mut out = Vec::new();
    let mut lines = source.lines().peekable();
    while let Some(line) = lines.next() {
        let Some(rest) = line.strip_prefix("def ") else {
            continue;
        };
        let mut signature = rest.trim_end().to_owned();
        // Multi-line parameter lists end at the line closing with `:`.
        while !signature.ends_with(':') {
            let Some(next) = lines.next() else { break };
            let next = next.trim();
            if !signature.ends_with('(') && !next.starts_with(')') {
                signature.push(' ');
            }
            signature.push_str(next);
        }
        let signature = signature.trim_end_matches(':').replace(",)", ")");
        let name = signature
            .split('(')
            .next()
            .unwrap_or_default()
            .trim()
            .to_owned();
        let mut docs = String::new();
        if let Some(first) = lines.peek().map(|l| l.trim().to_owned())
            && let Some(body) = first.strip_prefix("\"\"\"")
        {
            lines.next();
            let mut body = body.to_owned();
            while !body.ends_with("\"\"\"") {
                let Some(next) = lines.next() else { break };
                body.push('\n');
                body.push_str(next.trim());
            }
            docs = body.trim_end_matches("\"\"\"").trim().to_owned();
        }
        out.push(HelperDoc {
            name,
            signature,
            docs,
        });
    }
    out
}

/// The names of the helpers registered as globals (`attr.*` expanded), sorted.
pub fn registered_helper_names() -> Vec<String> {
    let mut builder = GlobalsBuilder::new();
    declaration_globals(&mut builder);
    let declarations = builder.build();
    let mut names: Vec<String> = declarations
        .names()
        .map(|n| n.as_str().to_owned())
        .collect();
    let mut attr = GlobalsBuilder::new();
    attr_namespace(&mut attr);
    names.extend(attr.build().names().map(|n| format!("attr.{}", n.as_str())));
    let mut actions = GlobalsBuilder::new();
    crate::plan::actions_namespace(&mut actions);
    names.extend(
        actions
            .build()
            .names()
            .map(|n| format!("actions.{}", n.as_str())),
    );
    names.sort();
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documented_helpers_are_exactly_the_registered_globals() {
        let mut documented: Vec<String> = helpers().into_iter().map(|h| h.name).collect();
        documented.sort();
        assert_eq!(documented, registered_helper_names());
        for helper in helpers() {
            assert!(!helper.docs.is_empty(), "{} has no docs", helper.name);
            assert!(
                helper.signature.starts_with(&format!("{}(", helper.name)),
                "{}",
                helper.signature
            );
        }
    }
}
